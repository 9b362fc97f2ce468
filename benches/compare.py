"""Side-by-side timing of toolsift and the seed's reference select(), in one process, interleaved.

For every workload and query, each engine selects with the same caller and a 4,000-token budget;
the two calls alternate so that both see the same machine state. Prints per-query medians, p99 and
the ratio reference / toolsift, as a table (and as Markdown with ``--markdown``).

    python benches/compare.py [--sizes 1000 10000 100000] [--rounds 5] [--markdown]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from workloads import BUDGET, Workload, aws, zipf


def _time(fn, query: str, caller: list[str]) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter_ns()
    fn(query, caller, BUDGET)
    return (time.perf_counter_ns() - t0) / 1e3


def measure(w: Workload, rounds: int) -> dict[str, float]:
    t0 = time.perf_counter()
    idx = w.index
    t1 = time.perf_counter()
    seed = w.seed
    t2 = time.perf_counter()
    ours, ref = [], []
    for q in w.queries:  # warm-up
        idx.select(q, w.caller, BUDGET)
        seed.select(q, w.caller, BUDGET)
    for _ in range(rounds):
        for q in w.queries:
            ours.append(_time(idx.select, q, w.caller))
            ref.append(_time(seed.select, q, w.caller))
    a, b = np.array(ours), np.array(ref)
    return {
        "tools": len(w.tools),
        "build_s": t1 - t0,
        "seed_build_s": t2 - t1,
        "median": float(np.median(a)),
        "p99": float(np.percentile(a, 99)),
        "seed_median": float(np.median(b)),
        "seed_p99": float(np.percentile(b, 99)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-aws", action="store_true")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    workloads = [lambda n=n: zipf(n) for n in args.sizes] + ([] if args.no_aws else [aws])
    rows = []
    for make in workloads:
        w = make()
        rows.append((w.name, measure(w, args.rounds)))
    head = [
        "workload",
        "tools",
        "toolsift median µs",
        "toolsift p99 µs",
        "seed ref median µs",
        "seed ref p99 µs",
        "speed-up (median)",
    ]
    body = [
        [
            name,
            f"{r['tools']:,}",
            f"{r['median']:.1f}",
            f"{r['p99']:.1f}",
            f"{r['seed_median']:.1f}",
            f"{r['seed_p99']:.1f}",
            f"{r['seed_median'] / r['median']:.1f}×",
        ]
        for name, r in rows
    ]
    machine = f"{platform.machine()}, {platform.processor() or 'cpu'}, Python {platform.python_version()}"
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in body:
            print("| " + " | ".join(row) + " |")
        print(f"\nselect(), budget {BUDGET} tokens, caller holds half the permissions; {args.rounds} rounds; {machine}")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"select(), budget {BUDGET}, half the permissions, {args.rounds} rounds — {machine}")
    for h in head:
        table.add_column(h, justify="left" if h == "workload" else "right")
    for row in body:
        table.add_row(*row)
    Console().print(table)


if __name__ == "__main__":
    main()
