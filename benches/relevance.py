"""The relevance gate (``Index(min_evidence=...)``) on BFCL: what it refuses, what it costs.

The catalog is BFCL's pooled functions with those of its two irrelevance categories
(``load_bfcl`` with ``BFCL_IRRELEVANCE``). Two settings, for each floor:

* **pooled**: every relevant request against the whole catalog (a caller who may use every
  tool): recall@10 and nDCG@10 of ``Index.search``, which drop when the gate refuses a request
  that a tool fits;
* **offered**: each request with only the functions BFCL offered with it (each tool requires
  a permission of its own and the caller holds those of the offered ones, so the scores are the
  pooled ones): for BFCL's irrelevance requests (none of the offered functions fits), the share
  that gets no tool at all; for the relevant requests, the share that still gets a needed tool.

Without the gate an irrelevant request already gets nothing when no offered tool shares a
word with it; the first row says how often that is.

    python benches/relevance.py [--floors 0.2 0.3 0.5 0.7 1.0]
"""

from __future__ import annotations

import argparse
import statistics
import time

import toolsift as ts
from toolsift.eval.datasets import BFCL_IRRELEVANCE, BFCL_SINGLE_TURN, Dataset, load_bfcl
from toolsift.eval.metrics import score_query


def own_permission(tool: ts.Tool) -> ts.Tool:
    return ts.Tool(tool.name, tool.description, tool.parameters, permissions=f"use:{tool.name}")


def row(data: Dataset, pooled: ts.Index, offered: ts.Index) -> dict[str, float]:
    relevant = [q for q in data.queries if q.relevant]
    scores = []
    for q in relevant:
        ranked = [data.label(h.tool.name) for h in pooled.search(q.text, k=10)]
        scores.append(score_query(ranked, set(q.relevant)))
    answered, refused = [], {c: [] for c in BFCL_IRRELEVANCE}
    for q in data.queries:
        caller = [f"use:{name}" for name in q.available]
        got = {data.label(h.tool.name) for h in offered.search(q.text, k=10, caller=caller)}
        if q.relevant:
            answered.append(bool(got & set(q.relevant)))
        else:
            refused[q.category].append(not got)
    every = [r for rs in refused.values() for r in rs]
    return {
        "pooled R@10": statistics.fmean(s["R@10"] for s in scores),
        "pooled nDCG@10": statistics.fmean(s["nDCG@10"] for s in scores),
        "offered: relevant answered": statistics.fmean(answered),
        **{f"offered: {c} refused": statistics.fmean(rs) for c, rs in refused.items()},
        "offered: irrelevant refused": statistics.fmean(every),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--floors", type=float, nargs="*", default=[0.2, 0.3, 0.5, 0.7, 1.0])
    args = parser.parse_args()
    data = load_bfcl((*BFCL_SINGLE_TURN, *BFCL_IRRELEVANCE))
    guarded = [own_permission(t) for t in data.catalog]
    print(
        f"{len(data.catalog)} tools; {sum(bool(q.relevant) for q in data.queries)} relevant and "
        f"{sum(not q.relevant for q in data.queries)} irrelevant requests"
    )
    rows = []
    for floor in [None, *args.floors]:
        start = time.perf_counter()
        pooled = ts.Index(data.catalog, min_evidence=floor)
        offered = ts.Index(guarded, min_evidence=floor)
        rows.append({"min_evidence": "off" if floor is None else f"{floor:g}"} | row(data, pooled, offered))
        print(f"  min_evidence={floor}: {time.perf_counter() - start:.1f} s")
    head = list(rows[0])
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(v if isinstance(v, str) else f"{v:.3f}" for v in r.values()) + " |")


if __name__ == "__main__":
    main()
