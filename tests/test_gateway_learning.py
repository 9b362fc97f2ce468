"""The gateway learns from use: a search, the call after it, and the next search of the same words
finds the tool; scoped per caller unless configured shared; kept across a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mcp")

import anyio

from gateway_support import ALICE, BOB, call, config_text, eventually, running, search, session
from toolsift.learning import Learned, words

ASK = "will it pour down in Oslo"


async def teach(client: object) -> None:
    assert "weather__get_forecast" not in await search(client, ASK)  # type: ignore[arg-type]
    result = await call(client, "weather__get_forecast", {"city": "Oslo"})  # type: ignore[arg-type]
    assert not result.is_error


def test_a_search_and_the_call_after_it_teach_that_callers_ranking_only(weather_url: str, tmp_path: Path) -> None:
    text = config_text(weather_url, tmp_path, learn=True, learn_rebuild_s=0.2)
    with running(text, tmp_path) as gateway:

        async def scenario() -> None:
            async with session(gateway, ALICE, mode="legacy") as alice, session(gateway, BOB, mode="legacy") as bob:
                await teach(alice)

                async def learned() -> bool:
                    return (await search(alice, ASK))[:1] == ["weather__get_forecast"]

                await eventually(learned)
                assert "weather__get_forecast" not in await search(bob, ASK)  # bob's scope learned nothing
                listed = [t.name for t in (await alice.list_tools()).tools]
                assert listed == ["files__read_file", "tool_search", "call_tool"]  # the tools array stays

        anyio.run(scenario)
    log = (tmp_path / "gateway.jsonl").read_text()
    assert '"event": "learned"' in log and "weather__get_forecast" in log


def test_a_shared_scope_pools_callers_and_survives_a_restart(weather_url: str, tmp_path: Path) -> None:
    usage = str(tmp_path / "usage.db")
    text = config_text(weather_url, tmp_path, learn=True, learn_rebuild_s=0.2, learn_scope="shared", usage=usage)
    with running(text, tmp_path) as gateway:

        async def scenario() -> None:
            async with session(gateway, ALICE, mode="legacy") as alice, session(gateway, BOB, mode="legacy") as bob:
                await teach(alice)

                async def learned() -> bool:
                    return (await search(bob, ASK))[:1] == ["weather__get_forecast"]

                await eventually(learned)

        anyio.run(scenario)
    with running(text, tmp_path) as gateway:

        async def after_restart() -> None:  # no call made since: only the stored words can do it
            async with session(gateway, BOB, mode="legacy") as bob:

                async def kept() -> bool:
                    return (await search(bob, ASK))[:1] == ["weather__get_forecast"]

                await eventually(kept)

        anyio.run(after_restart)


def test_words_another_process_writes_to_the_store_are_served_at_the_next_round(
    weather_url: str, tmp_path: Path
) -> None:
    usage = str(tmp_path / "usage.db")
    text = config_text(weather_url, tmp_path, learn=True, learn_rebuild_s=0.2, learn_scope="shared", usage=usage)
    with running(text, tmp_path) as gateway:

        async def scenario() -> None:
            async with session(gateway, BOB, mode="legacy") as bob:
                assert "weather__get_forecast" not in await search(bob, ASK)
                peer = Learned(usage)  # another gateway process sharing the store
                for _ in range(3):
                    peer.add("shared", {"weather__get_forecast": words(ASK)})
                peer.close()

                async def served() -> bool:
                    return (await search(bob, ASK))[:1] == ["weather__get_forecast"]

                await eventually(served)

        anyio.run(scenario)


def test_a_store_that_fails_costs_the_events_not_the_gateway(
    weather_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holding the store's write lock (a backup, a second writer) past the busy
    timeout: before, the error ended the learning task and with it the whole gateway."""
    import sqlite3

    import toolsift.usage

    monkeypatch.setattr(toolsift.usage, "BUSY_TIMEOUT_S", 0.2)  # the default, 30 s, fails alike
    usage = str(tmp_path / "usage.db")
    text = config_text(weather_url, tmp_path, learn=True, learn_rebuild_s=0.2, usage=usage)
    with running(text, tmp_path) as gateway:

        async def scenario() -> None:
            async with session(gateway, ALICE, mode="legacy") as alice:
                await teach(alice)  # a search and a call: the event the next round learns from
                other = sqlite3.connect(usage, isolation_level=None)
                other.execute("BEGIN IMMEDIATE")  # held while that round tries to write it
                try:
                    await anyio.sleep(1.5)
                finally:
                    other.execute("ROLLBACK")
                    other.close()
                assert "weather__get_forecast" in await search(alice, "weather forecast for Oslo")  # still serving
                await teach(alice)  # the store works again: so does learning

                async def learned() -> bool:
                    return (await search(alice, ASK))[:1] == ["weather__get_forecast"]

                await eventually(learned)

        anyio.run(scenario)
    log = (tmp_path / "gateway.jsonl").read_text()
    assert '"event": "learn_failed"' in log and '"event": "learned"' in log


CAROL = "carol-token-000"
CAROL_CALLER = f'\n[callers.carol]\ntoken = "{CAROL}"\npermissions = ["files", "weather"]\n'  # alice's


@pytest.mark.parametrize("scope", ["caller", "permissions"])
def test_callers_with_the_same_permissions_learn_apart_unless_pooled(
    weather_url: str, tmp_path: Path, scope: str
) -> None:
    """The default scope was the permission set: carol, with alice's permissions, was ranked
    by alice's words (and could read them off her own ranking). ``learn_scope = "permissions"``
    now pools such callers on purpose."""
    text = config_text(weather_url, tmp_path, learn=True, learn_rebuild_s=0.2, learn_scope=scope) + CAROL_CALLER
    with running(text, tmp_path) as gateway:

        async def scenario() -> None:
            async with session(gateway, ALICE, mode="legacy") as alice, session(gateway, CAROL, mode="legacy") as carol:
                await teach(alice)

                async def learned() -> bool:
                    return (await search(alice, ASK))[:1] == ["weather__get_forecast"]

                await eventually(learned)
                pooled = (await search(carol, ASK))[:1] == ["weather__get_forecast"]
                assert pooled == (scope == "permissions")

        anyio.run(scenario)


def test_a_bad_row_in_the_store_costs_that_row_not_the_gateway(weather_url: str, tmp_path: Path) -> None:
    """One row another program wrote (a score that is not a number), in a scope no caller
    uses, failed every index build: the gateway served no tool at all."""
    usage = str(tmp_path / "usage.db")
    peer = Learned(usage)
    for _ in range(3):
        peer.add("user:bob", {"weather__get_forecast": words(ASK)})
    peer._db.execute("INSERT INTO learned VALUES ('some-old-scope', 'x', 'word', 'not a number', 0)")
    peer.close()
    text = config_text(weather_url, tmp_path, learn=True, learn_rebuild_s=0.2, usage=usage)
    with running(text, tmp_path) as gateway:

        async def scenario() -> None:
            async with session(gateway, BOB, mode="legacy") as bob:

                async def served() -> bool:
                    return (await search(bob, ASK))[:1] == ["weather__get_forecast"]

                await eventually(served)

        anyio.run(scenario)


def test_a_search_by_group_teaches_nothing(weather_url: str, tmp_path: Path) -> None:
    """A lookup by group names no request: the calls after it taught the group's words."""
    usage = str(tmp_path / "usage.db")
    text = config_text(weather_url, tmp_path, learn=True, learn_rebuild_s=0.2, usage=usage)
    with running(text, tmp_path) as gateway:

        async def scenario() -> None:
            async with session(gateway, ALICE, mode="legacy") as alice:
                found = await alice.call_tool("tool_search", {"query": ASK, "group": "weather"})
                assert not found.is_error
                assert not (await call(alice, "weather__get_forecast", {"city": "Oslo"})).is_error
                await anyio.sleep(1.0)  # five learning rounds: the search went idle, so it was taken

        anyio.run(scenario)
    assert Learned(usage).scopes() == []


def test_requests_without_a_session_teach_only_the_tools_their_search_showed(weather_url: str, tmp_path: Path) -> None:
    """2026-07-28 requests carry no session: every conversation of a caller shares one slot, so
    a call in one conversation taught the tool another conversation's search ("list the files of
    my home directory" learned by the forecast tool)."""
    text = config_text(weather_url, tmp_path, learn=True, learn_rebuild_s=0.2)
    with running(text, tmp_path) as gateway:

        async def scenario() -> None:
            async with session(gateway, ALICE) as first, session(gateway, ALICE) as second:  # no sessions
                await search(first, ASK)
                assert "weather__get_forecast" not in await search(second, "list the files of my home directory")
                assert not (await call(first, "weather__get_forecast", {"city": "Oslo"})).is_error
                shown = await search(first, "weather forecast for a city", limit=5)
                assert "weather__get_forecast" in shown
                assert not (await call(first, "weather__get_forecast", {"city": "Oslo"})).is_error
                await search(first, "something else")  # ends that search's event

        anyio.run(scenario)
        store = gateway.learned
        assert store is not None
        taught = {w for scope in store.scopes() for ws in store.weights(scope).values() for w in ws}
    assert not taught & set(words("list the files of my home directory"))
