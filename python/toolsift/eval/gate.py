"""The relevance gate (``Index(min_evidence=...)``) on a dataset's irrelevant requests.

An irrelevant request is one no tool fits (``relevant`` empty: BFCL's ``irrelevance`` and
``live_irrelevance`` categories, or a queries file's rows with ``"relevant": []``). Each request
is offered the tools its dataset offered with it (:attr:`LabelledQuery.available`; every tool
when it says none): the index gives each tool a permission of its own and the request's caller
holds those of the offered tools, so scores are those of the whole catalog. Reported: the share
of irrelevant requests given no tool at all (refused), and of relevant requests still given a
needed tool (answered). The recall a gate costs over the whole catalog is the main table's
(``toolsift eval --min-evidence X`` runs toolsift with and without it).
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from typing import Any

from ..index import Index
from .datasets import Dataset, LabelledQuery

PERMISSION = "offered:"
"""Prefix of the permission each tool gets (``offered:<tool name>``)."""


@dataclass
class GateResult:
    """What a gate setting refuses and keeps, in the offered setting."""

    min_evidence: float | None
    refused: float
    """Share of the irrelevant requests given no tool."""
    refused_by_category: dict[str, float]
    answered: float
    """Share of the relevant requests given at least one needed tool in the first 10."""
    irrelevant: int
    relevant: int


def gate(dataset: Dataset, irrelevant: list[LabelledQuery], **index_options: Any) -> GateResult:
    """Searches (top 10) every relevant query of ``dataset`` and every query of ``irrelevant``
    among its offered tools, with an index of ``index_options`` (``min_evidence`` among them)."""
    offers = any(q.available for q in (*dataset.queries, *irrelevant))
    # without any request's offered tools, every request is offered every tool: no permissions
    # to check (a caller holding one per tool costs 50 times a search at 100k tools)
    offered_index = Index(
        [dataclasses.replace(t, permissions=(PERMISSION + t.name,) if offers else ()) for t in dataset.catalog],
        **index_options,
    )
    every = [PERMISSION + t.name for t in dataset.catalog] if offers else None

    def found(q: LabelledQuery) -> set[str]:
        caller = [PERMISSION + name for name in q.available] if q.available else every
        return {dataset.label(h.tool.name) for h in offered_index.search(q.text, k=10, caller=caller)}

    answered = [bool(found(q) & set(q.relevant)) for q in dataset.queries if q.relevant]
    refused: dict[str, list[bool]] = {}
    for q in irrelevant:
        refused.setdefault(q.category, []).append(not found(q))
    flat = [r for rs in refused.values() for r in rs]
    return GateResult(
        index_options.get("min_evidence"),
        statistics.fmean(flat) if flat else 0.0,
        {c: statistics.fmean(rs) for c, rs in refused.items()},
        statistics.fmean(answered) if answered else 0.0,
        len(flat),
        len(answered),
    )


def markdown(results: list[GateResult]) -> str:
    """One row per gate setting: requests refused (per category) and relevant ones answered."""
    cats = list(dict.fromkeys(c for r in results for c in r.refused_by_category))
    head = ["min_evidence", "irrelevant refused", *(f"{c} refused" for c in cats), "relevant answered"]
    n = results[0] if results else None
    lines = [
        "",
        f"Relevance gate: {n.irrelevant if n else 0:,} irrelevant and {n.relevant if n else 0:,} relevant "
        "requests, each offered its dataset's tools:",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in results:
        cells = ["off" if r.min_evidence is None else f"{r.min_evidence:g}", f"{r.refused:.3f}"]
        cells += [f"{r.refused_by_category.get(c, 0.0):.3f}" for c in cats] + [f"{r.answered:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
