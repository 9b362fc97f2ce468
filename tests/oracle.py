"""Plain-Python reference of the core: tokenizer, field-weighted BM25, permission filter, top-k and
budget packing, written for clarity rather than speed. Differential tests compare the Rust core
against it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


def _is_boundary(run: str, i: int) -> bool:
    prev, cur = run[i - 1], run[i]
    if not cur.isupper():
        return False
    if prev.islower():
        return True
    nxt = run[i + 1] if i + 1 < len(run) else ""
    return (prev.isupper() or prev.isnumeric()) and nxt.islower()


def strip_plural(w: str) -> str:
    if len(w) < 3 or not w.endswith("s") or w.endswith(("ss", "us", "is")):
        return w
    if len(w) >= 5 and w.endswith("ies"):
        return w[:-3] + "y"
    if w.endswith(("sses", "xes", "ches", "shes")):
        return w[:-2]
    return w[:-1]


def tokenize(text: str) -> list[str]:
    out: list[str] = []
    runs, cur = [], ""
    for c in text:
        if c.isalnum():
            cur += c
        elif cur:
            runs.append(cur)
            cur = ""
    if cur:
        runs.append(cur)
    for run in runs:
        start = 0
        cuts = [i for i in range(1, len(run)) if _is_boundary(run, i)] + [len(run)]
        for cut in cuts:
            word = run[start:cut].lower()
            start = cut
            if len(word) >= 2:
                out.append(strip_plural(word))
    return out


@dataclass
class Doc:
    fields: Sequence[tuple[str, float]]
    perms: frozenset[str]
    cost: int
    core: bool


class Oracle:
    def __init__(self, docs: Sequence[Doc], k1: float = 1.2, b: float = 0.75) -> None:
        self.docs, self.k1, self.b = list(docs), k1, b
        self.tf: list[Counter[str]] = []
        self.len: list[float] = []
        for d in self.docs:
            tf: Counter[str] = Counter()
            for text, w in d.fields:
                if w == 0:
                    continue
                for t in tokenize(text):
                    tf[t] += w  # type: ignore[assignment]
            self.tf.append(tf)
            self.len.append(sum(tf.values()))
        self.avg = sum(self.len) / len(self.len) if self.docs else 0.0
        self.df: Counter[str] = Counter(t for tf in self.tf for t in tf)

    def allowed(self, i: int, caller: set[str]) -> bool:
        return self.docs[i].perms <= caller

    def scores(self, query: str, caller: set[str]) -> dict[int, float]:
        n = len(self.docs)
        out: dict[int, float] = {}
        for t in tokenize(query):
            if t not in self.df:
                continue
            idf = math.log(1 + (n - self.df[t] + 0.5) / (self.df[t] + 0.5))
            for i, tf in enumerate(self.tf):
                if t in tf and self.allowed(i, caller):
                    norm = self.k1 * (1 - self.b + self.b * (self.len[i] / self.avg if self.avg else 0))
                    out[i] = out.get(i, 0.0) + idf * tf[t] * (self.k1 + 1) / (tf[t] + norm)
        return out

    def ranked(self, query: str, caller: set[str]) -> list[tuple[int, float]]:
        return sorted(self.scores(query, caller).items(), key=lambda x: (-x[1], x[0]))

    def search(self, query: str, caller: set[str], k: int) -> list[tuple[int, float]]:
        return self.ranked(query, caller)[:k]

    def select(self, query: str, caller: set[str], budget: int, k: int | None = None) -> list[int]:
        core = [i for i, d in enumerate(self.docs) if d.core and self.allowed(i, caller)]
        used = sum(self.docs[i].cost for i in core)
        taken: list[int] = []
        for i, _ in self.ranked(query, caller):
            if self.docs[i].core or (k is not None and len(taken) >= k):
                continue
            if used + self.docs[i].cost <= budget:
                used += self.docs[i].cost
                taken.append(i)
        return core + sorted(taken)
