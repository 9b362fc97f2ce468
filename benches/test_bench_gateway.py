"""Smoke run of the gateway load test (the figures come from ``python benches/gateway_load.py``)."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp")

from gateway_load import run


def test_gateway_load_smoke_runs_every_client_and_protocol_with_checked_results() -> None:
    results = run(sessions=3, rounds=2, single=3, servers=("json",))
    assert set(results) == {("json", c, p) for c in ("sdk", "light") for p in ("handshake", "stateless")}
    assert all(r["searches_per_s"] > 0 for r in results.values())


def test_gateway_load_smoke_runs_two_replicas_on_one_port() -> None:
    import shutil

    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    from gateway_load import run_replicas

    # enough searches that the replicas' CPU time spans several clock ticks (10 ms each)
    results = run_replicas((2,), sessions=3, rounds=12, single=3, protocols=("handshake", "stateless"))
    assert set(results) == {("2 replicas", "light", p) for p in ("handshake", "stateless")}
    assert all(r["searches_per_s"] > 0 and r["server_cpu_us"] > 0 for r in results.values())
