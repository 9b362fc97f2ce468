"""OpenTelemetry for the gateway: a span per ``tool_search``, ``call_tool`` and index version,
a request counter and a duration histogram (``pip install 'toolsift[otel]'``).

The gateway uses only the OpenTelemetry API: without an SDK configured (for instance by
``opentelemetry-instrument toolsift serve …``, or a ``TracerProvider`` set in code) every call
is a no-op, and without the API installed nothing is imported at all.

Attributes carry the caller's name, the tool's name, the outcome, the version and counts, never
a query, the names a search returned or a call's arguments, unless ``[gateway] telemetry_text =
true`` (a query and arguments may hold user data). Names are the ones the caller itself sent or
may see; a forbidden tool's name appears only when the caller asked for it by that name.

Spans (attributes prefixed ``toolsift.``):

* ``toolsift.tool_search``: ``caller``, ``outcome``, ``version``, ``results`` (a count);
* ``toolsift.call_tool``: ``caller``, ``tool``, ``via``, ``outcome``, ``version``;
* ``toolsift.reindex``: ``version``, ``tools``, ``held``, ``source`` (``listed`` or ``loaded``).

Metrics, by ``toolsift.operation`` and ``toolsift.outcome``: the counter
``toolsift.gateway.requests`` and the histogram ``toolsift.gateway.duration`` (ms).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Longest text attribute (a query, arguments as JSON) when text is enabled, in characters.
MAX_TEXT = 1000


class Record:
    """What one operation reports: set attributes while it runs (``record["outcome"] = …``);
    text attributes are dropped unless text is enabled."""

    def __init__(self, text: bool) -> None:
        self.attributes: dict[str, Any] = {}
        self._text = text

    def __setitem__(self, key: str, value: Any) -> None:
        self.attributes[f"toolsift.{key}"] = value

    def text(self, key: str, value: Any) -> None:
        """A text attribute (a query, arguments): kept only with ``telemetry_text = true``."""
        if self._text:
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
            self[key] = shown[:MAX_TEXT]


class Telemetry:
    """Spans and metrics of one gateway (no-ops when disabled or without the OpenTelemetry API).

    Args:
        enabled: ``[gateway] telemetry`` (default true).
        text: ``[gateway] telemetry_text``: queries and arguments in attributes.
        tracer_provider: A ``TracerProvider`` (default: the global one).
        meter_provider: A ``MeterProvider`` (default: the global one).
    """

    def __init__(
        self, enabled: bool = True, text: bool = False, *, tracer_provider: Any = None, meter_provider: Any = None
    ) -> None:
        self.text = text
        self._tracer: Any = None
        if not enabled:
            return
        try:
            from opentelemetry import metrics, trace
        except ImportError:
            return
        from .. import __version__

        self._tracer = trace.get_tracer("toolsift.gateway", __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter("toolsift.gateway", __version__, meter_provider=meter_provider)
        self._requests = meter.create_counter(
            "toolsift.gateway.requests", unit="{request}", description="tool_search, call_tool and reindex operations"
        )
        self._duration = meter.create_histogram(
            "toolsift.gateway.duration", unit="ms", description="time of tool_search, call_tool and reindex operations"
        )

    @contextmanager
    def operation(self, name: str) -> Iterator[Record]:
        """A span ``toolsift.<name>`` around the block, and its count and duration; the block
        sets attributes on the record it gets (``outcome`` included)."""
        record = Record(self.text)
        if self._tracer is None:
            yield record
            return
        started = time.perf_counter()
        with self._tracer.start_as_current_span(f"toolsift.{name}") as span:
            try:
                yield record
            except BaseException:
                record.attributes.setdefault("toolsift.outcome", "exception")
                raise
            finally:
                span.set_attributes(record.attributes)
                labels = {
                    "toolsift.operation": name,
                    "toolsift.outcome": record.attributes.get("toolsift.outcome", "ok"),
                }
                self._requests.add(1, labels)
                self._duration.record((time.perf_counter() - started) * 1e3, labels)

    def reindexed(self, version: int, tools: int, held: int, source: str, seconds: float) -> None:
        """Reports an index version put into service (built here, or loaded from the cluster),
        as a ``toolsift.reindex`` span of the time it took and its count and duration."""
        if self._tracer is None:
            return
        now = time.time_ns()
        attributes: dict[str, Any] = {"toolsift.version": version, "toolsift.tools": tools, "toolsift.held": held}
        attributes["toolsift.source"] = source
        span = self._tracer.start_span("toolsift.reindex", start_time=now - int(seconds * 1e9), attributes=attributes)
        span.end(end_time=now)
        labels = {"toolsift.operation": "reindex", "toolsift.outcome": "ok"}
        self._requests.add(1, labels)
        self._duration.record(seconds * 1e3, labels)
