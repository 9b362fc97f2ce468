"""Smoke run of the scaling benchmark at 1,000 tools (the figures come from ``python benches/scale.py``)."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp")
pytest.importorskip("botocore")

from scale import run


def test_scale_smoke_reports_every_path() -> None:
    table = run([1_000], [1_000])
    rows = {cells[0]: cells[1] for cells in (line.strip("| ").split(" | ") for line in table.splitlines()[2:])}
    for path in ("Index(tools) s", "load s", "select µs", "tools array tokens", "gateway first tools/list ms"):
        assert rows.get(path), path
    used, budget = (int(x.replace(",", "")) for x in rows["tools array tokens"].split(" / "))
    assert used <= budget
