"""Shared test data."""

from __future__ import annotations

import re
from pathlib import Path

import toolsift as ts

AGENT = ["crm.read", "orders.read"]
"""The seed example's support agent."""


def seed_tool(name: str, desc: str, perm: str, core: bool = False) -> ts.Tool:
    """A tool of the seed example: costs (len(name) + len(desc) + 300) // 4 + 1 tokens."""
    return ts.Tool(name, desc, permissions=perm, core=core, cost_tokens=(len(name) + len(desc) + 300) // 4 + 1)


README_PATH = Path(__file__).resolve().parent.parent / "README.md"


def readme_block(heading: str) -> str:
    """The one python block under the README's ``### heading`` (at most 15 lines)."""
    text = README_PATH.read_text(encoding="utf-8")
    section = text.split(f"\n### {heading}\n", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    [block] = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(block.strip().splitlines()) <= 15, f"the {heading} example is over 15 lines"
    return block


def readme_toolbox_prelude() -> str:
    """The README's quickstart and toolbox examples, which the framework examples continue."""
    text = README_PATH.read_text(encoding="utf-8")
    quick = re.search(r"## Quickstart\n\n```python\n(.*?)```", text, re.S)
    assert quick
    toolbox = text.split("## Agent toolbox", 1)[1].split("\n## ", 1)[0]
    return quick.group(1) + "".join(re.findall(r"```python\n(.*?)```", toolbox, re.S))
