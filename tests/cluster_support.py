"""What the cluster tests share: the gateway config of a cluster (both upstreams over HTTP, so
that every replica reaches the same upstream processes), an upstream server on a free port, and a
poll with a deadline."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from gateway_support import SERVERS, upstreams
from redis_support import free_port

VISIBLE_WITHIN_S = 2.0  # the bound for a change to reach every replica


def config_text(redis_url: str, files_url: str, weather_url: str, tmp_path: Path, **gateway: Any) -> str:
    extra = "".join(f"{k} = {json.dumps(v)}\n" for k, v in gateway.items())
    return f"""
[gateway]
port = 0
debounce = 0.05
{extra}
[cluster]
redis = {json.dumps(redis_url)}
lock_ttl = 1.0

{upstreams(f"url = {json.dumps(files_url)}", weather_url)}"""


def serve_http(script: str, *args: str) -> tuple[subprocess.Popen[bytes], str]:
    """An upstream test server over streamable HTTP on a free loopback port, once it listens."""
    port = free_port()
    command = [sys.executable, str(SERVERS / script), "--port", str(port), *args]
    proc = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    return proc, f"http://127.0.0.1:{port}/mcp"


def wait_for(check: Any, timeout: float = 30.0) -> float:
    """Polls ``check()`` until it is true; the seconds it took (fails after ``timeout``)."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, "timed out"
        time.sleep(0.02)
    return time.monotonic() - started
