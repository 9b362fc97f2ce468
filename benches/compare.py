"""Side-by-side timing of toolsift and its peers, in one process, in two cache states.

Every engine answers the same ``select``: the tools a caller holding half the permissions may use,
ranked for the query, packed into a 4,000-token budget. Both states are measured in one run:

* **warm**: each round runs every query on one engine in untimed passes for at least 50 ms, then
  once more, timed, then on the next engine (the engine order turns round after round), so an
  engine finds its own data in the caches, as in a loop of selections. One untimed pass is not
  enough: after another engine's calls (or cold calls) this VM takes several passes, some
  milliseconds, to get back to speed (toolsift at aws-100k, pass by pass after a round of cold
  calls: 72, 82, 60, 55, 53, 51, 49, 47, 47, 46, 45 µs a call, then 44-47);
* **cold**: before every call a 64 MiB buffer is written, which evicts the CPU caches (and the
  TLB), so each selection starts from main memory, as the one selection of an agent's turn does
  between model calls. The engines take turns query by query.

Prints per-query medians, p99, the ratio peer / toolsift for both states, and cost growth (time at
100k ÷ time at 10k).

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

EVICT = np.zeros((64 << 20) // 8)  # 64 MiB, more than the last-level cache
WARMUP_S = 0.05  # untimed passes before a warm pass, at least this long (see the module notes)


def evict() -> None:
    """Writes one word of every cache line of a buffer larger than the last-level cache."""
    EVICT[::8] += 1.0


def _timed(engine: Select, w: Workload, q: str) -> float:
    t0 = time.perf_counter_ns()
    engine(q, w.caller, BUDGET)
    return (time.perf_counter_ns() - t0) / 1e3


def measure(w: Workload, rounds: int) -> dict[str, dict[str, float]]:
    engines: dict[str, Select] = {}
    builds: dict[str, float] = {}
    for name, make in PEERS.items():
        t0 = time.perf_counter()
        engine = make(w)
        if engine is not None:
            engines[name], builds[name] = engine, time.perf_counter() - t0
    names = list(engines)
    warm: dict[str, list[float]] = {name: [] for name in names}
    cold: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:  # untimed passes first bring back what the other engines evicted
            t0 = time.perf_counter()
            while True:
                for q in w.queries:
                    engines[name](q, w.caller, BUDGET)
                if time.perf_counter() - t0 >= WARMUP_S:
                    break
            warm[name] += [_timed(engines[name], w, q) for q in w.queries]
        for q in w.queries:
            for name in order:
                evict()
                cold[name].append(_timed(engines[name], w, q))
    return {
        name: {
            "median": float(np.median(warm[name])),
            "p99": float(np.percentile(warm[name], 99)),
            "cold": float(np.median(cold[name])),
            "cold_p99": float(np.percentile(cold[name], 99)),
            "build_s": builds[name],
        }
        for name in names
    }


def rows(results: dict[str, dict[str, dict[str, float]]]) -> list[list[str]]:
    out = []
    for wname, engines in results.items():
        base = engines["toolsift"]
        for name, r in engines.items():
            out.append(
                [
                    wname,
                    name,
                    f"{r['median']:.1f}",
                    f"{r['p99']:.1f}",
                    f"{r['median'] / base['median']:.1f}×",
                    f"{r['cold']:.1f}",
                    f"{r['cold_p99']:.1f}",
                    f"{r['cold'] / base['cold']:.1f}×",
                    f"{r['build_s']:.2f}",
                ]
            )
    pairs = (("zipf-10k", "zipf-100k"), ("aws-10k", "aws-100k"))
    growth = [(a, b) for a, b in pairs if a in results and b in results]
    for a, b in growth:
        for name in results[b]:
            if name in results[a]:
                g = results[b][name]["median"] / results[a][name]["median"]
                gc = results[b][name]["cold"] / results[a][name]["cold"]
                out.append([f"growth {b} ÷ {a}", name, f"{g:.1f}×", "", "", f"{gc:.1f}×", "", "", ""])
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
    head = [
        "workload",
        "engine",
        "warm median µs",
        "warm p99 µs",
        "vs toolsift (warm)",
        "cold median µs",
        "cold p99 µs",
        "vs toolsift (cold)",
        "build s",
    ]
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
