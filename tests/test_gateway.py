"""The MCP gateway end to end: real upstream servers (official SDK, stdio and streamable HTTP),
a real gateway, real client sessions over HTTP on loopback and over stdio."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import anyio
import httpx2
from mcp import Client, StdioServerParameters

from gateway_support import ALICE, BOB, ROOT, SERVERS, call, config_text, eventually, running, search, session, text_of
from toolsift import cli
from toolsift.errors import GatewayConfigError
from toolsift.eval import load_gateway_log
from toolsift.gateway import load_config, parse
from toolsift.gateway.server import Gateway


@pytest.fixture
def gateway(weather_url: str, tmp_path: Path) -> Iterator[Gateway]:
    with running(config_text(weather_url, tmp_path), tmp_path) as gw:
        yield gw


def test_search_finds_and_call_runs_a_tool_of_each_upstream(gateway: Gateway) -> None:
    async def scenario() -> None:
        async with session(gateway, ALICE) as client:
            listed = await client.list_tools()
            names = [t.name for t in listed.tools]
            assert names == ["files__read_file", "tool_search", "call_tool"]  # pinned core tool, then meta-tools
            schema = listed.tools[0].output_schema  # the upstream's, as it lists it
            assert schema is not None and schema["title"] == "read_fileOutput"
            assert "files__read_file" in await search(client, "read the contents of a text file")
            assert (await search(client, "weather forecast for a city"))[0] == "weather__get_forecast"
            result = await call(client, "files__read_file", {"path": "notes.txt"})
            assert not result.is_error and text_of(result).startswith("contents of notes.txt")
            result = await call(client, "weather__get_forecast", {"city": "Oslo", "days": 2})
            assert text_of(result) == "Oslo: sunny for 2 days"
            direct = await client.call_tool("files__read_file", {"path": "a.txt"})  # pinned: called by name
            assert text_of(direct).startswith("contents of a.txt")
            assert direct.structured_content is not None  # what the listed outputSchema promises
            assert direct.structured_content["result"].startswith("contents of a.txt")

    anyio.run(scenario)


def test_a_forbidden_tool_looks_exactly_like_an_unknown_one(gateway: Gateway) -> None:
    async def scenario() -> None:
        async with session(gateway, BOB) as bob, session(gateway, ALICE) as alice:
            listing = json.dumps([t.model_dump(mode="json") for t in (await bob.list_tools()).tools])
            assert "files" not in listing  # not listed, not in tool_search's description
            assert await search(bob, "read a text file delete file") == []
            forbidden = await call(bob, "files__read_file", {"path": "x"})
            unknown = await call(bob, "files__no_such_tool", {"path": "x"})
            assert forbidden.is_error and unknown.is_error
            assert text_of(forbidden) == text_of(unknown).replace("files__no_such_tool", "files__read_file")
            direct = await bob.call_tool("files__read_file", {"path": "x"})
            assert text_of(direct) == text_of(forbidden)
            # a rule: destructive tools need "admin"; alice may read but not delete
            assert "files__delete_file" not in await search(alice, "delete a file permanently")
            denied = await call(alice, "files__delete_file", {"path": "x"})
            assert text_of(denied) == "Unknown tool: files__delete_file"
        async with session(gateway, ROOT) as root:
            assert "files__delete_file" in await search(root, "delete a file permanently")
            assert text_of(await call(root, "files__delete_file", {"path": "x"})) == "deleted x"

    anyio.run(scenario)


def test_requests_without_a_known_token_are_refused(gateway: Gateway) -> None:
    url = f"http://127.0.0.1:{gateway.port}/mcp"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for headers in ({}, {"Authorization": "Bearer wrong-token-000"}, {"X-API-Key": "nope"}):
        response = httpx2.post(url, json=body, headers={"Accept": "application/json, text/event-stream", **headers})
        assert response.status_code == 401


def test_an_upstream_tool_added_at_runtime_becomes_searchable(gateway: Gateway) -> None:
    notified = anyio.Event()

    async def scenario() -> None:
        async def on_message(message: Any) -> None:
            if type(message).__name__ == "ToolListChangedNotification":
                notified.set()

        async with session(gateway, ROOT, message_handler=on_message, mode="legacy") as client:
            await client.list_tools()
            assert "files__archive_folder" not in await search(client, "compress a folder into a zip archive")
            version = gateway.version.number
            assert text_of(await call(client, "files__grow", {})) == "grown"

            async def found() -> bool:
                return "files__archive_folder" in await search(client, "compress a folder into a zip archive")

            await eventually(found)
            assert text_of(await call(client, "files__archive_folder", {"path": "docs"})) == "archived docs"
            with anyio.fail_after(10):
                await notified.wait()  # downstream clients are told to re-list
            assert gateway.version.number == version + 1  # one delta applied, not one per notification

    anyio.run(scenario)
    events = [json.loads(line) for line in Path(gateway.config.log or "").read_text().splitlines()]
    reindex = [e for e in events if e["event"] == "reindex" and e["added"] == ["files__archive_folder"]]
    assert reindex and reindex[0]["removed"] == [] and reindex[0]["changed"] == []


def test_only_callers_who_may_use_a_changed_tool_are_told_of_it(gateway: Gateway) -> None:
    """Every session used to get ``tools/list_changed`` for any change: bob, who may not use
    the files tools, learned that (and when) one of them changed. A change is now told to the
    sessions whose tools it changes, over both the handshake-era notification and the
    2026-07-28 ``subscriptions/listen`` stream."""
    told: dict[str, int] = {"alice-legacy": 0, "bob-legacy": 0, "alice-listen": 0, "bob-listen": 0}

    def counter(name: str) -> Any:
        async def on_message(message: Any) -> None:
            if type(message).__name__ == "ToolListChangedNotification":
                told[name] += 1

        return on_message

    async def listen(client: Client, name: str, ready: anyio.Event) -> None:
        async with client.listen(tools_list_changed=True) as stream:
            ready.set()
            async for _event in stream:
                told[name] += 1

    async def scenario() -> None:
        async with (
            session(gateway, ALICE, mode="legacy", message_handler=counter("alice-legacy")) as alice,
            session(gateway, BOB, mode="legacy", message_handler=counter("bob-legacy")) as bob,
            session(gateway, ALICE) as alice_now,
            session(gateway, BOB) as bob_now,
            session(gateway, ROOT) as root,
            anyio.create_task_group() as tg,
        ):
            await alice.list_tools()
            await bob.list_tools()
            for client, name in ((alice_now, "alice-listen"), (bob_now, "bob-listen")):
                ready = anyio.Event()
                tg.start_soon(listen, client, name, ready)
                await ready.wait()
            assert text_of(await call(root, "files__grow", {})) == "grown"  # a files tool is added

            async def alice_told() -> bool:
                return told["alice-legacy"] >= 1 and told["alice-listen"] >= 1

            await eventually(alice_told)
            await anyio.sleep(0.5)  # time for a notice to bob to arrive, were one sent
            tg.cancel_scope.cancel()
        assert told["bob-legacy"] == told["bob-listen"] == 0, told

    anyio.run(scenario)


def test_a_crashed_upstream_is_reported_and_restarted(gateway: Gateway) -> None:
    async def scenario() -> None:
        async with session(gateway, ROOT) as client:
            first = text_of(await call(client, "files__read_file", {"path": "a"}))
            crashed = await call(client, "files__crash", {})
            assert crashed.is_error and "upstream 'files'" in text_of(crashed)
            forecast = await call(client, "weather__get_forecast", {"city": "Rome"})
            assert text_of(forecast) == "Rome: sunny for 3 days"  # the other upstream is unaffected

            async def back() -> bool:
                result = await call(client, "files__read_file", {"path": "a"})
                return not result.is_error

            await eventually(back, timeout=30)
            again = text_of(await call(client, "files__read_file", {"path": "a"}))
            assert again != first  # a new process (the pid is in the answer)
            assert gateway.upstreams["files"].restarts >= 1

    anyio.run(scenario)


def test_a_hanging_upstream_call_times_out_without_blocking_others(weather_url: str, tmp_path: Path) -> None:
    text = config_text(weather_url, tmp_path).replace('pinned = ["read_file"]', 'pinned = ["read_file"]\ntimeout = 0.5')
    with running(text, tmp_path) as gateway:

        async def scenario() -> None:
            async with session(gateway, ROOT) as client:
                started = time.monotonic()
                result = await call(client, "files__stall", {"seconds": 10})
                assert result.is_error and "did not answer within 0.5 s" in text_of(result)
                assert time.monotonic() - started < 5
                assert not (await call(client, "weather__get_air_quality", {"city": "Lima"})).is_error

        anyio.run(scenario)


def test_strict_mode_holds_a_changed_schema_until_acknowledged(weather_url: str, tmp_path: Path) -> None:
    with running(config_text(weather_url, tmp_path, strict_schema_changes=True), tmp_path) as gateway:

        async def scenario() -> None:
            async with session(gateway, ROOT) as client:
                assert "gateway_schema_changes" in [t.name for t in (await client.list_tools()).tools]
                assert text_of(await call(client, "files__reword", {})) == "reworded"

                async def held() -> bool:
                    return "files__read_file" in gateway.held()

                await eventually(held)
                assert "files__read_file" not in await search(client, "read a text file")
                assert (await call(client, "files__read_file", {"path": "a"})).is_error
                review = json.loads(text_of(await client.call_tool("gateway_schema_changes", {})))
                assert list(review["held"]) == ["files__read_file"]
                held = review["held"]["files__read_file"]
                assert held["old"] != held["new"] and held["definition"]["name"] == "files__read_file"
                bare = await client.call_tool("gateway_schema_changes", {"accept": ["files__read_file"]})
                assert bare.is_error and "NAME@DIGEST" in text_of(bare)  # the definition reviewed is named
                stale = await client.call_tool(
                    "gateway_schema_changes", {"accept": [f"files__read_file@{held['old']}"]}
                )
                assert json.loads(text_of(stale))["accepted"] == []  # not the held change: nothing put in service
                twice = [f"files__read_file@{held['new']}"] * 2  # raised KeyError, and lost the tool
                accepted = await client.call_tool("gateway_schema_changes", {"accept": twice})
                assert json.loads(text_of(accepted))["accepted"] == ["files__read_file"]
                assert text_of(await call(client, "files__read_file", {"path": "a"})) == "new contents of a"
            async with session(gateway, ALICE) as alice:  # not an admin: no review tool
                assert "gateway_schema_changes" not in [t.name for t in (await alice.list_tools()).tools]

        anyio.run(scenario)
    events = [json.loads(line) for line in (tmp_path / "gateway.jsonl").read_text().splitlines()]
    changed = [e for e in events if e["event"] == "schema_changed"]
    assert changed and changed[0]["tool"] == "files__read_file" and changed[0]["held"] is True


def test_the_log_records_searches_and_calls(gateway: Gateway) -> None:
    async def scenario() -> None:
        async with session(gateway, ALICE) as client:
            await search(client, "weather forecast")
            await call(client, "weather__get_forecast", {"city": "Pune"})
            await call(client, "files__delete_file", {"path": "x"})

    anyio.run(scenario)
    events = [json.loads(line) for line in Path(gateway.config.log or "").read_text().splitlines()]
    searches = [e for e in events if e["event"] == "search"]
    calls = [e for e in events if e["event"] == "call"]
    assert searches[-1]["caller"] == "alice" and searches[-1]["query"] == "weather forecast"
    assert "weather__get_forecast" in searches[-1]["tools"]
    assert [(c["tool"], c["outcome"]) for c in calls[-2:]] == [
        ("weather__get_forecast", "ok"),
        ("files__delete_file", "unknown"),
    ]
    assert all(c["ms"] >= 0 for c in calls)
    dataset = load_gateway_log(gateway.config.log or "")  # usable by `toolsift eval --gateway-log`
    assert [(q.text, q.relevant) for q in dataset.queries] == [("weather forecast", ("weather__get_forecast",))]
    assert cli.main(["eval", "--gateway-log", gateway.config.log or "", "--systems", "toolsift"]) == 0


def test_toolsift_serve_over_stdio(weather_url: str, tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(config_text(weather_url, tmp_path))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolsift", "serve", "--config", str(path), "--transport", "stdio"],
        env={"TOOLSIFT_TOKEN": BOB},
    )

    async def scenario() -> None:
        async with Client(params, cache=None) as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["tool_search", "call_tool"]
            assert (await search(client, "air quality and pollen"))[0] == "weather__get_air_quality"
            assert (await call(client, "files__read_file", {"path": "a"})).is_error  # bob: weather only

    anyio.run(scenario)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("[servers.a]\ncommand = 'x'\nurl = 'http://h'\n", "servers.a"),
        ("[servers.a]\n", "servers.a"),
        ("[servers.a__b]\ncommand = 'x'\n", "servers.a__b"),
        ("[servers.a]\ncommand = 'x'\ncolour = 1\n", "servers.a.colour"),
        ("[servers.a]\ncommand = 'x'\nargs = 'y'\ntimeout = -1\n", "servers.a.timeout"),
        ("[gateway]\nhost = '0.0.0.0'\n[servers.a]\ncommand = 'x'\n", "gateway.host"),
        ("[gateway]\nport = 'x'\n[servers.a]\ncommand = 'x'\n", "gateway.port"),
        ("[servers.a]\ncommand = 'x'\n[callers.c]\ntoken = 'short'\n", "callers.c.token"),
        ("[servers.a]\ncommand = 'x'\n[[rules]]\nmatch = 'a__*'\n", "rules[0]"),
        ("", "servers"),
        ("[servers.a]\ncommand = 'x'\ntimeout = nan\n", "servers.a.timeout"),
        ("[servers.a]\ncommand = 'x'\ntimeout = inf\n", "servers.a.timeout"),
        ("[servers.\"a\\n\"]\ncommand = 'x'\n", "servers.a\n"),
        ("[servers.a]\nurl = 'file:///etc/passwd'\n", "servers.a.url"),
        ("[gateway]\npath = 'mcp'\n[servers.a]\ncommand = 'x'\n", "gateway.path"),
        ("[gateway]\npath = ''\n[servers.a]\ncommand = 'x'\n", "gateway.path"),
        ("[servers.a]\ncommand = 'x'\n[callers.c]\ntoken = ' padded-token '\n", "callers.c.token"),
        ("[servers.a]\ncommand = 'x'\n[callers.c]\ntoken = 'tökenwithumlaut'\n", "callers.c.token"),
        ("[gateway]\nlog = 'g.db'\nusage = 'g.db'\n[servers.a]\ncommand = 'x'\n", "gateway.log"),
        ("[gateway]\nlog = 'g.db-wal'\nusage = 'g.db'\n[servers.a]\ncommand = 'x'\n", "gateway.log"),
        ("[gateway]\nlog = 'g.jsonl'\nusage = 'g.jsonl.1'\n[servers.a]\ncommand = 'x'\n", "gateway.log"),
        ("[servers.a]\ncommand = ''\n", "servers.a.command"),
        (
            "[servers.a]\ncommand = 'x'\n[callers.c]\ntoken = 'a-long-token'\npermissions = ['toolsift:ops']\n",
            "callers.c.permissions",
        ),
        ("[servers.a]\ncommand = 'x'\npermissions = ['toolsift:x']\n", "servers.a.permissions"),
        ("[servers.a]\ncommand = 'x'\n[[rules]]\nmatch = 'a__*'\nrequire = 'toolsift:x'\n", "rules[0].require"),
        ("[servers.a]\ncommand = '  '\n", "servers.a.command"),
    ],
)
def test_config_errors_name_the_field(text: str, field: str) -> None:
    import tomllib

    with pytest.raises(GatewayConfigError) as e:
        parse(tomllib.loads(text), "g.toml")
    assert e.value.field == field and "g.toml" in str(e.value)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"servers": {5: {"command": "x"}}}, "servers"),
        ({"servers": {"a": {"command": "x", "env": {1: "y"}}}}, "servers.a.env"),
        ({"servers": {"a": {"command": "x", "headers": {b"k": "v"}}}}, "servers.a.headers"),
        ({"servers": {"a": {"command": "x"}}, "callers": {7: {"token": "a-long-token"}}}, "callers"),
        ({"servers": {"a": {"command": "x"}}, ("gateway",): {}}, ""),
    ],
)
def test_a_table_given_from_python_with_a_key_that_is_not_a_string_names_it(data: Any, field: str) -> None:
    """:func:`parse` takes tables from Python too; a key TOML cannot write raised TypeError, or
    went through to the upstream's environment."""
    with pytest.raises(GatewayConfigError, match="keys must be strings") as e:
        parse(data)
    assert e.value.field == field


def test_config_file_errors(tmp_path: Path) -> None:
    with pytest.raises(GatewayConfigError, match="no such file"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[servers\n")
    with pytest.raises(GatewayConfigError, match="not valid TOML"):
        load_config(bad)


def test_every_page_of_an_upstream_listing_is_indexed(tmp_path: Path) -> None:
    text = f"""
[gateway]
port = 0
[servers.paged]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVERS / "paged_server.py"))}]
"""
    with running(text, tmp_path) as gateway:
        assert len(gateway.version.entries) == 25  # three pages

        async def scenario() -> None:
            async with session(gateway, None) as client:  # no [callers]: loopback, everything visible
                assert await search(client, "facts about yarrow", 1) == ["paged__lookup_yarrow"]
                assert text_of(await call(client, "paged__lookup_yarrow", {})) == "facts from lookup_yarrow"

        anyio.run(scenario)
