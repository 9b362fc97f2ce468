"""``toolsift serve --replicas N``: N gateway processes on one port, for one machine.

Each replica is a ``toolsift serve`` process of its own whose listening socket sets
``SO_REUSEPORT``, so the kernel spreads new connections among the live replicas (Linux; one
connection always reaches the same replica). The replicas share their state through the
config's ``[cluster]`` Redis, which is required. The supervisor restarts a replica that exits
(after :data:`RESTART_DELAY_S`), unless it refused its configuration (:data:`USAGE_ERROR`: then
it stops them all and exits with it), and stops them all on ``SIGTERM`` or Ctrl-C; a replica
gets ``SIGTERM`` when the supervisor dies.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from types import FrameType

from ..errors import GatewayConfigError
from .config import GatewayConfig

RESTART_DELAY_S = 1.0
#: The exit status of ``toolsift`` for an error it names (a bad configuration): a replica that
#: exits with it is not restarted, and the supervisor stops with it.
USAGE_ERROR = 2


def check(config: GatewayConfig, replicas: int) -> None:
    """Refuses a config that cannot run as ``replicas`` processes on one port."""
    if replicas < 1:
        raise GatewayConfigError("must be at least 1", path=config.source, field="--replicas")
    if replicas > 1 and config.cluster is None:
        raise GatewayConfigError(
            "several replicas share usage, held changes and catalog versions through Redis: "
            'add [cluster] redis = "redis://…"',
            path=config.source,
            field="cluster",
        )
    if replicas > 1 and config.transport != "http":
        raise GatewayConfigError("replicas serve HTTP only", path=config.source, field="gateway.transport")


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """In a replica, before it runs: SIGTERM when the supervisor dies, however (``kill -9``, the
    OOM killer), so that no orphan keeps serving the port a restarted supervisor binds again
    (Linux's ``PR_SET_PDEATHSIG``; elsewhere nothing)."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


def supervise(config: GatewayConfig, replicas: int, argv: Sequence[str]) -> int:
    """Runs ``replicas`` copies of ``toolsift serve`` (``argv``: its options less ``--replicas``
    and ``--port``) on the config's port (a free one for port 0) until stopped."""
    port = config.port or free_port(config.host)
    command = [sys.executable, "-m", "toolsift", "serve", *argv, "--port", str(port), "--reuse-port"]
    children: list[subprocess.Popen[bytes] | None] = [None] * replicas
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    previous = signal.signal(signal.SIGTERM, stop)
    print(f"toolsift serve: {replicas} replicas on http://{config.host}:{port}{config.path}", file=sys.stderr)
    try:
        while not stopping:
            for i, child in enumerate(children):
                if child is None or child.poll() is not None:
                    if child is not None and child.returncode == USAGE_ERROR:
                        # a configuration the replica refused (a port another program holds...):
                        # starting it again would fail again, for ever
                        print(f"toolsift serve: replica {i} refused its configuration; stopping", file=sys.stderr)
                        return USAGE_ERROR
                    if child is not None:
                        print(f"toolsift serve: replica {i} exited ({child.returncode}); restarting", file=sys.stderr)
                        time.sleep(RESTART_DELAY_S)
                    started = children[i] = subprocess.Popen(command, preexec_fn=_die_with_parent)
                    print(f"toolsift serve: replica {i} pid {started.pid}", file=sys.stderr, flush=True)
            time.sleep(0.1)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        for child in children:
            if child is not None and child.poll() is None:
                child.terminate()
        for child in children:
            if child is not None:
                try:
                    child.wait(10)
                except subprocess.TimeoutExpired:
                    child.kill()
    return 0
