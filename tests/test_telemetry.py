"""OpenTelemetry from the gateway, read back with the SDK's in-memory exporter and reader: a span
per tool_search, call_tool and index version, counters and histograms, and no query or argument
text in attributes unless the config enables it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
pytest.importorskip("opentelemetry.sdk")

import anyio
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gateway_support import ALICE, call, config_text, running, search, session

SECRET_CITY = "Vault-City-4471"
QUERY = "weather forecast for a city"


def record(weather_url: str, tmp_path: Path, **gateway: Any) -> tuple[list[Any], dict[str, list[Any]]]:
    """The spans and metric points of a gateway that served one search and two calls of alice."""
    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(exporter))
    meter = MeterProvider(metric_readers=[reader])
    with running(
        config_text(weather_url, tmp_path, **gateway), tmp_path, tracer_provider=tracer, meter_provider=meter
    ) as gw:

        async def scenario() -> None:
            async with session(gw, ALICE) as alice:
                assert (await search(alice, QUERY))[0] == "weather__get_forecast"
                assert not (await call(alice, "weather__get_forecast", {"city": SECRET_CITY})).is_error
                assert (await call(alice, "files__delete_file", {"path": "x"})).is_error  # needs admin

        anyio.run(scenario)
    points: dict[str, list[Any]] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points.setdefault(metric.name, []).extend(metric.data.data_points)
    return list(exporter.get_finished_spans()), points


def test_spans_and_metrics_carry_caller_tool_outcome_and_timings_but_no_text(weather_url: str, tmp_path: Path) -> None:
    spans, points = record(weather_url, tmp_path)
    by_name: dict[str, list[Any]] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    (searched,) = by_name["toolsift.tool_search"]
    assert dict(searched.attributes) == {
        "toolsift.caller": "alice",
        "toolsift.version": searched.attributes["toolsift.version"],
        "toolsift.outcome": "ok",
        "toolsift.results": searched.attributes["toolsift.results"],
    }
    assert searched.attributes["toolsift.results"] >= 1
    calls = {s.attributes["toolsift.tool"]: s.attributes for s in by_name["toolsift.call_tool"]}
    assert calls["weather__get_forecast"]["toolsift.outcome"] == "ok"
    assert calls["files__delete_file"]["toolsift.outcome"] == "unknown"
    assert all(a["toolsift.caller"] == "alice" and a["toolsift.via"] == "call_tool" for a in calls.values())
    assert by_name["toolsift.reindex"] and all(s.end_time >= s.start_time for s in spans)
    everything = json.dumps([dict(s.attributes) for s in spans])
    assert SECRET_CITY not in everything and QUERY not in everything and "arguments" not in everything
    requests = {
        (dict(p.attributes)["toolsift.operation"], dict(p.attributes)["toolsift.outcome"]): p.value
        for p in points["toolsift.gateway.requests"]
    }
    assert requests[("tool_search", "ok")] == 1 and requests[("call_tool", "ok")] == 1
    assert requests[("call_tool", "unknown")] == 1 and requests[("reindex", "ok")] >= 1
    timed = [p for p in points["toolsift.gateway.duration"] if dict(p.attributes)["toolsift.operation"] == "call_tool"]
    assert sum(p.count for p in timed) == 2 and all(p.sum > 0 for p in timed)


def test_text_attributes_only_when_enabled(weather_url: str, tmp_path: Path) -> None:
    spans, _ = record(weather_url, tmp_path, telemetry_text=True)
    attributes = {s.name: dict(s.attributes) for s in spans if s.name != "toolsift.call_tool"}
    assert attributes["toolsift.tool_search"]["toolsift.query"] == QUERY
    assert "weather__get_forecast" in attributes["toolsift.tool_search"]["toolsift.tools"]
    assert any(SECRET_CITY in str(dict(s.attributes).get("toolsift.arguments")) for s in spans)


def test_telemetry_off_makes_no_spans(weather_url: str, tmp_path: Path) -> None:
    spans, points = record(weather_url, tmp_path, telemetry=False)
    assert spans == [] and points == {}
