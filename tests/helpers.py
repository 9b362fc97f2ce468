"""Shared test data."""

from __future__ import annotations

import toolsift as ts

AGENT = ["crm.read", "orders.read"]
"""The seed example's support agent."""


def seed_tool(name: str, desc: str, perm: str, core: bool = False) -> ts.Tool:
    """A tool of the seed example: costs (len(name) + len(desc) + 300) // 4 + 1 tokens."""
    return ts.Tool(name, desc, permissions=perm, core=core, cost_tokens=(len(name) + len(desc) + 300) // 4 + 1)
