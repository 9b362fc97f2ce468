"""Hybrid requests with the query embedded in float32 against int8, side by side in one process.

Two hybrid indexes over BFCL's catalog share the same tool vectors (``default_embedder()`` and
``default_embedder("int8")`` embed tools alike, in float32) and differ only in the query's
session; the query cache is off, so every request embeds its text. Requests run in alternating
blocks of ``--block`` (the two sessions' threads must not disturb each other request by
request). Prints the request p50 and p90 of each, the ratio, the query encoder alone, and how
many requests get the same top 10.

    python benches/query_int8.py [--requests 600] [--block 50]
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
    texts = [dense_text(t) for t in data.catalog]
    kinds = {"float32": ts.default_embedder("quality"), "int8": ts.default_embedder("int8")}
    vectors = kinds["float32"].embed(texts)
    toolsift.hybrid.QUERY_CACHE = 0
    indexes = {k: ts.Index(data.catalog, embedder=Prefilled(e, texts, vectors)) for k, e in kinds.items()}
    request: dict[str, list[float]] = {k: [] for k in kinds}
    encoder: dict[str, list[float]] = {k: [] for k in kinds}
    found: dict[str, list[list[str]]] = {k: [] for k in kinds}
    queries = [q.text for q in data.queries][: args.requests]
    for start in range(0, len(queries), args.block):
        block = queries[start : start + args.block]
        for kind in list(kinds) if start // args.block % 2 == 0 else list(reversed(kinds)):
            embed = toolsift.dense.query_embedding(kinds[kind])
            for query in block:
                started = time.perf_counter()
                found[kind].append([h.tool.name for h in indexes[kind].search(query, k=10)])
                request[kind].append(time.perf_counter() - started)
                started = time.perf_counter()
                embed([query])
                encoder[kind].append(time.perf_counter() - started)
    same = sum(a == b for a, b in zip(found["float32"], found["int8"], strict=True))

    def ms(values: list[float], q: int) -> float:
        return statistics.quantiles(values, n=100)[q - 1] * 1e3

    print(f"{len(queries)} BFCL requests, hybrid search (k=10), MiniLM onnx, {len(data.catalog):,} tools exact\n")
    print("| query session | request p50 ms | request p90 ms | encoder alone p50 ms |\n|---|---|---|---|")
    for kind in kinds:
        print(f"| {kind} | {ms(request[kind], 50):.2f} | {ms(request[kind], 90):.2f} | {ms(encoder[kind], 50):.2f} |")
    ratio = ms(request["int8"], 50) / ms(request["float32"], 50)
    print(f"\nint8 / float32 request p50: {ratio:.2f}; same top 10: {same}/{len(queries)}")


if __name__ == "__main__":
    main()
