"""Peer engines for the comparison script, each doing the whole of ``select``: rank the tools the
caller may use for a query and pack the best into the token budget (same greedy rule as toolsift).

Every peer filters by permission *before* ranking where its library allows it (bm25s'
``weight_mask``, tantivy's term-set filter inside a boolean query); rank_bm25 scores everything and
masks. Candidates beyond the first ``DEPTH`` are not considered (enough to fill a 4,000-token
budget on these workloads). Peers whose package is missing are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from workloads import Workload

DEPTH = 200
Select = Callable[[str, list[str], int], list[int]]


def _pack(ranked: list[int], costs: np.ndarray, budget: int) -> list[int]:
    used, out = 0, []
    for i in ranked:
        c = int(costs[i])
        if used + c <= budget:
            used += c
            out.append(i)
    return sorted(out)


def _texts(w: Workload) -> list[str]:
    return [f"{t.name} {t.description}" for t in w.tools]


def _allowed(w: Workload, caller: Sequence[str]) -> np.ndarray:
    held = set(caller)
    return np.array([set(t.permissions) <= held for t in w.tools])


def _costs(w: Workload) -> np.ndarray:
    return np.array([t.cost_tokens or 0 for t in w.tools])


def toolsift(w: Workload) -> Select:
    idx = w.index
    return lambda q, caller, budget: list(idx.select(q, caller=caller, budget_tokens=budget))


def seed_reference(w: Workload) -> Select:
    seed = w.seed
    return lambda q, caller, budget: seed.select(q, caller, budget)


def bm25s_peer(w: Workload) -> Select | None:
    try:
        import bm25s
    except ImportError:
        return None
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(_texts(w), stopwords="en", show_progress=False), show_progress=False)
    costs, masks = _costs(w), {}

    def select(q: str, caller: Sequence[str], budget: int) -> list[int]:
        mask = masks.setdefault(tuple(caller), _allowed(w, caller).astype(np.float32))
        tokens = bm25s.tokenize([q], stopwords="en", return_ids=False, show_progress=False)
        if not tokens[0]:
            return []
        docs, scores = retriever.retrieve(tokens, k=DEPTH, weight_mask=mask, show_progress=False, n_threads=1)
        return _pack([int(d) for d, s in zip(docs[0], scores[0], strict=True) if s > 0], costs, budget)

    return select


def tantivy_peer(w: Workload) -> Select | None:
    try:
        import tantivy
    except ImportError:
        return None
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("body", stored=False)
    sb.add_integer_field("pos", stored=True)
    sb.add_text_field("perm", tokenizer_name="raw")
    schema = sb.build()
    index = tantivy.Index(schema)
    writer = index.writer(heap_size=200_000_000, num_threads=1)
    for i, (t, text) in enumerate(zip(w.tools, _texts(w), strict=True)):
        writer.add_document(tantivy.Document(body=text, pos=i, perm=t.permissions[0] if t.permissions else "public"))
    writer.commit()
    index.reload()
    searcher, costs = index.searcher(), _costs(w)

    def select(q: str, caller: Sequence[str], budget: int) -> list[int]:
        words = re.findall(r"\w+", q)
        if not words:
            return []
        text = index.parse_query(" ".join(words), ["body"])
        allowed = tantivy.Query.term_set_query(schema, "perm", [*caller, "public"])
        query = tantivy.Query.boolean_query([(tantivy.Occur.Must, text), (tantivy.Occur.Must, allowed)])
        hits = searcher.search(query, DEPTH).hits
        return _pack([searcher.doc(addr)["pos"][0] for _, addr in hits], costs, budget)

    return select


def rank_bm25_peer(w: Workload) -> Select | None:
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        return None
    if len(w.tools) > 20_000:
        return None  # seconds per query: too slow to run at this size
    bm25, costs, masks = BM25Okapi([t.lower().split() for t in _texts(w)]), _costs(w), {}

    def select(q: str, caller: Sequence[str], budget: int) -> list[int]:
        mask = masks.setdefault(tuple(caller), _allowed(w, caller))
        scores = np.where(mask, bm25.get_scores(q.lower().split()), 0.0)
        top = np.argsort(-scores, kind="stable")[:DEPTH]
        return _pack([int(i) for i in top if scores[i] > 0], costs, budget)

    return select


PEERS: dict[str, Callable[[Workload], Select | None]] = {
    "toolsift": toolsift,
    "seed ref": seed_reference,
    "bm25s": bm25s_peer,
    "tantivy": tantivy_peer,
    "rank_bm25": rank_bm25_peer,
}
