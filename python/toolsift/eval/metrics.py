"""Ranking metrics with binary relevance: Recall@k, nDCG@k, MRR and Complete@k.

Each function takes the ranked ids a system returned (best first) and the set of relevant ids. An
id may appear more than once in a ranking (several tools can carry one label, see
:attr:`~toolsift.eval.datasets.Dataset.labels`); it counts once, at its best rank.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence


def recall_at(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Share of the relevant ids found in the first ``k`` (an id listed twice counts once)."""
    rel = set(relevant)
    return len(set(ranked[:k]) & rel) / len(rel) if rel else 0.0


def complete_at(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 when every relevant id is in the first ``k``, else 0.0."""
    return float(bool(relevant) and set(relevant) <= set(ranked[:k]))


def ndcg_at(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Normalised discounted cumulative gain of the first ``k`` (gain 1 per relevant id)."""
    rel, seen = set(relevant), set()
    dcg = 0.0
    for i, doc in enumerate(ranked[:k]):
        if doc in rel and doc not in seen:  # a label found twice gains once
            seen.add(doc)
            dcg += 1.0 / math.log2(i + 2)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(rel), k)))
    return dcg / ideal if ideal else 0.0


def reciprocal_rank(ranked: Sequence[str], relevant: Collection[str]) -> float:
    """1 / rank of the first relevant id (0 when none was returned)."""
    rel = set(relevant)
    return next((1.0 / (i + 1) for i, doc in enumerate(ranked) if doc in rel), 0.0)


METRICS = ("R@1", "R@3", "R@5", "R@10", "nDCG@10", "MRR", "C@5", "C@10")


def score_query(ranked: Sequence[str], relevant: Collection[str]) -> dict[str, float]:
    """Every metric of :data:`METRICS` for one query."""
    out = {f"R@{k}": recall_at(ranked, relevant, k) for k in (1, 3, 5, 10)}
    out["nDCG@10"] = ndcg_at(ranked, relevant, 10)
    out["MRR"] = reciprocal_rank(ranked, relevant)
    out["C@5"] = complete_at(ranked, relevant, 5)
    out["C@10"] = complete_at(ranked, relevant, 10)
    return out
