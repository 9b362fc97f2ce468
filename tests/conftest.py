from __future__ import annotations

import pytest

import toolsift as ts
from helpers import seed_tool


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
