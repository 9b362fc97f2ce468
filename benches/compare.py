"""Side-by-side timing of toolsift and its peers, in one process, interleaved.

Every engine answers the same ``select``: the tools a caller holding half the permissions may use,
ranked for the query, packed into a 4,000-token budget. For each query the engines run one after
another, round after round, so that all see the same machine state. Prints per-query medians,
p99, the ratio peer / toolsift, and cost growth (time at 100k ÷ time at 10k).

    python benches/compare.py [--sizes 1000 10000 100000] [--aws-sizes 1000 10000 100000] [--rounds 5]
        [--no-aws] [--markdown]

Peers: the seed's reference select() (``benches/seedref``), bm25s, tantivy and rank_bm25 (see
``benches/peers.py``); a peer whose package is missing is left out.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from peers import PEERS, Select
from workloads import BUDGET, Workload, aws, aws_size, zipf


def measure(w: Workload, rounds: int) -> dict[str, dict[str, float]]:
    engines: dict[str, Select] = {}
    builds: dict[str, float] = {}
    for name, make in PEERS.items():
        t0 = time.perf_counter()
        engine = make(w)
        if engine is not None:
            engines[name], builds[name] = engine, time.perf_counter() - t0
    times: dict[str, list[float]] = {name: [] for name in engines}
    for q in w.queries:  # warm-up
        for engine in engines.values():
            engine(q, w.caller, BUDGET)
    for _ in range(rounds):
        for q in w.queries:
            for name, engine in engines.items():
                t0 = time.perf_counter_ns()
                engine(q, w.caller, BUDGET)
                times[name].append((time.perf_counter_ns() - t0) / 1e3)
    return {
        name: {"median": float(np.median(t)), "p99": float(np.percentile(t, 99)), "build_s": builds[name]}
        for name, t in times.items()
    }


def rows(results: dict[str, dict[str, dict[str, float]]]) -> list[list[str]]:
    out = []
    for wname, engines in results.items():
        base = engines["toolsift"]["median"]
        for name, r in engines.items():
            ratio = "1.0×" if name == "toolsift" else f"{r['median'] / base:.1f}×"
            out.append([wname, name, f"{r['median']:.1f}", f"{r['p99']:.1f}", ratio, f"{r['build_s']:.2f}"])
    pairs = (("zipf-10k", "zipf-100k"), ("aws-10k", "aws-100k"))
    growth = [(a, b) for a, b in pairs if a in results and b in results]
    for a, b in growth:
        for name in results[b]:
            if name in results[a]:
                g = results[b][name]["median"] / results[a][name]["median"]
                out.append([f"growth {b} ÷ {a}", name, f"{g:.1f}×", "", "", ""])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--aws-sizes", type=int, nargs="*", default=[1_000, 10_000, 100_000])
    parser.add_argument("--no-aws", action="store_true", help="skip the botocore workloads")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    workloads = [lambda n=n: zipf(n) for n in args.sizes]
    if not args.no_aws:  # sampled below the catalog size, the whole catalog, repeated above it
        sizes = sorted([*args.aws_sizes, None], key=lambda n: aws_size() if n is None else n)
        workloads += [lambda n=n: aws(n) for n in sizes]
    results = {}
    for make in workloads:
        w = make()
        results[w.name] = measure(w, args.rounds)
    head = ["workload", "engine", "median µs", "p99 µs", "vs toolsift (median)", "build s"]
    machine = f"{platform.machine()}, {platform.system()}, Python {platform.python_version()}"
    note = f"select(), budget {BUDGET}, half the permissions, {args.rounds} rounds, {machine}"
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for row in rows(results):
            print("| " + " | ".join(row) + " |")
        print(f"\n{note}")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=note)
    for h in head:
        table.add_column(h, justify="left" if h in ("workload", "engine") else "right")
    for row in rows(results):
        table.add_row(*row)
    Console().print(table)


if __name__ == "__main__":
    main()
