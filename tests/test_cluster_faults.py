"""Faults under load, against real processes: three gateway replicas (``toolsift serve``) on a
real redis-server, real MCP upstreams over HTTP, clients sending stateless (2026-07-28) requests,
each on a new connection, from threads.

* a replica killed (SIGKILL) mid-load loses only the requests in flight; the others keep serving
  (``--replicas 3`` on one port: the kernel sends new connections to the live replicas) and the
  supervisor starts a new one;
* Redis stopped and started again mid-load: no request fails (searches are answered from the
  version in service, calls go to the replica's own upstream connection, usage waits in the
  replica), every call is counted once Redis is back (with persistence), and a catalog change
  after it reaches every replica within 2 s;
* throughout, a caller never runs a tool it may not use, on any replica.

Each test prints its counts (requests sent, faults injected, errors seen, calls lost).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import httpx2

from cluster_support import VISIBLE_WITHIN_S, config_text, wait_for
from gateway_support import ALICE, BOB, ROOT
from redis_support import RedisServer, free_port
from toolsift.tiers import usage_key

WORKERS = 4
STATELESS = "2026-07-28"
FORECAST = "weather__get_forecast"


def request(port: int, token: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One stateless ``tools/call`` on a new connection; the JSON-RPC result (raises on failure)."""
    meta = {"io.modelcontextprotocol/protocolVersion": STATELESS, "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    body["params"]["_meta"] = meta  # type: ignore[index]
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": STATELESS,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    response = httpx2.post(f"http://127.0.0.1:{port}/mcp", json=body, headers=headers, timeout=15)
    if response.status_code != 200:
        raise RuntimeError(f"HTTP {response.status_code}")
    message: dict[str, Any] = response.json()
    if "error" in message:
        raise RuntimeError(f"JSON-RPC error {message['error']}")
    result: dict[str, Any] = message["result"]
    return result


def text(result: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in result["content"])


@dataclass
class Load:
    """Worker threads, each sending a search, a call and a forbidden call in turn, until stopped."""

    ports: list[int]
    sent: int = 0
    ok_calls: int = 0
    errors: list[tuple[float, float, str]] = field(default_factory=list)  # (started, ended, what)
    forbidden_served: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _one(self, port: int, step: int) -> None:
        kind = step % 3
        started = time.monotonic()
        try:
            if kind == 0:
                found = [
                    d["name"]
                    for d in json.loads(
                        text(request(port, ALICE, "tool_search", {"query": "weather forecast for a city"}))
                    )
                ]
                assert found and found[0] == FORECAST, found
            elif kind == 1:
                result = request(port, ALICE, "call_tool", {"name": FORECAST, "arguments": {"city": "Oslo"}})
                assert text(result) == "Oslo: sunny for 3 days", result
                with self._lock:
                    self.ok_calls += 1
            else:
                result = request(port, BOB, "call_tool", {"name": "files__read_file", "arguments": {"path": "x"}})
                if not result.get("isError") or text(result) != "Unknown tool: files__read_file":
                    with self._lock:
                        self.forbidden_served += 1
        except Exception as e:
            with self._lock:
                self.errors.append((started, time.monotonic(), f"{type(e).__name__}: {e}"))
        with self._lock:
            self.sent += 1

    def _work(self, worker: int) -> None:
        step = worker
        while not self._stop.is_set():
            self._one(self.ports[step % len(self.ports)], step)
            step += 1

    def __enter__(self) -> Load:
        self._threads = [threading.Thread(target=self._work, args=(w,)) for w in range(WORKERS)]
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(30)


def calls_in_redis(url: str) -> int:
    import redis

    row = redis.Redis.from_url(url).hget(f"toolsift:usage:{usage_key(['files', 'weather'])}", FORECAST)
    return 0 if row is None else int(row.split()[1])


class Drained:
    """A process's stderr read in a thread, its lines kept."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.lines: list[str] = []
        assert proc.stderr is not None
        stream = proc.stderr
        self._thread = threading.Thread(
            target=lambda: self.lines.extend(iter(lambda: stream.readline().decode(), "")), daemon=True
        )
        self._thread.start()

    def count(self, pattern: str) -> int:
        return sum(1 for line in list(self.lines) if re.search(pattern, line))

    def wait_for(self, check: Any, timeout: float) -> None:
        """:func:`wait_for`, failing with the process's last lines (what the replicas said)."""
        try:
            wait_for(check, timeout=timeout)
        except AssertionError:
            tail = "".join(list(self.lines)[-40:])
            raise AssertionError(f"timed out after {timeout:g} s; the gateway's last lines:\n{tail}") from None


def write_config(tmp_path: Path, redis_url: str, files: str, weather: str, port: int) -> Path:
    path = tmp_path / "gateway.toml"
    path.write_text(config_text(redis_url, files, weather, tmp_path).replace("port = 0", f"port = {port}", 1))
    return path


def serve(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "toolsift", "serve", *args], stderr=subprocess.PIPE)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def serving(ports: list[int]) -> bool:
    try:
        return all(json.loads(text(request(p, ALICE, "tool_search", {"query": "weather forecast"}))) for p in ports)
    except Exception:
        return False


def gone(pid: int) -> bool:
    """The process has exited (a zombie holds no socket)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True


@pytest.fixture
def replicas_on_one_port(
    redis_server: RedisServer, files_url: str, weather_url: str, tmp_path: Path
) -> Iterator[tuple[int, Drained]]:
    port = free_port()
    config = write_config(tmp_path, redis_server.url, files_url, weather_url, port)
    proc = serve("--config", str(config), "--replicas", "3", "--verbose")
    out = Drained(proc)
    try:
        out.wait_for(lambda: out.count(r"serving http://") == 3, timeout=60)
        # --verbose reaches the replicas (it used to stop at the supervisor): each logs its builds
        out.wait_for(lambda: out.count(r"^toolsift: indexed \d+ tools") >= 1, timeout=30)  # the lister
        out.wait_for(lambda: out.count(r"^toolsift: loaded \d+ tools") >= 2, timeout=30)  # the others
        wait_for(lambda: all(serving([port]) for _ in range(6)), timeout=30)
        yield port, out
    finally:
        stop(proc)


def test_a_replica_killed_mid_load_loses_only_its_requests_in_flight(
    replicas_on_one_port: tuple[int, Drained], redis_server: RedisServer
) -> None:
    port, out = replicas_on_one_port
    pids = [int(m) for line in list(out.lines) for m in re.findall(r"replica \d+ pid (\d+)", line)]
    assert len(pids) == 3
    with Load([port]) as load:
        wait_for(lambda: load.sent >= 90, timeout=60)
        killed_at = time.monotonic()
        os.kill(pids[1], signal.SIGKILL)
        wait_for(lambda: gone(pids[1]))
        dead = time.monotonic()
        before = load.sent
        wait_for(lambda: load.sent >= before + 180, timeout=120)
    assert load.forbidden_served == 0
    late = [e for e in load.errors if e[0] > dead]
    assert late == []  # every request begun once the replica was gone was served
    assert len(load.errors) <= WORKERS  # at most one request in flight per client
    assert all(e[1] >= killed_at for e in load.errors)
    counted = calls_in_redis(redis_server.url)
    assert load.ok_calls <= counted <= load.ok_calls + len(load.errors)  # no answered call lost
    out.wait_for(lambda: out.count(r"replica 1 exited") == 1 and out.count(r"replica 1 pid") == 2, timeout=30)
    print(
        f"\nkill: requests sent {load.sent}, faults injected 1 (SIGKILL), errors seen {len(load.errors)}, "
        f"answered calls {load.ok_calls}, counted {counted}, calls lost 0"
    )


@pytest.mark.parametrize("persist", [True, False], ids=["aof", "no-persistence"])
def test_redis_restarted_mid_load_costs_no_request_and_the_replicas_recover(
    persist: bool, files_url: str, weather_url: str, tmp_path: Path
) -> None:
    redis_server = RedisServer(tmp_path / "redis", persist=persist).start()
    ports = [free_port() for _ in range(3)]
    config = write_config(tmp_path, redis_server.url, files_url, weather_url, ports[0])
    procs = [serve("--config", str(config), "--port", str(p)) for p in ports]
    outs = [Drained(p) for p in procs]
    try:
        wait_for(lambda: all(o.count(r"serving http://") == 1 for o in outs), timeout=60)
        wait_for(lambda: serving(ports), timeout=30)
        with Load(ports) as load:
            wait_for(lambda: load.sent >= 90, timeout=60)
            redis_server.stop()
            during = load.sent
            wait_for(lambda: load.sent >= during + 90, timeout=60)  # served while Redis is down
            redis_server.start()
            after = load.sent
            wait_for(lambda: load.sent >= after + 90, timeout=60)
        assert load.errors == [] and load.forbidden_served == 0
        if persist:  # every answered call counted once, including those made while Redis was down
            wait_for(lambda: calls_in_redis(redis_server.url) == load.ok_calls, timeout=20)
        result = request(ports[0], ROOT, "call_tool", {"name": "files__grow", "arguments": {}})
        assert text(result) == "grown"
        grown = time.monotonic()
        for p in ports:

            def found(p: int = p) -> bool:
                hits = json.loads(
                    text(request(p, ALICE, "tool_search", {"query": "compress a folder into a zip archive"}))
                )
                return "files__archive_folder" in [d["name"] for d in hits]

            wait_for(found, timeout=VISIBLE_WITHIN_S * 4)
        took = time.monotonic() - grown
        assert took < VISIBLE_WITHIN_S
        counted = calls_in_redis(redis_server.url)
        mode = "aof" if persist else "no persistence"
        print(
            f"\nredis restart ({mode}): requests sent {load.sent} ({after - during} while down), faults injected 1, "
            f"errors seen {len(load.errors)}, answered calls {load.ok_calls}, counted {counted}, "
            f"change visible on all in {took:.2f} s"
        )
    finally:
        for proc in procs:
            stop(proc)
        redis_server.stop()


def test_sigterm_shuts_the_replicas_down_cleanly_and_a_killed_supervisor_takes_them_along(
    redis_server: RedisServer, files_url: str, weather_url: str, tmp_path: Path
) -> None:
    """Replicas died on SIGTERM's default action (the supervisor's stop, and systemd's or
    Docker's): the lister's lock stayed taken for its TTL, each replica's temporary folder was
    left behind. A supervisor killed outright left its replicas serving the port as orphans."""
    import redis

    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    for ending in ("sigterm", "sigkill"):
        config = write_config(tmp_path, redis_server.url, files_url, weather_url, free_port())
        proc = subprocess.Popen(
            [sys.executable, "-m", "toolsift", "serve", "--config", str(config), "--replicas", "2"],
            stderr=subprocess.PIPE,
            env=env,
        )
        out = Drained(proc)
        try:
            out.wait_for(lambda out=out: out.count(r"serving http://") == 2, timeout=90)
            pids = [int(m) for line in list(out.lines) for m in re.findall(r"replica \d+ pid (\d+)", line)]
            assert len(pids) == 2 and list(temp.glob("toolsift-replica-*"))
            if ending == "sigterm":
                proc.send_signal(signal.SIGTERM)
                assert proc.wait(30) == 0
                holder = redis.Redis.from_url(redis_server.url).get("toolsift:leader") or b""
                assert not any(f":{pid}:".encode() in holder for pid in pids)  # the lock given up
                assert list(temp.glob("toolsift-replica-*")) == []  # each replica's folder removed
            else:
                proc.kill()
                proc.wait(10)
                wait_for(lambda pids=pids: all(gone(pid) for pid in pids), timeout=30)
        finally:
            stop(proc)
