from __future__ import annotations

import pytest

import toolsift as ts

AGENT = ["crm.read", "orders.read"]


def seed_tool(name: str, desc: str, perm: str, core: bool = False) -> ts.Tool:
    """A tool of the seed example: costs (len(name) + len(desc) + 300) // 4 + 1 tokens."""
    return ts.Tool(name, desc, permissions=perm, core=core, cost_tokens=(len(name) + len(desc) + 300) // 4 + 1)


@pytest.fixture
def support() -> ts.Index:
    """The seed's six-tool support catalog."""
    return ts.Index(
        [
            seed_tool("search_help", "Search the help center articles", "", True),
            seed_tool("lookup_account", "Look up a customer account by email or id", "crm.read"),
            seed_tool("order_status", "Get the shipping status of an order", "orders.read"),
            seed_tool("issue_refund", "Refund a customer order payment to the card", "billing.refund"),
            seed_tool("refund_policy", "Explain the refund policy to the customer", ""),
            seed_tool("delete_account", "Delete a customer account permanently", "admin"),
        ]
    )
