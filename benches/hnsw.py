"""HNSW parameters by measurement: recall@10 of the graph against exact search, and time per
query, on real embeddings (the default embedder over the AWS demo catalog, 10,000 tools).

    python benches/hnsw.py [--tools 10000] [--vectors FILE.npy --queries FILE.npy]

Without files, embeds the catalog (a few minutes with numpy) and uses the first sentence of every
37th tool's description as queries. Prints one row per (M, ef_construction, ef): recall@10 with no
filter and with a caller allowed half the tools, and microseconds per query.

``--shares`` is about callers allowed part of a large catalog: clustered random vectors
(``--tools``, default 50,000, 384 dimensions, 500 clusters) searched for the hybrid's depth of
100, by the shipped rule (exact below ``exact_below`` allowed tools or an ``exact_fraction``
share, else the filtered graph) and by the graph alone (exact only under a tenth, the rule until
2026-12-03), one graph for both: recall@100 against exact search and milliseconds per query.

    python benches/hnsw.py --shares [--tools 50000]
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from toolsift.dense import DenseIndex


def load(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    if args.vectors and args.queries:
        return np.load(args.vectors), np.load(args.queries)
    import toolsift as ts
    from toolsift.catalogs import aws_catalog
    from toolsift.text import dense_text

    tools = list(aws_catalog())
    model = ts.default_embedder()
    return model.embed([dense_text(t) for t in tools]), model.embed([t.description.split(".")[0] for t in tools[::37]])


def shares(n: int) -> None:
    dim, k = 384, 100
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((500, dim)).astype(np.float32)
    vectors = centres[rng.integers(0, 500, n)] + 0.6 * rng.standard_normal((n, dim)).astype(np.float32)
    queries = centres[rng.integers(0, 500, 50)] + 0.6 * rng.standard_normal((50, dim)).astype(np.float32)
    t0 = time.perf_counter()
    index = DenseIndex(vectors)
    print(f"{n} tools, {len(queries)} queries, k={k}; graph built in {time.perf_counter() - t0:.1f} s")
    exact = DenseIndex(vectors, exact_below=10**9)
    shipped = (index.exact_below, index.exact_fraction)
    print("| share allowed | shipped recall | shipped ms | graph recall | graph ms | exact ms |")
    print("|---|---|---|---|---|---|")
    for share in (0.8, 0.5, 0.3, 0.2, 0.15, 0.1, 0.05):
        mask = rng.random(n) < share
        t0 = time.perf_counter()
        truth = [set(exact.search(q, k, mask)[0].tolist()) for q in queries]
        exact_ms = (time.perf_counter() - t0) / len(queries) * 1e3
        row = []
        for rule in (shipped, (0, 0.1)):
            index.exact_below, index.exact_fraction = rule
            t0 = time.perf_counter()
            found = [set(index.search(q, k, mask)[0].tolist()) for q in queries]
            ms = (time.perf_counter() - t0) / len(queries) * 1e3
            row.append(f"{np.mean([len(a & b) / k for a, b in zip(found, truth, strict=True)]):.3f} | {ms:.2f}")
        index.exact_below, index.exact_fraction = shipped
        print(f"| {share:.2f} | {' | '.join(row)} | {exact_ms:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int)
    parser.add_argument("--vectors")
    parser.add_argument("--queries")
    parser.add_argument("--shares", action="store_true", help="callers allowed part of a large catalog")
    args = parser.parse_args()
    if args.shares:
        return shares(args.tools or 50_000)
    args.tools = args.tools or 10_000
    vectors, queries = load(args)
    vectors = vectors[: args.tools]
    exact = DenseIndex(vectors, exact_below=10**9)
    half = np.random.default_rng(1).random(len(vectors)) < 0.5
    truth = {f: [set(exact.search(q, 10, m)[0].tolist()) for q in queries] for f, m in (("all", None), ("half", half))}
    print(f"{len(vectors)} tools, {len(queries)} queries")
    print("| M | ef_construction | ef | recall@10 | recall@10 (half allowed) | µs/query | µs/query (half) | build s |")
    print("|---|---|---|---|---|---|---|---|")
    for m, efc, ef in itertools.product((8, 16, 32), (100, 200), (16, 32, 64, 128)):
        t0 = time.perf_counter()
        graph = DenseIndex(vectors, M=m, ef_construction=efc, ef=ef, exact_below=0)
        build = time.perf_counter() - t0
        row = []
        for f, mask in (("all", None), ("half", half)):
            t0 = time.perf_counter()
            found = [set(graph.search(q, 10, mask)[0].tolist()) for q in queries]
            us = (time.perf_counter() - t0) / len(queries) * 1e6
            recall = np.mean([len(a & b) / 10 for a, b in zip(found, truth[f], strict=True)])
            row.append((recall, us))
        (r_all, us_all), (r_half, us_half) = row
        print(f"| {m} | {efc} | {ef} | {r_all:.3f} | {r_half:.3f} | {us_all:.0f} | {us_half:.0f} | {build:.1f} |")
    t0 = time.perf_counter()
    for q in queries:
        exact.search(q, 10)
    print(f"exact search: {(time.perf_counter() - t0) / len(queries) * 1e6:.0f} µs/query")


if __name__ == "__main__":
    main()
