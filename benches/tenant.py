"""Cost of tenant isolation: select with statistics="caller" vs "shared", same catalog, queries and
caller, interleaved in one process (the per-caller index is built once, then cached).

    python benches/tenant.py [--sizes 10000 100000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import toolsift as ts
from workloads import BUDGET, zipf


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print("| tools | shared µs (median / p99) | caller µs (median / p99) | ratio | first call (build) ms |")
    print("|---|---|---|---|---|")
    for n in args.sizes:
        w = zipf(n)
        shared, isolated = ts.Index(w.tools), ts.Index(w.tools, statistics="caller")
        t0 = time.perf_counter()
        isolated.select(w.queries[0], caller=w.caller, budget_tokens=BUDGET)
        first = (time.perf_counter() - t0) * 1e3
        times: dict[str, list[float]] = {"shared": [], "caller": []}
        for _ in range(args.rounds):
            for q in w.queries:
                for name, index in (("shared", shared), ("caller", isolated)):
                    t = time.perf_counter_ns()
                    index.select(q, caller=w.caller, budget_tokens=BUDGET)
                    times[name].append((time.perf_counter_ns() - t) / 1e3)
        s, c = (np.median(times[k]) for k in ("shared", "caller"))
        p = {k: np.percentile(v, 99) for k, v in times.items()}
        print(f"| {n:,} | {s:.0f} / {p['shared']:.0f} | {c:.0f} / {p['caller']:.0f} | {c / s:.2f}× | {first:.0f} |")


if __name__ == "__main__":
    main()
