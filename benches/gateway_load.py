"""Bounded load test of the MCP gateway on loopback.

Starts two upstream servers (``tests/mcp_servers``: files over stdio, weather over streamable
HTTP), runs ``toolsift serve`` in its own process, then opens ``--sessions`` concurrent client
sessions (official SDK, streamable HTTP, each with its caller token), each doing ``--rounds`` of
``tool_search`` followed by ``call_tool``. Prints p50/p99 latency per operation and throughput.
Stops by itself: fixed work, and a global deadline.

    python benches/gateway_load.py [--sessions 32] [--rounds 25] [--modes auto legacy]
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio
import httpx2
import numpy as np
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent
SERVERS = ROOT / "tests" / "mcp_servers"
TOKEN = "load-test-token-1"
QUERIES = [
    ("read the contents of a text file", "files__read_file", {"path": "notes.txt"}),
    ("weather forecast for a city", "weather__get_forecast", {"city": "Oslo"}),
    ("air quality and pollen today", "weather__get_air_quality", {"city": "Lima"}),
    ("write some text into a file", "files__write_file", {"path": "a.txt", "text": "hi"}),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}")


def _config(folder: Path, weather_port: int, gateway_port: int) -> Path:
    path = folder / "gateway.toml"
    path.write_text(
        f"""
[gateway]
port = {gateway_port}

[servers.files]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVERS / "files_server.py"))}]

[servers.weather]
url = "http://127.0.0.1:{weather_port}/mcp"

[callers.load]
token = "{TOKEN}"
permissions = ["files", "weather"]
"""
    )
    return path


async def _client(url: str, sessions: int, rounds: int, deadline: float, mode: str) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"tool_search": [], "call_tool": []}
    errors: list[str] = []

    async def one(i: int) -> None:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
        async with Client(streamable_http_client(url, http_client=http), cache=None, mode=mode) as client:
            for r in range(rounds):
                query, tool, arguments = QUERIES[(i + r) % len(QUERIES)]
                t0 = time.perf_counter()
                found = await client.call_tool("tool_search", {"query": query, "limit": 3})
                t1 = time.perf_counter()
                result = await client.call_tool("call_tool", {"name": tool, "arguments": arguments})
                t2 = time.perf_counter()
                if found.is_error or result.is_error or tool not in found.content[0].text:  # type: ignore[union-attr]
                    errors.append(f"session {i} round {r}: {result.content}")
                times["tool_search"].append((t1 - t0) * 1e3)
                times["call_tool"].append((t2 - t1) * 1e3)

    with anyio.fail_after(deadline):
        async with anyio.create_task_group() as tg:
            for i in range(sessions):
                tg.start_soon(one, i)
    if errors:
        raise RuntimeError(f"{len(errors)} failed operations, first: {errors[0]}")
    return times


def run(sessions: int, rounds: int, deadline: float = 300.0, mode: str = "auto") -> dict[str, dict[str, float]]:
    """Runs the load test; returns ``{operation: {p50_ms, p99_ms, count}}`` plus throughput."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            weather_port = _free_port()
            weather = subprocess.Popen(
                [sys.executable, str(SERVERS / "weather_server.py"), "--port", str(weather_port)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            procs.append(weather)
            _wait_port(weather_port, weather)
            gateway_port = _free_port()
            config = _config(Path(tmp), weather_port, gateway_port)
            gateway = subprocess.Popen(
                [sys.executable, "-m", "toolsift", "serve", "--config", str(config)],
                stderr=subprocess.PIPE,
            )
            procs.append(gateway)
            assert gateway.stderr is not None
            line = gateway.stderr.readline().decode()
            if not re.search(r"serving http://", line):
                raise RuntimeError(f"gateway did not start: {line}")
            url = f"http://127.0.0.1:{gateway_port}/mcp"
            started = time.perf_counter()
            threading.Thread(target=gateway.stderr.read, daemon=True).start()  # keep the pipe drained
            times = anyio.run(_client, url, sessions, rounds, deadline, mode)
            wall = time.perf_counter() - started
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)
    out = {
        op: {"p50_ms": float(np.percentile(t, 50)), "p99_ms": float(np.percentile(t, 99)), "count": len(t)}
        for op, t in times.items()
    }
    out["total"] = {"wall_s": wall, "ops_per_s": sum(len(t) for t in times.values()) / wall}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument(
        "--modes",
        nargs="+",
        default=["auto", "legacy"],
        help="client connect modes: auto (the SDK's default: 2026-07-28 stateless requests) and legacy "
        "(initialize handshake, one session)",
    )
    args = parser.parse_args()
    print(f"{args.sessions} concurrent sessions x {args.rounds} rounds (tool_search + call_tool), loopback HTTP")
    print("| client mode | operation | count | p50 ms | p99 ms | ops/s |\n|---|---|---|---|---|---|")
    for mode in args.modes:
        result = run(args.sessions, args.rounds, mode=mode)
        rate = result["total"]["ops_per_s"]
        for op in ("tool_search", "call_tool"):
            r = result[op]
            print(f"| {mode} | {op} | {r['count']:.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {rate:.0f} |")


if __name__ == "__main__":
    main()
