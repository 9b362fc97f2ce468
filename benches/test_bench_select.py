"""pytest-benchmark: toolsift's select/search next to the seed's reference select().

Each benchmark round runs every query of the workload once; ``extra_info`` records the per-query
mean and whether the results were correct (allowed tools only, within budget). CI runs this file
with ``--benchmark-disable`` as a smoke test; run ``pytest benches --benchmark-enable`` for numbers.
"""

from __future__ import annotations

import pytest

from workloads import BUDGET, Workload, aws, zipf

WORKLOADS = {
    "zipf-1k": lambda: zipf(1_000),
    "zipf-10k": lambda: zipf(10_000),
    "zipf-100k": lambda: zipf(100_000),
    "aws-10k": lambda: aws(10_000),
    "aws": aws,
    "aws-100k": lambda: aws(100_000),
}


@pytest.fixture(scope="module", params=list(WORKLOADS))
def workload(request: pytest.FixtureRequest) -> Workload:
    return WORKLOADS[request.param]()


def _correct(w: Workload, selections: list) -> bool:
    caller = set(w.caller)
    for sel in selections:
        tools = [w.tools[i] for i in sel]
        if not all(set(t.permissions) <= caller for t in tools):
            return False
        if sum(t.cost_tokens or 0 for t in tools) > BUDGET:
            return False
    return True


def test_toolsift_select(benchmark, workload: Workload) -> None:  # type: ignore[no-untyped-def]
    idx = workload.index
    out = benchmark(lambda: [idx.select(q, caller=workload.caller, budget_tokens=BUDGET) for q in workload.queries])
    benchmark.extra_info.update(queries=len(workload.queries), correct=_correct(workload, out))


def test_seed_reference_select(benchmark, workload: Workload) -> None:  # type: ignore[no-untyped-def]
    seed = workload.seed
    out = benchmark(lambda: [seed.select(q, workload.caller, BUDGET) for q in workload.queries])
    benchmark.extra_info.update(queries=len(workload.queries), correct=_correct(workload, out))


def test_toolsift_search_top10(benchmark, workload: Workload) -> None:  # type: ignore[no-untyped-def]
    idx = workload.index
    out = benchmark(lambda: [idx.search(q, k=10, caller=workload.caller) for q in workload.queries])
    caller = set(workload.caller)
    benchmark.extra_info.update(correct=all(set(h.tool.permissions) <= caller for hits in out for h in hits))


def test_seed_reference_reproduces_the_seed_example() -> None:
    from toolsift_seedref import SeedIndex

    rows = [
        ("search_help", "Search the help center articles", "", True),
        ("lookup_account", "Look up a customer account by email or id", "crm.read", False),
        ("order_status", "Get the shipping status of an order", "orders.read", False),
        ("issue_refund", "Refund a customer order payment to the card", "billing.refund", False),
        ("refund_policy", "Explain the refund policy to the customer", "", False),
        ("delete_account", "Delete a customer account permanently", "admin", False),
    ]
    idx = SeedIndex(*[list(c) for c in zip(*rows, strict=True)][:3], [300] * 6, [r[3] for r in rows])
    agent = ["crm.read", "orders.read"]
    assert [idx.name(i) for i in idx.select("where is my order shipping status", agent, 400)] == [
        "search_help",
        "order_status",
    ]
    assert [idx.name(i) for i in idx.select("order status", agent, 100)] == ["search_help"]


@pytest.mark.parametrize("peer", ["toolsift", "seed ref", "bm25s", "tantivy", "rank_bm25"])
def test_comparison_peers_select_allowed_tools_within_budget(peer: str) -> None:
    from peers import PEERS

    w = zipf(1_000)
    engine = PEERS[peer](w)
    if engine is None:
        pytest.skip(f"{peer} is not installed")
    selections = [engine(q, w.caller, BUDGET) for q in w.queries[:20]]
    assert _correct(w, selections) and any(selections)


def test_comparison_times_every_engine_warm_and_cold() -> None:
    import dataclasses

    from compare import measure, rows

    w = zipf(1_000)
    small = dataclasses.replace(w, queries=w.queries[:3])
    results = measure(small, rounds=1)
    assert "toolsift" in results and "seed ref" in results
    for r in results.values():
        assert r["median"] > 0 and r["cold"] > 0 and r["p99"] >= r["median"]
    table = rows({small.name: results})
    assert [row[1] for row in table] == list(results) and table[0][4] == table[0][7] == "1.0×"
