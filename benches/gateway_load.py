"""Bounded load test of the MCP gateway on loopback: the SDK client beside a light client, in both
protocol modes, against both response modes of the server.

Starts two upstream servers (``tests/mcp_servers``: files over stdio, weather over streamable
HTTP) and runs ``toolsift serve`` in its own process, once per server response mode (``sse``:
the SDK's default, each answer an event stream; ``json``: ``[gateway] json_response = true``).
Against each, two clients in this process, each in both protocol modes (``handshake``: initialize,
``notifications/initialized``, then requests in that session; ``stateless``: 2026-07-28 requests,
each carrying its own envelope):

* ``sdk``: the official SDK's ``Client`` over streamable HTTP (``mode="legacy"`` / ``"auto"``);
* ``light``: plain JSON-RPC POSTs over one keep-alive HTTP/1.1 connection per session, written
  on asyncio streams (an HTTP library such as httpx costs the client about 1 ms a request here,
  more than the gateway spends), so the figures show the server's capacity rather than the
  client's on a machine where both share the cores.

Each cell: one session's sequential ``tool_search`` round trips (p50), then ``--sessions``
concurrent sessions of ``--rounds`` searches each (p50, p99 and searches per second), each
result checked, and one ``call_tool`` per session through to the upstream. Ratios follow the
table. Stops by itself: fixed work, and a deadline per cell.

With ``--replicas 1 2``, each count of replicas instead: ``toolsift serve --replicas N`` on one
port (``SO_REUSEPORT``) with ``[cluster]`` on a redis-server of its own (Debian's
``redis-server``, on a free loopback port), JSON answers, the light client (the kernel gives
each connection to one replica; the SDK client's second connection for its event stream could
reach another replica than its session's). "server CPU" then adds up every replica.

    python benches/gateway_load.py [--sessions 32] [--rounds 25] [--single 200]
        [--servers sse json] [--clients sdk light] [--protocols handshake stateless]
        [--replicas 1 2]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
HANDSHAKE_VERSION, STATELESS_VERSION = "2025-11-25", "2026-07-28"
SDK_MODES = {"handshake": "legacy", "stateless": "auto"}

Search = Callable[[str], Awaitable[str]]  # query -> the result's text
Call = Callable[[str, dict[str, Any]], Awaitable[str]]


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


def _config(folder: Path, weather_port: int, gateway_port: int, responses: str, redis: str | None = None) -> Path:
    path = folder / "gateway.toml"
    cluster = f'[cluster]\nredis = "{redis}"\n' if redis else ""
    path.write_text(
        f"""
[gateway]
port = {gateway_port}
json_response = {"true" if responses == "json" else "false"}

{cluster}
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


@contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """A redis-server of its own on a free loopback port, no persistence; yields its URL."""
    port = _free_port()
    command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen([*command, "--dir", str(folder)], stdout=subprocess.DEVNULL)
    try:
        _wait_port(port, proc)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def gateway(responses: str, replicas: int = 0) -> Iterator[tuple[str, list[int]]]:
    """The upstreams and a gateway answering in ``responses`` mode; yields its URL and its pids.
    ``replicas`` > 0: that many replicas on one port, with ``[cluster]`` on a redis-server."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
            redis = stack.enter_context(redis_server(Path(tmp))) if replicas else None
            weather_port = _free_port()
            weather = subprocess.Popen(
                [sys.executable, str(SERVERS / "weather_server.py"), "--port", str(weather_port)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            procs.append(weather)
            _wait_port(weather_port, weather)
            gateway_port = _free_port()
            config = _config(Path(tmp), weather_port, gateway_port, responses, redis)
            command = [sys.executable, "-m", "toolsift", "serve", "--config", str(config)]
            proc = subprocess.Popen([*command, "--replicas", str(replicas or 1)], stderr=subprocess.PIPE)
            procs.append(proc)
            assert proc.stderr is not None
            pids, serving = [proc.pid] if replicas <= 1 else [], 0
            while serving < max(replicas, 1):
                line = proc.stderr.readline().decode()
                if not line:
                    raise RuntimeError("gateway did not start")
                pids += [int(pid) for pid in re.findall(r"replica \d+ pid (\d+)", line)]
                serving += bool(re.search(r"serving http://", line))
            threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep the pipe drained
            url = f"http://127.0.0.1:{gateway_port}/mcp"
            if replicas:
                anyio.run(_until_every_replica_answers, url)
            yield url, pids
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)


async def _until_every_replica_answers(url: str) -> None:
    """Stateless searches on new connections (each reaches some replica) until 20 in a row find
    their tool: the replicas that follow have loaded the lister's version."""
    in_a_row = 0
    with anyio.fail_after(60):
        while in_a_row < 20:
            try:
                async with Light(url, "stateless") as light:
                    found = await light.call("tool_search", {"query": QUERIES[1][0], "limit": 3})
                in_a_row = in_a_row + 1 if QUERIES[1][1] in found else 0
            except (RuntimeError, OSError):
                in_a_row = 0
                await anyio.sleep(0.1)


# -- the clients -------------------------------------------------------------------------------
class Light:
    """Plain JSON-RPC over one keep-alive HTTP/1.1 connection (asyncio streams, no HTTP library):
    what an MCP client must send, no more, so that the client's own cost stays small."""

    def __init__(self, url: str, protocol: str) -> None:
        self.url, self.protocol, self._id = httpx2.URL(url), protocol, 0
        self._headers = {
            "Host": f"{self.url.host}:{self.url.port}",
            "Authorization": f"Bearer {TOKEN}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }

    async def __aenter__(self) -> Light:
        self._reader, self._writer = await asyncio.open_connection(self.url.host, self.url.port)
        if self.protocol == "handshake":
            info = {"name": "light", "version": "1"}
            params = {"protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": info}
            status, headers, body = await self._post(self._body("initialize", params))
            _message(status, headers, body)
            self._headers["Mcp-Session-Id"] = headers["mcp-session-id"]
            self._headers["MCP-Protocol-Version"] = HANDSHAKE_VERSION
            status, _, _ = await self._post(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            if status != 202:
                raise RuntimeError(f"notifications/initialized: HTTP {status}")
        else:
            self._headers["MCP-Protocol-Version"] = STATELESS_VERSION
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.protocol == "handshake":
            await self._request("DELETE", b"")
        self._writer.close()

    def _body(self, method: str, params: dict[str, Any]) -> str:
        self._id += 1
        if self.protocol == "stateless":
            meta = {
                "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
            params = {**params, "_meta": meta}
        return json.dumps({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})

    async def _post(self, body: str, extra: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        return await self._request("POST", body.encode(), extra)

    async def _request(
        self, method: str, body: bytes, extra: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        headers = {**self._headers, **(extra or {}), "Content-Length": str(len(body))}
        head = f"{method} {self.url.raw_path.decode()} HTTP/1.1\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in headers.items()
        )
        self._writer.write(head.encode("latin-1") + b"\r\n" + body)
        status = int((await self._reader.readline()).split()[1])
        got: dict[str, str] = {}
        while (line := await self._reader.readline()) not in (b"\r\n", b""):
            key, _, value = line.decode("latin-1").partition(":")
            got[key.strip().lower()] = value.strip()
        if got.get("transfer-encoding") == "chunked":
            data = b""
            while size := int((await self._reader.readline()).strip(), 16):
                data += await self._reader.readexactly(size + 2)
                data = data[:-2]
            await self._reader.readline()
        else:
            data = await self._reader.readexactly(int(got.get("content-length", "0")))
        return status, got, data

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        extra = {"Mcp-Method": "tools/call", "Mcp-Name": name} if self.protocol == "stateless" else None
        status, headers, body = await self._post(
            self._body("tools/call", {"name": name, "arguments": arguments}), extra
        )
        result = _message(status, headers, body)["result"]
        if result.get("isError"):
            raise RuntimeError(f"{name} failed: {result}")
        return "".join(c.get("text", "") for c in result["content"])


def _message(status: int, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The JSON-RPC message of a response, whether sent as JSON or as one SSE event."""
    if status != 200:
        raise RuntimeError(f"HTTP {status}: {body[:200]!r}")
    if headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in body.decode().splitlines() if line.startswith("data:")]
        message: dict[str, Any] = json.loads(data[-1])
    else:
        message = json.loads(body)
    if "error" in message:
        raise RuntimeError(f"JSON-RPC error: {message['error']}")
    return message


async def _session(url: str, client: str, protocol: str, work: Callable[[Search, Call], Awaitable[None]]) -> None:
    if client == "light":
        async with Light(url, protocol) as light:

            async def search(query: str) -> str:
                return await light.call("tool_search", {"query": query, "limit": 3})

            await work(search, light.call)
        return
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    async with Client(streamable_http_client(url, http_client=http), cache=None, mode=SDK_MODES[protocol]) as sdk:

        async def sdk_search(query: str) -> str:
            return _text(await sdk.call_tool("tool_search", {"query": query, "limit": 3}))

        async def sdk_call(name: str, arguments: dict[str, Any]) -> str:
            return _text(await sdk.call_tool(name, arguments))

        await work(sdk_search, sdk_call)


def _text(result: Any) -> str:
    if result.is_error:
        raise RuntimeError(f"tool error: {result.content}")
    return "".join(getattr(c, "text", "") for c in result.content)


# -- one cell of the table ---------------------------------------------------------------------
def cpu_seconds(pids: int | list[int]) -> float:
    """User + system CPU time of the processes ``pids`` so far (Linux ``/proc``; 0 elsewhere)."""
    total = 0.0
    for pid in [pids] if isinstance(pids, int) else pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


async def cell(
    url: str, client: str, protocol: str, sessions: int, rounds: int, single: int, pid: int | list[int] = 0
) -> dict[str, float]:
    """One client and protocol against one gateway: single-session latency, then load, with the
    gateway process's CPU time per search under load (session setup and each session's
    ``call_tool`` included), a figure other work on the machine disturbs less than throughput."""
    alone: list[float] = []
    loaded: list[float] = []

    def worker(times: list[float], count: int, offset: int) -> Callable[[Search, Call], Awaitable[None]]:
        async def work(search: Search, call: Call) -> None:
            for r in range(count):
                query, tool, arguments = QUERIES[(offset + r) % len(QUERIES)]
                start = time.perf_counter()
                text = await search(query)
                times.append(time.perf_counter() - start)
                if tool not in text:
                    raise RuntimeError(f"tool_search {query!r} did not find {tool}: {text[:200]}")
            query, tool, arguments = QUERIES[offset % len(QUERIES)]
            if not (await call("call_tool", {"name": tool, "arguments": arguments})):
                raise RuntimeError(f"call_tool {tool} returned nothing")

        return work

    with anyio.fail_after(300):
        await _session(url, client, protocol, worker(alone, 10, 0))  # warm the caller's listing and paths
        alone.clear()
        await _session(url, client, protocol, worker(alone, single, 0))
        started, cpu = time.perf_counter(), cpu_seconds(pid)
        async with anyio.create_task_group() as tg:
            for i in range(sessions):
                tg.start_soon(_session, url, client, protocol, worker(loaded, rounds, i))
        wall, cpu = time.perf_counter() - started, cpu_seconds(pid) - cpu
    return {
        "single_p50_ms": float(np.percentile(alone, 50)) * 1e3,
        "p50_ms": float(np.percentile(loaded, 50)) * 1e3,
        "p99_ms": float(np.percentile(loaded, 99)) * 1e3,
        "searches_per_s": len(loaded) / wall,
        "server_cpu_us": cpu / len(loaded) * 1e6,
    }


def run(
    sessions: int,
    rounds: int,
    single: int = 200,
    servers: tuple[str, ...] = ("sse", "json"),
    clients: tuple[str, ...] = ("sdk", "light"),
    protocols: tuple[str, ...] = ("handshake", "stateless"),
) -> dict[tuple[str, str, str], dict[str, float]]:
    """Every (server responses, client, protocol) cell; see :func:`cell`."""
    out = {}
    for responses in servers:
        with gateway(responses) as (url, pids):
            for client in clients:
                for protocol in protocols:
                    work = (url, client, protocol, sessions, rounds, single, pids)
                    out[responses, client, protocol] = anyio.run(cell, *work)
                    print(f"done: {responses} {client} {protocol}", file=sys.stderr, flush=True)
    return out


def run_replicas(
    counts: tuple[int, ...], sessions: int, rounds: int, single: int = 200, protocols: tuple[str, ...] = ("stateless",)
) -> dict[tuple[str, str, str], dict[str, float]]:
    """Each count of replicas (JSON answers, the light client); keys ``("N replicas", client, protocol)``."""
    out = {}
    for n in counts:
        with gateway("json", replicas=n) as (url, pids):
            for protocol in protocols:
                out[f"{n} replicas", "light", protocol] = anyio.run(
                    cell, url, "light", protocol, sessions, rounds, single, pids
                )
                print(f"done: {n} replicas {protocol}", file=sys.stderr, flush=True)
    return out


def table(results: dict[tuple[str, str, str], dict[str, float]], sessions: int) -> str:
    lines = [
        f"| server | client | protocol | 1 session p50 ms | {sessions} sessions p50 ms | p99 ms "
        "| tool_search/s | server CPU µs/search |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (responses, client, protocol), r in results.items():
        lines.append(
            f"| {responses} | {client} | {protocol} | {r['single_p50_ms']:.2f} | {r['p50_ms']:.2f} | "
            f"{r['p99_ms']:.2f} | {r['searches_per_s']:.0f} | {r['server_cpu_us']:.0f} |"
        )
    lines.append("")
    lines += list(_ratios(results))
    return "\n".join(lines)


def _ratios(results: dict[tuple[str, str, str], dict[str, float]]) -> Iterator[str]:
    """Searches per second of light over SDK, of stateless over handshake, of json over sse."""
    axes = {0: ("json", "sse"), 1: ("light", "sdk"), 2: ("stateless", "handshake")}
    counts = sorted({k[0] for k in results if k[0].endswith(" replicas")}, key=lambda k: int(k.split()[0]))
    if len(counts) > 1:
        axes[0] = (counts[-1], counts[0])
    for axis, (a, b) in axes.items():
        for key, r in results.items():
            if key[axis] != a:
                continue
            other = (*key[:axis], b, *key[axis + 1 :])
            if other in results:
                rest = " ".join(k for i, k in enumerate(key) if i != axis)
                rate = r["searches_per_s"] / results[other]["searches_per_s"]
                latency = r["single_p50_ms"] / results[other]["single_p50_ms"]
                cpu = r["server_cpu_us"] / max(results[other]["server_cpu_us"], 1e-9)
                yield (
                    f"- {a} ÷ {b} ({rest}): tool_search/s {rate:.2f}×, 1-session p50 {latency:.2f}×, "
                    f"server CPU/search {cpu:.2f}×"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--single", type=int, default=200, help="sequential searches of the 1-session p50")
    parser.add_argument("--servers", nargs="+", default=["sse", "json"], choices=["sse", "json"])
    parser.add_argument("--clients", nargs="+", default=["sdk", "light"], choices=["sdk", "light"])
    parser.add_argument("--protocols", nargs="+", default=["handshake", "stateless"], choices=list(SDK_MODES))
    parser.add_argument("--replicas", nargs="+", type=int, help="replica counts to compare (needs redis-server)")
    args = parser.parse_args()
    if args.replicas:
        results = run_replicas(tuple(args.replicas), args.sessions, args.rounds, args.single, tuple(args.protocols))
    else:
        results = run(
            args.sessions, args.rounds, args.single, tuple(args.servers), tuple(args.clients), tuple(args.protocols)
        )
    print(f"{args.sessions} concurrent sessions x {args.rounds} tool_search each, loopback HTTP, checked results")
    print(table(results, args.sessions))


if __name__ == "__main__":
    main()
