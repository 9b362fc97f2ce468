"""The gateway at catalog scale, with real parts: an upstream of thousands of tools (official SDK,
stdio, pages of 500) and one with a description over a megabyte, the gateway in this process,
clients over loopback HTTP. The listing of each configured caller is built as soon as a version
is in service; the tools array fits its budget and is the same on every call; a description the
gateway cuts is reported, never cut silently."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import anyio

from gateway_support import SERVERS, eventually, running, search, session, text_of
from toolsift.assemble import default_token_count
from toolsift.gateway.server import Gateway

A, B = "scale-caller-a-token", "scale-caller-b-token"


def config(tmp_path: Path, tools: int, huge: int = 0, **gateway: Any) -> str:
    extra = "".join(f"{k} = {json.dumps(v)}\n" for k, v in gateway.items())
    arguments = [str(SERVERS / "many_server.py"), "--tools", str(tools), "--huge", str(huge)]
    return f"""
[gateway]
port = 0
budget_tokens = 4000
log = {json.dumps(str(tmp_path / "gateway.jsonl"))}
{extra}
[servers.many]
command = {json.dumps(sys.executable)}
args = {json.dumps(arguments)}

[callers.a]
token = "{A}"
permissions = ["many"]

[callers.b]
token = "{B}"
permissions = ["many", "extra"]
"""


def ready(gateway: Gateway, tools: int) -> None:
    async def check() -> bool:
        return len(gateway.version.entries) == tools and gateway.version.ready.is_set()

    anyio.run(eventually, check, 60.0)


def tokens(tool: Any) -> int:
    """A tools/list entry counted as the plan counts it."""
    return default_token_count({"name": tool.name, "description": tool.description, "parameters": tool.input_schema})


def test_every_configured_callers_listing_is_built_before_its_first_request(tmp_path: Path) -> None:
    with running(config(tmp_path, 2_000), tmp_path) as gateway:
        ready(gateway, 2_000)
        listings = dict(gateway.version.listings)  # no client has asked anything yet
        assert set(listings) == set(gateway.listing_keys()) == {(("many",), ""), (("extra", "many"), "")}

        async def scenario() -> None:
            async with session(gateway, A) as client:
                listed = await client.list_tools()
            assert [t.name for t in listed.tools] == [t.name for t in listings[(("many",), "")].tools]

        anyio.run(scenario)
        assert gateway.version.listings[(("many",), "")] is listings[(("many",), "")]  # served from it, not rebuilt
    events = [json.loads(line) for line in (tmp_path / "gateway.jsonl").read_text().splitlines()]
    assert [e["tools"] for e in events if e["event"] == "ready"][-1] == 2_000


def test_a_2000_tool_upstream_gets_a_tools_array_within_budget_and_the_same_on_every_call(tmp_path: Path) -> None:
    with running(config(tmp_path, 2_000), tmp_path) as gateway:
        ready(gateway, 2_000)

        async def scenario() -> list[str]:
            arrays = []
            for token, mode in ((A, "legacy"), (A, "auto"), (A, "legacy"), (B, "auto")):
                async with session(gateway, token, mode=mode) as client:
                    for _ in range(2):
                        listed = (await client.list_tools()).tools
                        assert sum(tokens(t) for t in listed) <= 4_000
                        arrays.append(json.dumps([t.model_dump(mode="json") for t in listed], sort_keys=True))
                    assert (await search(client, "delete a queue", 3))[0].startswith("many__g")
            return arrays

        arrays = anyio.run(scenario)
        assert len(set(arrays)) == 1  # every call, both protocol eras, both callers (same tools visible)
        search_tool = json.loads(arrays[0])[0]
        assert search_tool["name"] == "tool_search" and "many__g0 (40 tools)" in search_tool["description"]


def test_a_description_over_a_megabyte_is_cut_and_reported(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    with running(config(tmp_path, 20, huge=1_500_000), tmp_path) as gateway:
        ready(gateway, 21)
        assert gateway.truncated() == {"many__huge_manual": 1_500_000}

        async def scenario() -> None:
            async with session(gateway, A) as client:
                listed = (await client.list_tools()).tools
                assert sum(tokens(t) for t in listed) <= 4_000
                found = await client.call_tool("tool_search", {"query": "select:many__huge_manual"})
                (definition,) = json.loads(text_of(found))
                assert len(definition["description"]) < 16_384 + 100
                assert definition["description"].endswith("[cut by the gateway: 1,483,616 more characters]")
                assert await search(client, "zebracorn reactor operations manual", 1) == ["many__huge_manual"]

        anyio.run(scenario)
    assert "many: cut the texts of 1 tool(s) to 16,384 characters" in capfd.readouterr().err
    events = [json.loads(line) for line in (tmp_path / "gateway.jsonl").read_text().splitlines()]
    cut = [e for e in events if e["event"] == "description_truncated"]
    assert [(e["tool"], e["chars"], e["kept"]) for e in cut] == [("many__huge_manual", 1_500_000, 16_384)]
    assert [e["truncated"] for e in events if e["event"] == "ready"][-1] == 1
