"""Runs systems over a dataset and reports metrics, per category and overall, with latency."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .datasets import Dataset
from .metrics import METRICS, recall_at, score_query
from .systems import System

DEPTH = 100
"""How many results each system returns per query (MRR looks this deep)."""

CURVE_DEPTH = 20
"""Recall@k is kept for every k up to this, for the report's curves."""

SHORTLIST = 5
"""A query whose needed tools are not all in this many first results is a miss (``tool_search``'s
default limit)."""


@dataclass
class Result:
    """Metrics of one system on one dataset."""

    system: str
    overall: dict[str, float]
    by_category: dict[str, dict[str, float]]
    latency_us: dict[str, float]
    selection: dict[str, float] = field(default_factory=dict)
    """Budgeted selection figures (toolsift only): tokens per turn and recall within it."""
    recall_curve: list[float] = field(default_factory=list)
    """Mean Recall@k for k = 1 .. :data:`CURVE_DEPTH`."""
    misses: list[dict[str, Any]] = field(default_factory=list)
    """Queries whose needed tools were not all in the first :data:`SHORTLIST`: ``{"id", "query",
    "category", "needed", "missing", "offered"}`` (labels), in dataset order."""


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {m: float(np.mean([r[m] for r in rows])) if rows else 0.0 for m in METRICS}


def evaluate(
    system: System,
    dataset: Dataset,
    *,
    budget_tokens: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Result:
    """Ranks every query of ``dataset`` that some tool fits with ``system`` and scores the
    rankings; with ``budget_tokens``, also the selections of a toolsift system within that
    budget. Queries no tool fits (``relevant`` empty) are left out: they score the relevance gate
    (:mod:`toolsift.eval.gate`), not a ranking."""
    scored = [q for q in dataset.queries if q.relevant]
    rows, times, cats, curve, misses = [], [], [], np.zeros(CURVE_DEPTH), []
    for i, q in enumerate(scored):
        t0 = time.perf_counter_ns()
        ranked = system.rank(q, DEPTH)
        times.append((time.perf_counter_ns() - t0) / 1e3)
        ranked = [dataset.label(name) for name in ranked]
        rows.append(score_query(ranked, q.relevant))
        cats.append(q.category)
        curve += [recall_at(ranked, q.relevant, k) for k in range(1, CURVE_DEPTH + 1)]
        missing = [r for r in q.relevant if r not in ranked[:SHORTLIST]]
        if missing:
            offered = list(dict.fromkeys(ranked[:SHORTLIST]))
            misses.append(
                {
                    "id": q.id,
                    "query": q.text,
                    "category": q.category,
                    "needed": list(q.relevant),
                    "missing": missing,
                    "offered": offered,
                }
            )
        if progress:
            progress(i + 1, len(scored))
    categories = dict.fromkeys(cats)
    by_category = {c: _mean([r for r, rc in zip(rows, cats, strict=True) if rc == c]) for c in categories}
    latency = {"p50": float(np.percentile(times, 50)), "p99": float(np.percentile(times, 99))} if times else {}
    result = Result(system.name, _mean(rows), by_category, latency)
    result.recall_curve = [float(v) for v in curve / max(len(scored), 1)]
    result.misses = misses
    if budget_tokens is not None and system.index is not None and scored:
        result.selection = _selection(system, dataset, budget_tokens)
    return result


def _selection(system: System, dataset: Dataset, budget_tokens: int) -> dict[str, float]:
    index = system.index
    assert index is not None
    tokens, recall = [], []
    for q in (q for q in dataset.queries if q.relevant):
        sel = index.select(q.text, budget_tokens=budget_tokens, caller=system.caller)
        tokens.append(sel.tokens)
        needed = set(q.relevant)
        recall.append(len({dataset.label(n) for n in sel.names} & needed) / len(needed))
    total = sum(index.cost(i) for i in range(len(index)))
    return {
        "budget_tokens": budget_tokens,
        "tokens_per_turn": float(np.mean(tokens)),
        "recall": float(np.mean(recall)),
        "all_tools_tokens": total,
    }


def markdown(results: Sequence[Result], dataset: Dataset) -> str:
    """The results as Markdown tables: overall metrics with latency, then nDCG@10 and Complete@10
    per category."""
    head = ["system", *METRICS, "p50 µs", "p99 µs"]
    ranked = sum(1 for q in dataset.queries if q.relevant)
    lines = [f"Dataset `{dataset.name}`: {len(dataset.catalog):,} tools, {ranked:,} queries", ""]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [f"{r.overall[m]:.3f}" for m in METRICS] + [
            f"{r.latency_us.get('p50', 0):.0f}",
            f"{r.latency_us.get('p99', 0):.0f}",
        ]
        lines.append("| " + " | ".join([r.system, *cells]) + " |")
    cats = [c for c in dataset.categories() if all(c in r.by_category for r in results)]
    if len(cats) > 1:
        lines += [
            "",
            "nDCG@10 by category:",
            "",
            "| system | " + " | ".join(cats) + " |",
            "|" + "---|" * (len(cats) + 1),
        ]
        for r in results:
            lines.append("| " + " | ".join([r.system] + [f"{r.by_category[c]['nDCG@10']:.3f}" for c in cats]) + " |")
        lines += ["", "Complete@10 (every needed tool in the first 10) by category:", ""]
        lines += ["| system | " + " | ".join(cats) + " |", "|" + "---|" * (len(cats) + 1)]
        for r in results:
            lines.append("| " + " | ".join([r.system] + [f"{r.by_category[c]['C@10']:.3f}" for c in cats]) + " |")
    for r in results:
        if r.selection:
            s = r.selection
            lines += [
                "",
                f"{r.system} select(budget_tokens={s['budget_tokens']:.0f}): "
                f"{s['tokens_per_turn']:.0f} tokens per turn (all tools: {s['all_tools_tokens']:,.0f}), "
                f"recall of the needed tools {s['recall']:.3f}",
            ]
    return "\n".join(lines)


def to_json(results: Sequence[Result], dataset: Dataset, *, gate: Sequence[Any] = ()) -> str:
    """The results as JSON, with the relevance gate's rows (:class:`~toolsift.eval.gate.GateResult`)
    under ``"gate"`` when given."""
    ranked = sum(1 for q in dataset.queries if q.relevant)
    payload: dict[str, Any] = {"dataset": dataset.name, "tools": len(dataset.catalog), "queries": ranked}
    payload["results"] = [r.__dict__ for r in results]
    if gate:
        payload["gate"] = [dataclasses.asdict(g) for g in gate]
    return json.dumps(payload, indent=2)
