"""Intent ranking (``Index(intents=...)``) on BFCL, off and on, side by side in one process.

Every BFCL single-turn request is searched (top 10) by two lexical indexes of the pooled
catalog that differ only in ``intents``; per category: nDCG@10, recall@10 and Complete@5/@10
(all needed tools present), and the mean time per search.

    python benches/intents.py
"""

from __future__ import annotations

import collections
import statistics
import time

import toolsift as ts
from toolsift.eval.datasets import load_bfcl
from toolsift.eval.metrics import score_query

METRICS = ("nDCG@10", "R@10", "C@5", "C@10")


def main() -> None:
    data = load_bfcl()
    systems = {"off": ts.Index(data.catalog, intents=False), "on": ts.Index(data.catalog)}
    by: dict[str, dict[str, list[dict[str, float]]]] = {name: collections.defaultdict(list) for name in systems}
    took = dict.fromkeys(systems, 0.0)
    for q in data.queries:
        for name, index in systems.items():
            start = time.perf_counter()
            hits = index.search(q.text, k=10)
            took[name] += time.perf_counter() - start
            s = score_query([data.label(h.tool.name) for h in hits], set(q.relevant))
            by[name][q.category].append(s)
            by[name]["all"].append(s)
    print(f"{len(data.catalog)} tools, {len(data.queries)} requests")
    head = ["category", "n"] + [f"{m} off → on" for m in METRICS]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for category in sorted(by["off"], key=lambda c: (c == "all", c)):
        cells = [category, str(len(by["off"][category]))]
        for m in METRICS:
            off, on = (statistics.fmean(x[m] for x in by[name][category]) for name in ("off", "on"))
            cells.append(f"{off:.3f} → {on:.3f}")
        print("| " + " | ".join(cells) + " |")
    n = len(data.queries)
    print(f"mean µs per search: off {took['off'] / n * 1e6:.0f}, on {took['on'] / n * 1e6:.0f}")


if __name__ == "__main__":
    main()
