"""The seed's own example (main() of the tool-retrieval deep dive), through the Python API."""

from __future__ import annotations

import toolsift as ts
from helpers import AGENT


def names(idx: ts.Index, positions: list[int] | ts.Selection) -> list[str]:
    return [idx.name(i) for i in positions]


def test_best_match_is_forbidden_so_the_permitted_near_match_is_returned(support: ts.Index) -> None:
    r = names(support, support.select("refund the payment of this order", caller=AGENT, budget_tokens=400))
    assert "issue_refund" not in r and "refund_policy" in r
    assert "issue_refund" in names(
        support, support.select("refund the payment of this order", caller=["billing.refund"], budget_tokens=400)
    )


def test_right_tool_core_tool_on_admin_absent_registry_order_deterministic(support: ts.Index) -> None:
    r = names(support, support.select("where is my order shipping status", caller=AGENT, budget_tokens=400))
    assert r == ["search_help", "order_status"]
    assert r == names(support, support.select("where is my order shipping status", caller=AGENT, budget_tokens=400))


def test_tiny_budget_keeps_only_the_core_tool(support: ts.Index) -> None:
    assert names(support, support.select("order status", caller=AGENT, budget_tokens=100)) == ["search_help"]


def test_selection_is_the_seed_drop_in_list_of_positions(support: ts.Index) -> None:
    sel = support.select("where is my order shipping status", caller=AGENT, budget_tokens=400)
    assert sel == [0, 2]
    assert list(sel) == [0, 2] and sel.names == ("search_help", "order_status")
    assert sel.tokens == sum(support.cost(i) for i in sel) <= 400
