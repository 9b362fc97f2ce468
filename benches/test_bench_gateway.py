"""Smoke run of the gateway load test (the figures come from ``python benches/gateway_load.py``)."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp")

from gateway_load import run


def test_gateway_load_smoke() -> None:
    result = run(sessions=3, rounds=2, deadline=120)
    assert result["tool_search"]["count"] == 6 and result["call_tool"]["count"] == 6
