"""Type-checked only (``mypy --strict``, by tests/test_lint.py), never run: toolsift's emitters
feed the OpenAI and Anthropic SDK clients without casts."""

from __future__ import annotations

import anthropic
import openai

import toolsift as ts


def requests(index: ts.Index, box: ts.Toolbox) -> None:
    sel = index.select("where is my order?", caller=["orders.read"], budget_tokens=4000)
    client = openai.OpenAI(api_key="unused")
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], tools=sel.to_openai())
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], tools=box.tools())
    claude = anthropic.Anthropic(api_key="unused")
    messages: list[anthropic.types.MessageParam] = [{"role": "user", "content": "hi"}]
    claude.messages.create(model="m", max_tokens=100, messages=messages, tools=sel.to_anthropic())
    claude.messages.create(model="m", max_tokens=100, messages=messages, tools=box.tools("anthropic"))
    claude.messages.create(model="m", max_tokens=100, messages=messages, tools=box.hosted_search_tools())
