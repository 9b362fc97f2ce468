"""Plain-Python reference of the core: tokenizer, BM25F, permission filter, top-k and budget
packing, written for clarity rather than speed. Differential tests compare the Rust core with it.
Stemming is delegated to the same Snowball stemmer the core uses (``_core.stem``): the stemmer is
a library with its own tests; everything around it is reimplemented here.
"""

from __future__ import annotations

import itertools
import math
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from toolsift._core import stem

STOP = set(
    [
        "a",
        "about",
        "after",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "been",
        "being",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "for",
        "from",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "might",
        "my",
        "myself",
        "of",
        "or",
        "our",
        "ours",
        "please",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
    ]
)
CJK = [(0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF), (0x20000, 0x2FA1F)]


def is_cjk(c: str) -> bool:
    return any(lo <= ord(c) <= hi for lo, hi in CJK)


def _is_boundary(seg: str, i: int) -> bool:
    prev, cur = seg[i - 1], seg[i]
    if not cur.isupper():
        return False
    if prev.islower():
        return True
    nxt = seg[i + 1] if i + 1 < len(seg) else ""
    return (prev.isupper() or prev.isnumeric()) and nxt.islower()


def _words(seg: str) -> list[str]:
    cuts = [0, *[i for i in range(1, len(seg)) if _is_boundary(seg, i)], len(seg)]
    out = []
    for a, b in itertools.pairwise(cuts):
        w = seg[a:b].lower()
        if len(w) >= 2 and w not in STOP:
            out.append(stem(w))
    return out


def tokenize(text: str) -> list[str]:
    folded = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.category(c).startswith("M"))
    runs, cur = [], ""
    for c in folded:
        if c.isalnum():
            cur += c
        elif cur:
            runs.append(cur)
            cur = ""
    if cur:
        runs.append(cur)
    out: list[str] = []
    for run in runs:
        i = 0
        while i < len(run):
            j = i
            while j < len(run) and is_cjk(run[j]) == is_cjk(run[i]):
                j += 1
            seg = run[i:j]
            if is_cjk(seg[0]):
                out += [seg] if len(seg) == 1 else [seg[k : k + 2] for k in range(len(seg) - 1)]
            else:
                out += _words(seg)
            i = j
    return out


@dataclass
class Doc:
    fields: Sequence[str]
    perms: frozenset[str]
    cost: int
    core: bool


class Oracle:
    def __init__(self, docs: Sequence[Doc], weights: Sequence[float], bs: Sequence[float], k1: float) -> None:
        self.docs, self.k1 = list(docs), k1
        toks = [[tokenize(text) if w > 0 else [] for text, w in zip(d.fields, weights, strict=True)] for d in docs]
        n = max(len(docs), 1)
        avg = [sum(len(t[f]) for t in toks) / n for f in range(len(weights))]
        self.tf: list[dict[str, float]] = []
        for fields in toks:
            tf: dict[str, float] = {}
            for f, words in enumerate(fields):
                norm = 1 - bs[f] + bs[f] * (len(words) / avg[f] if avg[f] else 0)
                for term, count in Counter(words).items():
                    tf[term] = tf.get(term, 0.0) + weights[f] * count / norm
            self.tf.append(tf)
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
                    out[i] = out.get(i, 0.0) + idf * tf[t] * (self.k1 + 1) / (tf[t] + self.k1)
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
