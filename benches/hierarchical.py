"""Hierarchical selection against flat selection on BFCL: recall of the needed tools within the
budget, tokens used and time per query, for ``groups`` = none (flat), 1, 2, 3 and 5.

Groups are the default ``group_by`` (the namespace of the name). BFCL's names mostly have none
(about 60 % of its tools fall in one ``other`` group), so this shows what the step costs where the
catalog has little structure; catalogs of servers or categories are what it is for.

    python benches/hierarchical.py [--budgets 1000 2000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import toolsift as ts
from toolsift.eval.datasets import load_bfcl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[1000, 2000])
    args = parser.parse_args()
    data = load_bfcl()
    index = ts.Index(data.catalog)
    print(f"BFCL: {len(data.catalog):,} tools, {len(index.groups()):,} groups, {len(data.queries):,} queries")
    print("| budget | groups | recall | tokens per turn | µs per query |")
    print("|---|---|---|---|---|")
    for budget in args.budgets:
        for groups in (None, 1, 2, 3, 5):
            recall, tokens = [], []
            start = time.perf_counter()
            for q in data.queries:
                sel = index.select(q.text, budget_tokens=budget, groups=groups)
                found = {data.label(n) for n in sel.names}
                recall.append(len(found & set(q.relevant)) / len(q.relevant))
                tokens.append(sel.tokens)
            us = (time.perf_counter() - start) / len(data.queries) * 1e6
            label = "flat" if groups is None else str(groups)
            print(f"| {budget:,} | {label} | {np.mean(recall):.3f} | {np.mean(tokens):,.0f} | {us:.0f} |")


if __name__ == "__main__":
    main()
