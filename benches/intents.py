"""Intent ranking (``Index(intents=...)``) on BFCL, off and on, side by side in one process.

Every BFCL single-turn request is searched (top 10) by two lexical indexes of the pooled
catalog that differ only in ``intents``; per category: nDCG@10, recall@10 and Complete@5/@10
(all needed tools present), and the mean time per search.

``--aws-pairs N`` measures the same at catalog scale instead: N pairs of the hand-written
requests of ``aws_requests.jsonl`` (seeded), each pair joined into one request of two sentences,
searched (top 10) over the AWS catalog (18,378 tools, every tool allowed); Complete@10 is the
share of pairs with a tool of each request in the top 10, beside each request's own R@10;
``--groups N ...`` adds the same searches made hierarchical (``search(groups=N)``: the N best
service groups first).

    python benches/intents.py [--aws-pairs 200 [--groups 2 3 5]]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import itertools
import json
import random
import statistics
import time
from pathlib import Path

import toolsift as ts
from toolsift.eval.datasets import load_bfcl
from toolsift.eval.metrics import score_query

METRICS = ("nDCG@10", "R@10", "C@5", "C@10")


def aws_pairs(n: int, groups: list[int]) -> None:
    from toolsift.catalogs import aws_catalog

    tools = [dataclasses.replace(t, permissions=()) for t in aws_catalog()]
    lines = Path(__file__).with_name("aws_requests.jsonl").read_text(encoding="utf-8").splitlines()
    requests = [json.loads(line) for line in lines if line.strip()]
    pairs = list(itertools.combinations(requests, 2))
    random.Random(0).shuffle(pairs)
    systems = {"off": ts.Index(tools, intents=False), "on": ts.Index(tools)}
    print(f"{len(tools)} tools, {len(requests)} requests, {min(n, len(pairs))} pairs")
    for name, index in systems.items():
        for g in [None, *groups]:
            alone = statistics.fmean(
                bool({h.tool.name for h in index.search(r["query"], k=10, groups=g)} & set(r["relevant"]))
                for r in requests
            )
            complete = []
            for a, b in pairs[:n]:
                text = a["query"][0].upper() + a["query"][1:] + ". " + b["query"]
                got = {h.tool.name for h in index.search(text, k=10, groups=g)}
                complete.append(bool(got & set(a["relevant"])) and bool(got & set(b["relevant"])))
            print(
                f"intents {name}, groups {g or 'flat'}: pairs C@10 {statistics.fmean(complete):.3f}, "
                f"each request alone R@10 {alone:.3f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--aws-pairs", type=int, default=0, help="pairs of AWS requests instead of BFCL")
    parser.add_argument("--groups", type=int, nargs="*", default=[], help="with --aws-pairs: also search(groups=N)")
    args = parser.parse_args()
    if args.aws_pairs:
        aws_pairs(args.aws_pairs, args.groups)
        return
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
