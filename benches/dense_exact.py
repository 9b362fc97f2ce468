"""Hybrid requests on BFCL, two ways of one step side by side in one process.

``--compare product`` (the default): the exact dense search's product, numpy's BLAS (``vectors
@ q``, which wakes its BLAS threads, and the k best picked by numpy) against the core's
``toolsift._core.top_rows`` (the calling thread only), in one hybrid index (MiniLM onnx fp32).
``--compare steps``: the k best rows and the fusion in numpy (the core's product, then numpy's
partition and sort, and :func:`toolsift.fusion.fuse_numpy`) against the core's ``top_rows`` and
``fuse``, the same index. ``--compare query``: the query embedded by the float32 session
(``default_embedder()``) against the int8 one (``default_embedder("int8")``), two indexes over
the same tool vectors (both kinds embed tools alike, in float32); the encoder alone is timed too.

Tool vectors are computed once and the query cache is off, so that every search embeds its
query. The two sides run in alternating blocks of ``--block`` requests (the BLAS or onnxruntime
threads of one disturb the request after theirs, so they must not alternate request by
request). Prints the p50 of each, the ratio and how many requests get the same top 10.
``--every N`` takes every N-th BFCL request (every category, long live requests included)
instead of the first ones (the dataset begins with short simple_python requests).

    python benches/dense_exact.py [--compare product|steps|query] [--requests 600] [--every 1] [--block 50]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
from embedders import Prefilled  # benches/ is on the path when a script there runs

import toolsift as ts
import toolsift._core
import toolsift.dense
import toolsift.fusion
import toolsift.hybrid
from toolsift.eval.datasets import load_bfcl
from toolsift.text import dense_text

Side = tuple[Callable[[], None], ts.Index, ts.Embedder]
"""What a block of one side sets up first, the index it searches, the embedder of its queries."""


def numpy_top(product: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., object]:
    """``top_rows`` with the k best picked by numpy, as before the core picked them."""

    def top(matrix: np.ndarray, q: np.ndarray, k: int, allowed: np.ndarray | None = None) -> object:
        scores = product(matrix, q)
        ids = np.arange(len(scores)) if allowed is None else np.flatnonzero(allowed)
        if allowed is not None:
            scores = scores[ids]
        if k < len(ids):  # the k best and every tool tied with the k-th, then sorted
            keep = scores >= np.partition(scores, len(scores) - k)[len(scores) - k]
            ids, scores = ids[keep], scores[keep]
        order = np.lexsort((ids, -scores))[:k]
        return ids[order].astype(np.uint32), scores[order]

    return top


def sides(compare: str, catalog: ts.Catalog) -> dict[str, Side]:
    texts = [dense_text(t) for t in catalog]
    kinds = ("quality", "int8") if compare == "query" else ("quality",)
    embedders = {k: ts.default_embedder(k) for k in kinds}
    vectors = embedders["quality"].embed(texts)
    indexes = {k: ts.Index(catalog, embedder=Prefilled(e, texts, vectors)) for k, e in embedders.items()}
    if compare == "query":
        return {k: (lambda: None, indexes[k], embedders[k]) for k in kinds}
    shipped = (toolsift.dense.top_rows, toolsift.hybrid.fuse_arrays)

    def use(top: Callable[..., object], fuse: Callable[..., object] = shipped[1]) -> Callable[[], None]:
        return lambda: (setattr(toolsift.dense, "top_rows", top), setattr(toolsift.hybrid, "fuse_arrays", fuse))

    index, embedder = indexes["quality"], embedders["quality"]
    if compare == "steps":
        numpy_side = use(numpy_top(toolsift._core.dot_rows), toolsift.fusion.fuse_numpy)
        return {"numpy steps": (numpy_side, index, embedder), "core steps": (use(shipped[0]), index, embedder)}
    return {
        "numpy (BLAS)": (use(numpy_top(lambda m, q: m @ q)), index, embedder),
        "core loop": (use(shipped[0]), index, embedder),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", choices=("product", "steps", "query"), default="product")
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--every", type=int, default=1, help="every N-th BFCL request")
    parser.add_argument("--block", type=int, default=50)
    args = parser.parse_args()
    data = load_bfcl()
    toolsift.hybrid.QUERY_CACHE = 0
    shipped = (toolsift.dense.top_rows, toolsift.hybrid.fuse_arrays)
    runs = sides(args.compare, data.catalog)
    request: dict[str, list[float]] = {name: [] for name in runs}
    encoder: dict[str, list[float]] = {name: [] for name in runs}
    found: dict[str, list[list[str]]] = {name: [] for name in runs}
    queries = [q.text for q in data.queries][:: args.every][: args.requests]
    for start in range(0, len(queries), args.block):
        for name in list(runs) if start // args.block % 2 == 0 else list(reversed(runs)):
            setup, index, embedder = runs[name]
            setup()
            embed = toolsift.dense.query_embedding(embedder)
            for query in queries[start : start + args.block]:
                started = time.perf_counter()
                found[name].append([h.tool.name for h in index.search(query, k=10)])
                request[name].append(time.perf_counter() - started)
                if args.compare == "query":
                    started = time.perf_counter()
                    embed([query])
                    encoder[name].append(time.perf_counter() - started)
    toolsift.dense.top_rows, toolsift.hybrid.fuse_arrays = shipped
    first, second = runs
    same = sum(a == b for a, b in zip(found[first], found[second], strict=True))

    def ms(values: list[float], q: int = 50) -> str:
        return f"{statistics.quantiles(values, n=100)[q - 1] * 1e3:.2f}" if values else "—"

    print(f"{len(queries)} BFCL requests, hybrid search (k=10), MiniLM onnx, {len(data.catalog):,} tools exact\n")
    print(f"| {args.compare} | request p50 ms | request p90 ms | encoder alone p50 ms |\n|---|---|---|---|")
    for name in runs:
        print(f"| {name} | {ms(request[name])} | {ms(request[name], 90)} | {ms(encoder[name])} |")
    ratio = statistics.median(request[second]) / statistics.median(request[first])
    print(f"\n{second} / {first} request p50: {ratio:.2f}; same top 10: {same}/{len(queries)}")


if __name__ == "__main__":
    main()
