"""A complete agent loop over a toolsift Toolbox, with the official OpenAI and Anthropic SDKs.

The model sees a small, stable tools array (core tools, ``tool_search``, ``call_tool``); every tool
call it makes goes through ``Toolbox.call``, which runs searches, unwraps ``call_tool`` before the
hooks and re-checks permissions. Run ``python examples/agent_loop.py`` to see both loops against a
scripted model on loopback (no network, no API key).
"""

from __future__ import annotations

import json
from typing import Any

import toolsift as ts
from toolsift.errors import ToolsiftError


def _run(box: ts.Toolbox, name: str, arguments: dict[str, Any]) -> str:
    try:
        out = box.call(name, arguments)
    except ToolsiftError as e:
        return f"error: {e}"
    return out if isinstance(out, str) else json.dumps(out)


def run_openai(client: Any, box: ts.Toolbox, prompt: str, *, model: str, max_steps: int = 8) -> tuple[str, list[str]]:
    """Chat-completions loop; returns the final text and every tool output."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    outputs: list[str] = []
    for _ in range(max_steps):
        reply = client.chat.completions.create(model=model, messages=messages, tools=box.tools("openai"))
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content or "", outputs
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                "tool_calls": [c.model_dump() for c in message.tool_calls],
            }
        )
        for call in message.tool_calls:
            out = _run(box, call.function.name, json.loads(call.function.arguments or "{}"))
            outputs.append(out)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": out})
    raise RuntimeError("the model did not finish")


def run_anthropic(
    client: Any, box: ts.Toolbox, prompt: str, *, model: str, max_steps: int = 8
) -> tuple[str, list[str]]:
    """Messages-API loop; returns the final text and every tool output."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    outputs: list[str] = []
    for _ in range(max_steps):
        reply = client.messages.create(model=model, max_tokens=1024, messages=messages, tools=box.tools("anthropic"))
        uses = [b for b in reply.content if b.type == "tool_use"]
        if not uses:
            return "".join(b.text for b in reply.content if b.type == "text"), outputs
        messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
        results = []
        for use in uses:
            out = _run(box, use.name, dict(use.input))
            outputs.append(out)
            results.append({"type": "tool_result", "tool_use_id": use.id, "content": out})
        messages.append({"role": "user", "content": results})
    raise RuntimeError("the model did not finish")


def weather_box(gate: list[str]) -> ts.Toolbox:
    """The example's toolbox: one weather tool behind tool_search, a hook recording real calls."""
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    catalog = ts.Catalog([ts.Tool("weather", "Current weather for a city", schema)])
    return ts.Toolbox(
        catalog,
        tiers=ts.ToolTierOptions(),
        handlers={"weather": lambda args: f"sunny in {args['city']}"},
        hooks=ts.Hooks(before_tool=lambda event: gate.append(event.name)),
    )


def main() -> None:
    import anthropic
    import openai

    from stub_llm import StubLLM, anthropic_text, anthropic_tool_use, openai_text, openai_tool_call

    gate: list[str] = []
    script = [
        openai_tool_call("c1", "tool_search", {"query": "select:weather"}),
        openai_tool_call("c2", "call_tool", {"name": "weather", "arguments": {"city": "Paris"}}),
        openai_text("It is sunny in Paris."),
    ]
    with StubLLM(script) as llm:
        client = openai.OpenAI(base_url=llm.url + "/v1", api_key="YOUR_KEY_HERE")
        text, outputs = run_openai(client, weather_box(gate), "weather in Paris?", model="stub")
    print(f"openai loop: {text!r}, tool outputs {outputs[1:]}, before_tool saw {gate}")
    gate.clear()
    script = [
        anthropic_tool_use("t1", "tool_search", {"query": "select:weather"}),
        anthropic_tool_use("t2", "call_tool", {"name": "weather", "arguments": {"city": "Paris"}}),
        anthropic_text("It is sunny in Paris."),
    ]
    with StubLLM(script) as llm:
        client = anthropic.Anthropic(base_url=llm.url, api_key="YOUR_KEY_HERE")
        text, outputs = run_anthropic(client, weather_box(gate), "weather in Paris?", model="stub")
    print(f"anthropic loop: {text!r}, tool outputs {outputs[1:]}, before_tool saw {gate}")


if __name__ == "__main__":
    main()
