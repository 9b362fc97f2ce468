"""The embedders side by side on BFCL, in one process: lexical against hybrid with each.

For each embedder: the time to embed BFCL's catalog (cold, every tool's dense text), the hybrid
index's nDCG@10 overall and per category (through :func:`toolsift.eval.evaluate`, the code of
``toolsift eval``), the per-request p50 of ``Index.search`` with the query's embedding in it
(tool vectors are computed once, queries are embedded on every request), agreement with the
numpy MiniLM (largest difference of a vector component, share of requests whose top 10 is the
same) and, with ``--aws N``, the time to embed N tools of the botocore catalog (the numpy run
is timed on ``N // 12`` of them and scaled). Prints Markdown tables with ratios to the numpy run.

    python benches/embedders.py [--aws 12000] [--skip numpy] [--threads 0]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import toolsift as ts
from toolsift.dense import Embedder, default_embedder, query_embedding, unit_rows
from toolsift.eval import evaluate
from toolsift.eval.datasets import Dataset, LabelledQuery, load_bfcl
from toolsift.eval.systems import System, toolsift_system
from toolsift.static import StaticEmbedder
from toolsift.text import dense_text


class Prefilled:
    """The tool vectors computed once; any other text (a query) embedded on each call, and
    counted in ``embedded``. Shared by the bench scripts that time queries, not catalogs."""

    def __init__(self, inner: Embedder, texts: list[str], vectors: np.ndarray) -> None:
        self.inner, self.known, self.embedded = inner, dict(zip(texts, vectors, strict=True)), 0

    def embed(self, texts: list[str]) -> np.ndarray:
        if all(t in self.known for t in texts):
            return np.stack([self.known[t] for t in texts])
        self.embedded += len(texts)
        return self.inner.embed(texts)

    def embed_query(self, texts: list[str]) -> np.ndarray:
        self.embedded += len(texts)
        return query_embedding(self.inner)(texts)


def embedders(threads: int, skip: set[str]) -> dict[str, Callable[[], Embedder]]:
    makers: dict[str, Callable[[], Embedder]] = {
        "MiniLM numpy": lambda: default_embedder("numpy"),
        "MiniLM onnx fp32": lambda: default_embedder("quality", threads=threads),
        "MiniLM onnx int8 queries": lambda: default_embedder("int8", threads=threads),
        "wordllama static": StaticEmbedder.from_wordllama,
    }
    return {k: v for k, v in makers.items() if not any(s in k for s in skip)}


def timed(embedder: Embedder, texts: list[str]) -> tuple[np.ndarray, float]:
    started = time.perf_counter()
    vectors = embedder.embed(texts)
    return vectors, time.perf_counter() - started


def hybrid(
    data: Dataset, name: str, embedder: Embedder, texts: list[str], vectors: np.ndarray
) -> tuple[System, list[list[str]]]:
    """The hybrid system, and the list its rankings' first 10 names are recorded in."""
    inner = toolsift_system(data, embedder=Prefilled(embedder, texts, vectors))
    tops: list[list[str]] = []

    def rank(q: LabelledQuery, k: int) -> list[str]:
        names = inner.rank(q, k)
        tops.append(names[:10])
        return names

    return System(f"hybrid, {name}", rank, inner.index), tops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aws", type=int, default=0, help="also time embedding this many botocore tools")
    parser.add_argument("--skip", nargs="*", default=[], help="leave out embedders whose name contains this")
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime threads (0: one per core)")
    args = parser.parse_args()
    data = load_bfcl()
    texts = [dense_text(t) for t in data.catalog]
    lexical = evaluate(toolsift_system(data), data)
    cats = ["all", *data.categories()]
    rows: list[tuple[str, Any, float, float]] = [("lexical", lexical, 0.0, 0.0)]
    reference: tuple[np.ndarray, list[list[str]]] | None = None
    agreement: dict[str, tuple[float, float]] = {}
    aws: dict[str, float] = {}
    aws_texts = _aws_texts(args.aws) if args.aws else []
    for name, make in embedders(args.threads, set(args.skip)).items():
        try:
            started = time.perf_counter()
            embedder = make()
            load_s = time.perf_counter() - started
        except ts.errors.MissingExtraError as e:
            print(f"skipping {name}: {e}")
            continue
        vectors, catalog_s = timed(embedder, texts)
        system, tops = hybrid(data, name, embedder, texts, unit_rows(vectors, name))
        result = evaluate(system, data)
        rows.append((name, result, catalog_s, load_s))
        if name == "MiniLM numpy":
            reference = (vectors, tops)
        if reference is not None and vectors.shape == reference[0].shape:
            same = np.mean([a == b for a, b in zip(tops, reference[1], strict=True)])
            agreement[name] = (float(np.abs(vectors - reference[0]).max()), float(same))
        if aws_texts:
            part = aws_texts[: len(aws_texts) // 12] if name == "MiniLM numpy" else aws_texts
            aws[name] = timed(embedder, part)[1] * len(aws_texts) / len(part)
    _print(rows, cats, agreement, aws, len(aws_texts), len(texts))


def _aws_texts(n: int) -> list[str]:
    from toolsift.catalogs import aws_catalog

    tools = list(aws_catalog())
    keep = np.random.default_rng(0).permutation(len(tools))[:n]
    return [dense_text(tools[i]) for i in sorted(keep.tolist())]


def _print(
    rows: list[tuple[str, Any, float, float]],
    cats: list[str],
    agreement: dict[str, tuple[float, float]],
    aws: dict[str, float],
    n_aws: int,
    n_tools: int,
) -> None:
    base = rows[0][1]

    def ndcg(result: Any, c: str) -> float:
        return float(result.overall["nDCG@10"] if c == "all" else result.by_category[c]["nDCG@10"])

    print(f"BFCL nDCG@10 ({n_tools:,} tools); 'worst' is the lowest difference to lexical over the categories\n")
    print("| system | " + " | ".join(cats) + " | worst vs lexical |")
    print("|---|" + "---|" * (len(cats) + 1))
    for name, result, _, _ in rows:
        worst = min(ndcg(result, c) - ndcg(base, c) for c in cats[1:])
        print(f"| {name} | " + " | ".join(f"{ndcg(result, c):.3f}" for c in cats) + f" | {worst:+.3f} |")
    numpy_row = next((r for r in rows if r[0] == "MiniLM numpy"), None)
    head = ["system", "request p50 ms", "p99 ms", "load s", "BFCL catalog s"]
    head += [f"{n_aws:,} AWS tools s"] if aws else []
    head += ["× numpy catalog", "max abs diff vs numpy", "same top 10 as numpy"]
    print("\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for name, result, catalog_s, load_s in rows:
        diff, same = agreement.get(name, (float("nan"), float("nan")))
        cells = [f"{result.latency_us['p50'] / 1e3:.2f}", f"{result.latency_us['p99'] / 1e3:.2f}", f"{load_s:.2f}"]
        cells += [f"{catalog_s:.2f}"] + ([f"{aws.get(name, 0.0):.1f}"] if aws else [])
        cells += [f"{numpy_row[2] / catalog_s:.1f}×" if numpy_row and catalog_s else "", f"{diff:.1e}", f"{same:.3f}"]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
