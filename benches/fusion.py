"""Fusion rules and dense texts side by side on BFCL, on identical inputs.

Each query is ranked once by the lexical side (``Index.search``, top ``--depth``) and once by the
dense side (the default embedder, exact cosine top ``--depth``) for each dense text; every fusion
rule then combines the same two rankings, so the table compares rules, not runs. Embeddings are
cached under ``~/.cache/toolsift/fusion`` (the first run embeds the catalog and queries: minutes).

    python benches/fusion.py [--depth 100] [--alphas 0.5 0.6 0.65 0.7]
"""

from __future__ import annotations

import argparse
import hashlib
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np

import toolsift as ts
from toolsift.dense import DenseIndex, default_embedder, unit_rows
from toolsift.eval.datasets import load_bfcl
from toolsift.eval.metrics import score_query
from toolsift.fusion import Ranking, fuse, fuse_max, rrf
from toolsift.text import dense_text

CACHE = Path.home() / ".cache" / "toolsift" / "fusion"


def name_first_text(tool: ts.Tool) -> str:
    """The variant tried against the default dense text: the words of the name first."""
    words = re.sub(r"[_\W]+", " ", re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", tool.name)).strip()
    return "\n".join(t for t in (words, tool.description, *tool.examples, tool.search_text) if t)


def embedded(texts: list[str], label: str) -> np.ndarray:
    """The default embedder's unit vectors of ``texts``, cached by their hash."""
    key = hashlib.sha256("\0".join(texts).encode()).hexdigest()[:16]
    path = CACHE / f"{label}-{key}.npy"
    if path.exists():
        return np.load(path)
    vectors = unit_rows(default_embedder().embed(texts), label)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--alphas", type=float, nargs="+", default=[0.5, 0.6, 0.65, 0.7])
    args = parser.parse_args()
    data = load_bfcl()
    tools, names = list(data.catalog), data.catalog.names
    index = ts.Index(data.catalog)
    queries = embedded([q.text for q in data.queries], "queries")
    lexical: list[Ranking] = [[(h.position, h.score) for h in index.search(q.text, k=args.depth)] for q in data.queries]
    texts: dict[str, Callable[[ts.Tool], str]] = {"description": dense_text, "name + description": name_first_text}
    rows: list[tuple[str, str, dict[str, dict[str, float]]]] = []

    def score(label: str, text: str, rankings: list[Ranking]) -> None:
        per: dict[str, list[dict[str, float]]] = {}
        for q, ranking in zip(data.queries, rankings, strict=True):
            ranked = [data.label(names[p]) for p, _ in ranking[:100]]
            s = score_query(ranked, q.relevant)
            per.setdefault(q.category, []).append(s)
            per.setdefault("all", []).append(s)
        rows.append((label, text, {c: {m: float(np.mean([r[m] for r in v])) for m in v[0]} for c, v in per.items()}))

    score("lexical", "-", lexical)
    for text_name, text_of in texts.items():
        dense_index = DenseIndex(embedded([text_of(t) for t in tools], f"tools-{text_name}"), exact_below=10**9)
        dense: list[Ranking] = []
        for vector in queries:
            positions, scores = dense_index.search(vector, args.depth)
            dense.append(list(zip(positions.tolist(), scores.tolist(), strict=True)))
        score("dense", text_name, dense)
        score("rrf", text_name, [rrf(a, b) for a, b in zip(lexical, dense, strict=True)])
        for alpha in args.alphas:
            old = [fuse_max(a, b, alpha) for a, b in zip(lexical, dense, strict=True)]
            new = [fuse(a, b, alpha) for a, b in zip(lexical, dense, strict=True)]
            score(f"max-normalised α={alpha}", text_name, old)
            score(f"z-score α={alpha}", text_name, new)
    categories = ["all", *data.categories()]
    print(f"nDCG@10 on BFCL ({len(data.queries):,} queries, {len(tools):,} tools), depth {args.depth}")
    print("| rule | dense text | " + " | ".join(categories) + " | worst vs lexical |")
    print("|---|---|" + "---|" * (len(categories) + 1))
    base = rows[0][2]
    for label, text, by in rows:
        cells = [f"{by[c]['nDCG@10']:.3f}" for c in categories]
        worst = min(by[c]["nDCG@10"] - base[c]["nDCG@10"] for c in categories)
        print(f"| {label} | {text} | " + " | ".join(cells) + f" | {worst:+.3f} |")


if __name__ == "__main__":
    main()
