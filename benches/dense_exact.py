"""The exact dense search's product, numpy's BLAS against the core's loop, inside hybrid requests.

Each BFCL request is searched twice by one hybrid index (MiniLM onnx fp32, tool vectors computed
once, the query cache off so that every search embeds its query), once with the exact product
done by numpy (``vectors @ q``, which wakes its BLAS threads) and once by
``toolsift._core.dot_rows`` (the calling thread only), in alternating blocks of ``--block``
requests (the BLAS threads disturb the request after theirs, so the two must not alternate
request by request). Prints the p50 of each and the ratio; the rankings must be the same.

    python benches/dense_exact.py [--requests 600] [--block 50]
"""

from __future__ import annotations

import argparse
import statistics
import time

from embedders import Prefilled  # benches/ is on the path when a script there runs

import toolsift as ts
import toolsift.dense
import toolsift.hybrid
from toolsift.eval.datasets import load_bfcl
from toolsift.text import dense_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--block", type=int, default=50)
    args = parser.parse_args()
    data = load_bfcl()
    embedder = ts.default_embedder()
    texts = [dense_text(t) for t in data.catalog]
    toolsift.hybrid.QUERY_CACHE = 0
    index = ts.Index(data.catalog, embedder=Prefilled(embedder, texts, embedder.embed(texts)))
    core = toolsift.dense.dot_rows
    products = {"numpy": lambda m, q: m @ q, "core": core}
    times: dict[str, list[float]] = {name: [] for name in products}
    found: dict[str, list[list[str]]] = {name: [] for name in products}
    queries = [q.text for q in data.queries][: args.requests]
    for start in range(0, len(queries), args.block):
        block = queries[start : start + args.block]
        order = list(products) if start // args.block % 2 == 0 else list(reversed(products))
        for name in order:
            toolsift.dense.dot_rows = products[name]
            for query in block:
                started = time.perf_counter()
                found[name].append([h.tool.name for h in index.search(query, k=10)])
                times[name].append(time.perf_counter() - started)
    same = sum(a == b for a, b in zip(found["numpy"], found["core"], strict=True))
    toolsift.dense.dot_rows = core
    a, b = (statistics.median(times[n]) * 1e3 for n in ("numpy", "core"))
    print(f"{len(queries)} BFCL requests, hybrid search (k=10), MiniLM onnx fp32, {len(data.catalog):,} tools exact")
    print(f"| product | request p50 ms |\n|---|---|\n| numpy (BLAS) | {a:.2f} |\n| core loop | {b:.2f} |")
    print(f"core / numpy: {b / a:.2f}; same top 10: {same}/{len(queries)}")


if __name__ == "__main__":
    main()
