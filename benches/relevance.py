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
from toolsift.eval.datasets import BFCL_IRRELEVANCE, BFCL_SINGLE_TURN, Dataset, LabelledQuery, load_bfcl
from toolsift.eval.gate import gate
from toolsift.eval.metrics import score_query


def row(data: Dataset, irrelevant: list[LabelledQuery], floor: float | None) -> dict[str, float]:
    pooled = ts.Index(data.catalog, min_evidence=floor)
    scores = []
    for q in data.queries:
        ranked = [data.label(h.tool.name) for h in pooled.search(q.text, k=10)]
        scores.append(score_query(ranked, set(q.relevant)))
    offered = gate(data, irrelevant, min_evidence=floor)  # what `toolsift eval --irrelevance` prints
    return {
        "pooled R@10": statistics.fmean(s["R@10"] for s in scores),
        "pooled nDCG@10": statistics.fmean(s["nDCG@10"] for s in scores),
        "offered: relevant answered": offered.answered,
        **{f"offered: {c} refused": v for c, v in offered.refused_by_category.items()},
        "offered: irrelevant refused": offered.refused,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--floors", type=float, nargs="*", default=[0.2, 0.3, 0.5, 0.7, 1.0])
    args = parser.parse_args()
    data = load_bfcl((*BFCL_SINGLE_TURN, *BFCL_IRRELEVANCE))
    irrelevant = [q for q in data.queries if not q.relevant]
    data.queries = [q for q in data.queries if q.relevant]
    print(f"{len(data.catalog)} tools; {len(data.queries)} relevant and {len(irrelevant)} irrelevant requests")
    rows = []
    for floor in [None, *args.floors]:
        start = time.perf_counter()
        rows.append({"min_evidence": "off" if floor is None else f"{floor:g}"} | row(data, irrelevant, floor))
        print(f"  min_evidence={floor}: {time.perf_counter() - start:.1f} s")
    head = list(rows[0])
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(v if isinstance(v, str) else f"{v:.3f}" for v in r.values()) + " |")


if __name__ == "__main__":
    main()
