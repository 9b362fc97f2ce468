"""Throughput of select_many on one thread and on two, to show the GIL is released.

    python benches/threads.py [--tools 10000] [--seconds 3]

Prints selections per second for 1 and 2 threads and their ratio (2 cores: at most 2x).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from workloads import BUDGET, aws, zipf


def throughput(threads: int, seconds: float, run) -> float:  # type: ignore[no-untyped-def]
    done = [0] * threads
    stop = time.perf_counter() + seconds

    def work(slot: int) -> None:
        while time.perf_counter() < stop:
            done[slot] += run()

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return sum(done) / seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=10_000, help="zipf catalog size (0: the AWS catalog)")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    w = zipf(args.tools) if args.tools else aws()
    idx, queries = w.index, w.queries

    def run() -> int:
        return len(idx.select_many(queries, caller=w.caller, budget_tokens=BUDGET))

    one = throughput(1, args.seconds, run)
    two = throughput(2, args.seconds, run)
    print(f"{w.name}: 1 thread {one:,.0f} selections/s, 2 threads {two:,.0f} selections/s, ratio {two / one:.2f}x")


if __name__ == "__main__":
    main()
