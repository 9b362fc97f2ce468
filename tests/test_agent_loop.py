"""A full agent loop through the official OpenAI and Anthropic SDKs against a scripted model on
loopback: the seed's search-then-call example, a stable tools array, and a forbidden tool."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

import toolsift as ts
from agent_loop import run_anthropic, run_openai, weather_box
from stub_llm import StubLLM, anthropic_text, anthropic_tool_use, openai_text, openai_tool_call

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

SEARCH = {"query": "select:weather"}
CALL = {"name": "weather", "arguments": {"city": "Paris"}}


def tool_names(request: dict, key: str) -> list[str]:
    return [t["function"]["name"] if "function" in t else t["name"] for t in request[key]]


def test_openai_loop_searches_then_calls_the_real_tool_with_a_stable_tools_array() -> None:
    gate: list[str] = []
    script = [
        openai_tool_call("c1", "tool_search", SEARCH),
        openai_tool_call("c2", "call_tool", CALL),
        openai_text("Sunny."),
    ]
    with StubLLM(script) as llm:
        client = openai.OpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0)
        text, outputs = run_openai(client, weather_box(gate), "weather in Paris?", model="stub")
    assert text == "Sunny." and outputs[-1] == "sunny in Paris" and gate == ["weather"]
    assert '"name": "weather"' in outputs[0]
    tools = [r["tools"] for r in llm.requests]
    assert len(tools) == 3 and tools[0] == tools[1] == tools[2]
    assert tool_names(llm.requests[0], "tools") == ["tool_search", "call_tool"]


def test_anthropic_loop_searches_then_calls_the_real_tool() -> None:
    gate: list[str] = []
    script = [
        anthropic_tool_use("t1", "tool_search", SEARCH),
        anthropic_tool_use("t2", "call_tool", CALL),
        anthropic_text("Sunny."),
    ]
    with StubLLM(script) as llm:
        client = anthropic.Anthropic(base_url=llm.url, api_key="test", max_retries=0)
        text, outputs = run_anthropic(client, weather_box(gate), "weather in Paris?", model="stub")
    assert text == "Sunny." and outputs[-1] == "sunny in Paris" and gate == ["weather"]
    assert all(r["tools"] == llm.requests[0]["tools"] for r in llm.requests)


def test_a_forbidden_tool_is_never_offered_and_calling_it_fails_like_an_unknown_one() -> None:
    catalog = ts.Catalog(
        [ts.Tool("weather", "Current weather"), ts.Tool("wire_money", "Wire money", permissions="treasury")]
    )
    box = ts.Toolbox(catalog, tiers=ts.ToolTierOptions(), handlers={"wire_money": lambda a: "sent"})
    script = [
        openai_tool_call("c1", "tool_search", {"query": "wire money"}),
        openai_tool_call("c2", "call_tool", {"name": "wire_money", "arguments": {}}),
        openai_tool_call("c3", "call_tool", {"name": "no_such_tool", "arguments": {}}),
        openai_text("Cannot."),
    ]
    with StubLLM(script) as llm:
        client = openai.OpenAI(base_url=llm.url + "/v1", api_key="test", max_retries=0)
        _, outputs = run_openai(client, box, "send money", model="stub")
    assert outputs[0] == "[]"
    assert outputs[1].replace("wire_money", "X") == outputs[2].replace("no_such_tool", "X")
    assert all("wire_money" not in str(r["tools"]) for r in llm.requests)
