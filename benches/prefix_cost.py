"""What prefix terms cost a selection: the same catalog indexed with the default `prefix_weight`
and with `prefix_weight=0` (words only), timed alternately in one process.

Each index answers every query of the workload (select, budget 4000, the workload's caller) in a
loop; the median over queries is taken per round, and the median of the rounds is printed with
the index's number of postings:

    python benches/prefix_cost.py [--workloads aws-10k aws-18k aws-100k zipf-10k zipf-100k]
"""

from __future__ import annotations

import argparse
import statistics
import time

import toolsift as ts
from workloads import BUDGET, NAMED, Workload

WORKLOADS = NAMED


def median_select_us(index: ts.Index, work: Workload) -> float:
    """Median over the workload's queries of one select, in µs."""
    times = []
    for q in work.queries:
        start = time.perf_counter_ns()
        index.select(q, caller=work.caller, budget_tokens=BUDGET)
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    print("| workload | with prefix terms µs | words only µs | ratio | postings with | postings without |")
    print("|---|---|---|---|---|---|")
    for name in args.workloads:
        work = WORKLOADS[name]()
        indexes = {"with": ts.Index(work.tools), "without": ts.Index(work.tools, prefix_weight=0)}
        rounds: dict[str, list[float]] = {key: [] for key in indexes}
        for _ in range(args.rounds):
            for key, index in indexes.items():
                median_select_us(index, work)  # warm the caches for this index
                rounds[key].append(median_select_us(index, work))
        w, wo = (statistics.median(rounds[key]) for key in ("with", "without"))
        postings = [indexes[key]._core.num_postings for key in ("with", "without")]
        print(f"| {name} | {w:.1f} | {wo:.1f} | {w / wo:.2f}× | {postings[0]:,} | {postings[1]:,} |", flush=True)


if __name__ == "__main__":
    main()
