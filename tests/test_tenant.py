"""Tenant isolation (``statistics="caller"``): a caller's ranking equals that of an index built from
only the tools it may use, so scores carry nothing about the tools it cannot see."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolsift as ts
from toolsift.errors import InvalidParameterError

WORDS = ["refund", "order", "invoice", "ship", "track", "email", "user", "delete", "report", "export", "file", "zip"]
PERMS = ["billing", "orders", "admin"]

tool_specs = st.lists(
    st.tuples(st.lists(st.sampled_from(WORDS), min_size=0, max_size=8), st.sets(st.sampled_from(PERMS), max_size=2)),
    min_size=1,
    max_size=25,
)


def catalog(specs: list[tuple[list[str], set[str]]]) -> list[ts.Tool]:
    return [ts.Tool(f"tool_{i}", " ".join(words), permissions=sorted(p)) for i, (words, p) in enumerate(specs)]


@settings(max_examples=2000, deadline=None)
@given(
    tool_specs,
    st.sets(st.sampled_from(PERMS)),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
    st.integers(0, 400),
)
def test_caller_statistics_equal_an_index_of_the_allowed_tools(
    specs: list[tuple[list[str], set[str]]], caller: set[str], query: list[str], budget: int
) -> None:
    tools = catalog(specs)
    isolated = ts.Index(tools, statistics="caller")
    alone = ts.Index([t for t in tools if set(t.permissions) <= caller])
    q = " ".join(query)
    got = [(h.tool.name, h.score) for h in isolated.search(q, k=10, caller=caller)]
    assert got == [(h.tool.name, h.score) for h in alone.search(q, k=10, caller=caller)]
    sel = isolated.select(q, caller=caller, budget_tokens=budget)
    ref = alone.select(q, caller=caller, budget_tokens=budget)
    assert (sel.names, sel.tokens, [d.tool.name for d in sel.dropped]) == (
        ref.names,
        ref.tokens,
        [d.tool.name for d in ref.dropped],
    )


def test_hidden_tools_move_shared_scores_but_not_isolated_ones() -> None:
    visible = [ts.Tool("refunds", "refund an order"), ts.Tool("orders", "list orders")]
    hidden = [ts.Tool(f"secret_{i}", "refund refund", permissions="admin") for i in range(20)]
    shared, isolated = ts.Index(visible + hidden), ts.Index(visible + hidden, statistics="caller")
    alone = ts.Index(visible)
    ref = [h.score for h in alone.search("refund", caller=None)]
    assert [h.score for h in shared.search("refund", caller=None)] != ref  # the leak isolation closes
    assert [h.score for h in isolated.search("refund", caller=None)] == ref


def test_isolation_survives_a_snapshot_and_batches(tmp_path: object) -> None:
    from pathlib import Path

    tools = [ts.Tool("a", "refund order", permissions="x"), ts.Tool("b", "refund invoice"), ts.Tool("c", "refund")]
    index = ts.Index(tools, statistics="caller", k1=1.3)
    path = Path(str(tmp_path)) / "i.toolsift"
    index.save(path)
    loaded = ts.Index.load(path)
    for caller in (None, ["x"]):
        want = [(h.tool.name, h.score) for h in index.search("refund order", caller=caller)]
        assert [(h.tool.name, h.score) for h in loaded.search("refund order", caller=caller)] == want
        assert [
            [(h.tool.name, h.score) for h in hits] for hits in index.search_many(["refund order"], caller=caller)
        ] == [want]


def test_unknown_statistics_mode_is_refused() -> None:
    try:
        ts.Index([ts.Tool("a")], statistics="per-tenant")
    except InvalidParameterError as e:
        assert "statistics" in str(e)
    else:
        raise AssertionError("accepted")


def test_a_prefix_cut_off_by_hidden_tools_still_counts_for_the_caller() -> None:
    # "^inte" (the prefix term of "integers", "integral", "integer") is in 1,230 of 1,230 tools: past the
    # cut-off (2 % and 500 tools), so a shared index gives it no postings. The caller sees only the 30
    # "integral" tools, where it is in 30: below the cut-off, so its own index keeps them, as an index of
    # those tools alone does.
    hidden = [ts.Tool(f"hidden_{i}", "sum a list of integers", permissions="admin") for i in range(1200)]
    visible = [ts.Tool(f"calc_{i}", f"integral of function number {i}") for i in range(30)]
    alone = [(h.tool.name, h.score) for h in ts.Index(visible).search("integer", k=50)]
    assert len(alone) == 30  # found through the prefix term only ("integer" and "integral" stem apart)
    isolated = ts.Index(visible + hidden, statistics="caller")
    assert [(h.tool.name, h.score) for h in isolated.search("integer", k=50)] == alone
    assert (
        isolated.select("integer", budget_tokens=None).names
        == ts.Index(visible).select("integer", budget_tokens=None).names
    )
    assert ts.Index(visible + hidden).search("integer", k=50) == []  # shared statistics: the prefix is cut off


def service_catalog(services: int, per_service: int = 12) -> list[ts.Tool]:
    """``per_service`` tools of each of ``services`` services, each service behind its own permission."""
    return [
        ts.Tool(
            f"svc{s}_op{i}", f"{WORDS[(s + i) % len(WORDS)]} {WORDS[i % len(WORDS)]} item {s} {i}", permissions=f"p{s}"
        )
        for s in range(services)
        for i in range(per_service)
    ] + [ts.Tool("help", "search help articles about an order")]


def cached_bytes(index: ts.Index) -> int:
    """What the cached per-caller indexes hold, recomputed from the entries themselves."""
    return sum(sub.memory_bytes() + keep.nbytes for (sub, keep, _), _size in index._tenants.entries.values())


def test_the_tenant_cache_stays_within_its_byte_bound_as_callers_come_and_go() -> None:
    tools = service_catalog(40)
    probe = ts.Index(tools, statistics="caller")
    probe.search("refund order", caller=["p0"])
    one = probe._tenants.bytes
    bound = 3 * one + one // 2  # room for three per-caller indexes, not four
    index = ts.Index(tools, statistics="caller", tenant_cache_bytes=bound)
    for round_ in range(2):
        for s in range(40):
            caller = [f"p{s}", f"p{(s + round_) % 40}"]
            got = [(h.tool.name, h.score) for h in index.search("refund order item", caller=caller)]
            alone = ts.Index([t for t in tools if set(t.permissions) <= set(caller)])
            assert got == [(h.tool.name, h.score) for h in alone.search("refund order item", caller=caller)]
            assert index._tenants.bytes <= bound
            assert index._tenants.bytes == sum(size for _, size in index._tenants.entries.values())
            assert cached_bytes(index) <= index._tenants.bytes
            assert 1 <= len(index._tenants.entries) <= 3
    assert index._tenants.builds == 80  # each caller built once per visit: more than three don't fit


def test_a_recently_used_caller_survives_an_eviction_that_first_in_first_out_would_make() -> None:
    tools = service_catalog(3)
    probe = ts.Index(tools, statistics="caller")
    sizes = []
    for s in range(3):
        probe.search("order", caller=[f"p{s}"])
        sizes.append(probe._tenants.entries[(f"p{s}",)][1])
    a, b, c = sizes
    index = ts.Index(tools, statistics="caller", tenant_cache_bytes=max(a + b, a + c))  # two fit, not three
    index.search("order", caller=["p0"])  # A
    index.search("order", caller=["p1"])  # B
    index.search("order", caller=["p0"])  # A again: now the most recently used
    assert index._tenants.builds == 2
    index.search("order", caller=["p2"])  # C: one must go, and it is B, the least recently used
    assert index._tenants.builds == 3 and list(index._tenants.entries) == [("p0",), ("p2",)]
    index.search("order", caller=["p0"])
    assert index._tenants.builds == 3  # A was kept (first in, first out would have dropped it)
    index.search("order", caller=["p1"])
    assert index._tenants.builds == 4


def test_the_caller_just_built_is_kept_even_past_the_bound() -> None:
    tools = service_catalog(4)
    index = ts.Index(tools, statistics="caller", tenant_cache_bytes=0)
    for s in (0, 1, 0):
        caller = [f"p{s}"]
        alone = ts.Index([t for t in tools if set(t.permissions) <= set(caller)])
        assert (
            index.select("order item", caller=caller, budget_tokens=500).names
            == alone.select("order item", caller=caller, budget_tokens=500).names
        )
        assert list(index._tenants.entries) == [(f"p{s}",)]
    assert index._tenants.builds == 3


def test_the_tenant_cache_bound_is_validated_and_survives_a_snapshot(tmp_path: object) -> None:
    from pathlib import Path

    tools = service_catalog(3)
    for bad in (-1, "1", 1.5, True, None):
        with pytest.raises(InvalidParameterError, match="tenant_cache_bytes"):
            ts.Index(tools, statistics="caller", tenant_cache_bytes=bad)  # type: ignore[arg-type]
    path = Path(str(tmp_path)) / "i.tsidx"
    ts.Index(tools, statistics="caller").save(path)
    loaded = ts.Index.load(path, tenant_cache_bytes=0)
    for s in range(3):
        loaded.search("order", caller=[f"p{s}"])
    assert len(loaded._tenants.entries) == 1 and loaded._tenants.builds == 3


def test_ready_for_says_whether_a_query_builds_first() -> None:
    tools = [ts.Tool("a", "alpha tool", permissions="p"), ts.Tool("b", "beta tool", permissions="q")]
    assert ts.Index(tools).ready_for(["p"])
    isolated = ts.Index(tools, statistics="caller")
    assert not isolated.ready_for(["p"])
    isolated.search("alpha", caller=["p"])
    assert isolated.ready_for(("p",)) and isolated.ready_for(["p", "p"]) and not isolated.ready_for(["q"])


def test_permissions_no_tool_requires_share_the_callers_index() -> None:
    """Per-request claims or unknown permissions change no tool a caller may use: they must not
    each build (and evict) an index of the caller's own."""
    index = ts.Index(service_catalog(3), statistics="caller")
    first = [h.tool.name for h in index.search("order", caller=["p1"])]
    for extra in ("request-7f3a", "nonexistent", "x"):
        assert [h.tool.name for h in index.search("order", caller=["p1", extra])] == first
    assert index._tenants.builds == 1 and list(index._tenants.entries) == [("p1",)]
    index.search("order", caller=["p1", "p2"])  # a permission some tool requires: its own index
    assert index._tenants.builds == 2


def test_with_a_dense_side_too_a_callers_ranking_equals_an_index_of_its_tools() -> None:
    """The dense side's graph holds every tool: an approximate search of it, even masked, answers
    by neighbours the caller may not use, so the caller's dense top tools (and the fused scores)
    depended on them."""
    import zlib

    import numpy as np

    class Seeded:  # one pseudo-random direction per text
        def embed(self, texts: list[str]) -> np.ndarray:
            rows = [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(32) for t in texts]
            out = np.stack(rows).astype(np.float32)
            return out / np.linalg.norm(out, axis=1, keepdims=True)

    tools = [
        ts.Tool(f"t{i}", f"thing {i} kind{i % 97}", permissions=() if i % 5 == 0 else "staff") for i in range(3000)
    ]
    graph = ts.Index(tools, embedder=Seeded(), statistics="caller", dense_options={"exact_below": 0})
    alone = ts.Index([t for t in tools if not t.permissions], embedder=Seeded(), statistics="caller")
    for q in [f"query number {j}" for j in range(20)]:
        assert [(h.tool.name, h.score) for h in graph.search(q, k=10)] == [
            (h.tool.name, h.score) for h in alone.search(q, k=10)
        ]
    assert graph._hybrid.dense is not None and graph._hybrid.dense.graph is None  # never searched: not built
    shared = ts.Index(tools, embedder=Seeded(), dense_options={"exact_below": 0})
    assert shared._hybrid.dense is not None and shared._hybrid.dense.graph is not None
