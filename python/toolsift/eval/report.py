"""The evaluation as one HTML page: ``toolsift eval … --report report.html``.

Charts (matplotlib, inline SVG): Recall@k for k = 1 .. 20 per system, nDCG@10 per category per
system, and tokens of tool definitions sent per turn against catalog size (:func:`token_curve`:
every tool, toolsift's budgeted selection, and ``tool_search``), then the overall table and the
misses of the first system. See :mod:`toolsift.report` for what makes the page self-contained and
byte-for-byte reproducible; latencies, which change from run to run, stay in the terminal table
and the ``--json`` file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..assemble import default_token_count
from ..index import Index
from ..plan import CALL, SEARCH
from ..registry import Catalog
from ..report import chart_style, codes, escape, figure, new_figure, page, table
from ..tiers import Toolbox, ToolTierOptions
from .datasets import Dataset
from .metrics import METRICS
from .runner import SHORTLIST, Result

SIZES = (10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000)
"""Catalog sizes of the token curve (those below the dataset's size, then the whole catalog)."""

CURVE_QUERIES = 200
"""Queries per catalog size for the token curve, evenly spaced over the dataset."""

MISSES_SHOWN = 200
"""Rows of the misses table (the count above it says how many there are in all)."""


@dataclass(frozen=True)
class TokenCurve:
    """Mean tokens of tool definitions per turn at each catalog size.

    ``all_tools``: every definition, every turn. ``selection``: toolsift's ``select(query,
    budget_tokens=budget_tokens)``. ``tool_search``: the tools array of a :class:`~toolsift.Toolbox` with
    default tiers (core tools, ``tool_search`` with its listing of the others, ``call_tool``)
    plus the definitions one ``tool_search`` call returns.
    """

    sizes: tuple[int, ...]
    all_tools: tuple[float, ...]
    selection: tuple[float, ...]
    tool_search: tuple[float, ...]
    budget_tokens: int


def _spread(n: int, count: int) -> list[int]:
    """``count`` positions spread evenly over ``range(n)`` (all of them when ``count >= n``)."""
    return sorted({int(i) for i in np.linspace(0, n - 1, min(count, n)).round()}) if n else []


def token_curve(dataset: Dataset, budget_tokens: int) -> TokenCurve:
    """Tokens per turn on sub-catalogs of ``dataset`` of each of :data:`SIZES` (tools spread
    evenly over the registry, so each size keeps the catalog's mix), for up to
    :data:`CURVE_QUERIES` of its queries; the caller may use every tool. Tools named like the
    meta-tools (``tool_search``, ``call_tool``), which a toolbox refuses, are left out."""
    n = len(dataset.catalog)
    sizes = (*(s for s in SIZES if s < n), n)
    texts = [dataset.queries[i].text for i in _spread(len(dataset.queries), CURVE_QUERIES)]
    every, chosen, searched = [], [], []
    for size in sizes:
        tools = (dataset.catalog[i] for i in _spread(n, size))
        index = Index(Catalog(t for t in tools if t.name not in (SEARCH, CALL)))  # a toolbox refuses those
        caller = tuple(index.permissions())
        every.append(float(sum(index.cost(i) for i in range(len(index)))))
        selections = index.select_many(texts, caller=caller, budget_tokens=budget_tokens)
        chosen.append(float(np.mean([s.tokens for s in selections])) if texts else 0.0)
        box = Toolbox(index, tiers=ToolTierOptions(), caller=caller)
        array = sum(default_token_count(t["function"]) for t in box.tools())
        found = [default_token_count([t.definition() for t in box.search_tools({"query": q})]) for q in texts]
        searched.append(float(array + (np.mean(found) if found else 0.0)))
    return TokenCurve(sizes, tuple(every), tuple(chosen), tuple(searched), budget_tokens)


def _recall_chart(results: Sequence[Result]) -> str:
    fig = new_figure(6.4, 3.6)
    ax = fig.add_subplot()
    for r in results:
        ax.plot(range(1, len(r.recall_curve) + 1), r.recall_curve, marker="o", markersize=3, label=r.system)
    ax.set(xlabel="k (tools shown)", ylabel="mean Recall@k", ylim=(0, 1), xticks=[1, 5, 10, 15, 20])
    ax.axvline(SHORTLIST, color="#999", linewidth=0.8, linestyle=":")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return figure(fig, "recall", f"Recall@k per system; the dotted line is tool_search's default k={SHORTLIST}.")


def _category_chart(results: Sequence[Result], categories: Sequence[str]) -> str:
    fig = new_figure(6.4, max(2.4, 0.32 * len(categories) * max(len(results), 1) ** 0.5 + 1))
    ax = fig.add_subplot()
    height = 0.8 / max(len(results), 1)
    rows = np.arange(len(categories))
    for j, r in enumerate(results):
        values = [r.by_category.get(c, {}).get("nDCG@10", 0.0) for c in categories]
        ax.barh(rows + j * height, values, height, label=r.system)
    ax.set(yticks=rows + height * (len(results) - 1) / 2, yticklabels=categories, xlabel="nDCG@10", xlim=(0, 1))
    ax.invert_yaxis()
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return figure(fig, "ndcg", "nDCG@10 per query category, per system.")


def _token_chart(curve: TokenCurve) -> str:
    fig = new_figure(6.4, 3.6)
    ax = fig.add_subplot()
    ax.plot(curve.sizes, curve.all_tools, marker="o", markersize=3, label="all tools, every turn")
    ax.plot(
        curve.sizes,
        curve.selection,
        marker="o",
        markersize=3,
        label=f"toolsift select (budget {curve.budget_tokens:,})",
    )
    ax.plot(curve.sizes, curve.tool_search, marker="o", markersize=3, label="tool_search + call_tool")
    ax.set(xscale="log", yscale="log", xlabel="tools in the catalog", ylabel="definition tokens per turn")
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="upper left", fontsize=8)
    saved = 1 - curve.tool_search[-1] / curve.all_tools[-1] if curve.all_tools[-1] else 0.0
    return figure(
        fig,
        "tokens",
        f"Tokens of tool definitions per turn as the catalog grows (tools spread evenly over the registry). "
        f"At {curve.sizes[-1]:,} tools, tool_search sends {saved:.1%} fewer than all tools.",
    )


def html_report(results: Sequence[Result], dataset: Dataset, curve: TokenCurve | None = None) -> str:
    """The evaluation of ``results`` on ``dataset`` as one self-contained HTML page."""
    lead = f"Dataset {dataset.name}: {len(dataset.catalog):,} tools, {len(dataset.queries):,} queries"
    head = ["system", *METRICS]
    rows = [[r.system, *(f"{r.overall[m]:.3f}" for m in METRICS)] for r in results]
    with chart_style():
        charts = [_recall_chart(results)]
        ranked = [c for c in dataset.categories() if any(c in r.by_category for r in results)]
        if len(ranked) > 1:
            charts.append(_category_chart(results, ranked))
        if curve is not None:
            charts.append(_token_chart(curve))
    body = ["<h2>Overall</h2>", table(head, rows, numeric=range(1, len(head))), '<div class="grid">', *charts, "</div>"]
    if results:
        first = results[0]
        shown = first.misses[:MISSES_SHOWN]
        body += [
            f"<h2>Misses of {escape(first.system)}</h2>",
            f"<p>{len(first.misses):,} of {len(dataset.queries):,} queries did not get every needed tool in the "
            f"first {SHORTLIST}" + (f"; the first {len(shown)} in dataset order:" if shown else ".") + "</p>",
            table(
                ["request", "needed", "missing", "offered instead"],
                ((m["query"], codes(m["needed"]), codes(m["missing"]), codes(m["offered"])) for m in shown),
            ),
        ]
    return page(f"toolsift eval: {dataset.name}", lead, body)
