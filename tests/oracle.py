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
            out.append(w)
    return out


def prefix(word: str) -> str | None:
    """The prefix term of a word: ``^`` and its first four letters, for a longer alphabetic word."""
    return "^" + word[:4] if len(word) > 4 and all(c.isalpha() and not is_cjk(c) for c in word) else None


def tokenize(text: str) -> list[str]:
    return [stem(w) if to_stem else w for w, to_stem in words(text)]


def terms(text: str) -> list[tuple[str, bool]]:
    """``(term, is_prefix)`` of each word of ``text``: its term, then its prefix term if any."""
    out = []
    for w, to_stem in words(text):
        out.append((stem(w) if to_stem else w, False))
        p = prefix(w)
        if p is not None:
            out.append((p, True))
    return out


def words(text: str) -> list[tuple[str, bool]]:
    """Normalised words of ``text`` with whether each is stemmed (CJK bigrams are not)."""
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
    out: list[tuple[str, bool]] = []
    for run in runs:
        i = 0
        while i < len(run):
            j = i
            while j < len(run) and is_cjk(run[j]) == is_cjk(run[i]):
                j += 1
            seg = run[i:j]
            if is_cjk(seg[0]):
                out += [(b, False) for b in ([seg] if len(seg) == 1 else [seg[k : k + 2] for k in range(len(seg) - 1)])]
            else:
                out += [(w, True) for w in _words(seg)]
            i = j
    return out


@dataclass
class Doc:
    fields: Sequence[str]
    perms: frozenset[str]
    cost: int
    core: bool


PREFIX_MAX_SHARE, PREFIX_MIN_LIMIT = 0.02, 500  # prefix terms in more tools than both get no postings


class Oracle:
    def __init__(
        self, docs: Sequence[Doc], weights: Sequence[float], bs: Sequence[float], k1: float, prefix_weight: float
    ) -> None:
        self.docs, self.k1, self.prefix_weight = list(docs), k1, prefix_weight
        toks = [[terms(text) if w > 0 else [] for text, w in zip(d.fields, weights, strict=True)] for d in docs]
        if prefix_weight == 0:
            toks = [[[t for t in field if not t[1]] for field in doc] for doc in toks]
        # a field's length counts its words, not their prefix terms; its mean is over the docs that have it
        lens = [[sum(not is_prefix for _, is_prefix in field) for field in doc] for doc in toks]
        filled = [[doc[f] for doc in lens if doc[f]] for f in range(len(weights))]
        avg = [sum(f) / len(f) if f else 0 for f in filled]
        self.tf: list[dict[str, float]] = []
        for fields, doc_lens in zip(toks, lens, strict=True):
            tf: dict[str, float] = {}
            for f, field in enumerate(fields):
                norm = 1 - bs[f] + bs[f] * (doc_lens[f] / avg[f] if avg[f] else 0)
                for term, count in Counter(t for t, _ in field).items():
                    tf[term] = tf.get(term, 0.0) + weights[f] * count / norm
            self.tf.append(tf)
        self.df: Counter[str] = Counter(t for tf in self.tf for t in tf)
        common = {
            t
            for t, df in self.df.items()
            if t.startswith("^") and df > max(PREFIX_MAX_SHARE * len(docs), PREFIX_MIN_LIMIT)
        }
        for tf in self.tf:
            for t in common & tf.keys():
                del tf[t]
        for t in common:
            del self.df[t]
        # impacts, stored as levels: 255 * impact / the term's largest impact, rounded half up
        impact = [{t: x * (k1 + 1) / (x + k1) for t, x in tf.items()} for tf in self.tf]
        self.max = {t: max(imp[t] for imp in impact if t in imp) for t in self.df}
        exact = [{t: 255 * x / self.max[t] for t, x in imp.items()} for imp in impact]
        self.level = [{t: min(max(math.floor(x + 0.5), 1), 255) for t, x in e.items()} for e in exact]
        # terms with a level so close to a rounding boundary that f32 and f64 may round it apart
        self.ambiguous_terms = {t for e in exact for t, x in e.items() if abs(x - math.floor(x) - 0.5) < 1e-3}

    def ambiguous(self, query: str) -> bool:
        """True when a term of ``query`` has a posting whose level f32 could round differently."""
        return any(t in self.ambiguous_terms for t, _ in terms(query))

    def allowed(self, i: int, caller: set[str]) -> bool:
        return self.docs[i].perms <= caller

    def scores(self, query: str, caller: set[str]) -> dict[int, float]:
        n = len(self.docs)
        out: dict[int, float] = {}
        weights: dict[str, float] = {}  # a term counts once, at its largest weight
        for t, is_prefix in terms(query):
            w = self.prefix_weight if is_prefix else 1.0
            if w > 0:
                weights[t] = max(weights.get(t, 0.0), w)
        for t, w in weights.items():
            if t not in self.df:
                continue
            idf = math.log(1 + (n - self.df[t] + 0.5) / (self.df[t] + 0.5))
            for i, level in enumerate(self.level):
                if t in level and self.allowed(i, caller):
                    out[i] = out.get(i, 0.0) + w * idf * self.max[t] / 255 * level[t]
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
