"""Index build time, snapshot size and load time at 100k tools (issue: build <= 1 s, <= 30 MiB).

For each workload (default: zipf-100k and the botocore catalog repeated to 100k): the core build
from Python (`_core.Index` over the tools' field texts, best of 3), the core snapshot's size and
bytes per posting, the core load (best of 3) and a whole-file `Index.load` (best of 3):

    python benches/build_size.py [--workloads zipf-100k aws-100k]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import toolsift as ts
from toolsift import _core
from toolsift.text import field_params, tool_fields
from workloads import aws, zipf

WORKLOADS: dict[str, Callable[[], object]] = {
    "zipf-10k": lambda: zipf(10_000),
    "zipf-100k": lambda: zipf(100_000),
    "aws-10k": lambda: aws(10_000),
    "aws-100k": lambda: aws(100_000),
}


def best_of(n: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(name: str) -> str:
    """One table row for workload ``name``."""
    tools = list(WORKLOADS[name]().tools)  # type: ignore[attr-defined]
    columns = [list(c) for c in zip(*(tool_fields(t) for t in tools), strict=True)]
    weights, bs = field_params(None, None)
    perms = [list(t.permissions) for t in tools]
    costs = [t.cost_tokens or 1 for t in tools]
    core = [t.core for t in tools]
    built: list[_core.Index] = []
    build = best_of(3, lambda: built.append(_core.Index(columns, weights, bs, perms, costs, core)))
    data = built[-1].to_bytes()
    load = best_of(3, lambda: _core.Index.from_bytes(data))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "index.toolsift"
        ts.Index(tools).save(path)
        file_load = best_of(3, lambda: ts.Index.load(path))
    postings = built[-1].num_postings
    return (
        f"| {name} | {len(tools):,} | {postings:,} | {build:.2f} | {len(data) / 1e6:.1f} | "
        f"{len(data) / 2**20:.1f} | {len(data) / postings:.1f} | {load * 1000:.0f} | {file_load:.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", nargs="+", default=["zipf-100k", "aws-100k"], choices=sorted(WORKLOADS))
    args = parser.parse_args()
    print("| workload | tools | postings | core build s | snapshot MB | MiB | B/posting | core load ms | file load s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.workloads:
        print(measure(name), flush=True)


if __name__ == "__main__":
    main()
