"""A real ``redis-server`` for the tests: started on a free loopback port in a temporary folder,
no persistence unless asked, stopped (or killed and restarted) on demand.

Without ``redis-server`` on the PATH the tests that need it are skipped, except under CI
(``CI`` set), where that is a failure: ``.ci/run`` installs it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def need_redis() -> str:
    """The path of ``redis-server`` (skips the test without it, fails it under CI)."""
    found = shutil.which("redis-server")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed (.ci/run installs it)")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    pytest.importorskip("redis")
    return found


class RedisServer:
    """One ``redis-server`` process bound to 127.0.0.1; ``persist`` keeps data across restarts
    (append-only file, fsync on every write)."""

    def __init__(self, folder: Path, *, persist: bool = False) -> None:
        self.binary, self.folder, self.persist = need_redis(), folder, persist
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        persistence = ["--appendonly", "yes", "--appendfsync", "always"] if self.persist else ["--appendonly", "no"]
        command = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", *persistence]
        self.folder.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [*command, "--dir", str(self.folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # a clean shutdown: the append-only file is complete
            self.proc.wait(10)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()
