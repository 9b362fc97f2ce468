"""Tenant isolation (``statistics="caller"``): a caller's ranking equals that of an index built from
only the tools it may use, so scores carry nothing about the tools it cannot see."""

from __future__ import annotations

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
    sel = isolated.select(q, caller=caller, budget=budget)
    ref = alone.select(q, caller=caller, budget=budget)
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
