"""Gateway replicas sharing a real redis-server: one catalog everywhere, changes seen by every
replica within 2 s, usage counted on all of them, held schema changes that stay held across a
change of lister, permissions enforced on each replica. Three gateways run in this process on
loopback, each with its own upstream connections to real MCP servers (official SDK)."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import anyio

import toolsift as ts
from cluster_support import VISIBLE_WITHIN_S, config_text, wait_for
from gateway_support import ALICE, BOB, ROOT, call, running, search, session, text_of
from redis_support import RedisServer
from toolsift import cli
from toolsift.errors import GatewayConfigError
from toolsift.gateway import parse
from toolsift.gateway.server import Gateway
from toolsift.learning import Learned, words
from toolsift.plan import Tier
from toolsift.tiers import Toolbox, ToolTierOptions, usage_key


class Replicas:
    """Gateways of one cluster in this process, each stoppable on its own."""

    def __init__(self, text: str, tmp_path: Path, n: int) -> None:
        self.stacks = [ExitStack() for _ in range(n)]
        self.gateways: list[Gateway] = []
        for i, stack in enumerate(self.stacks):
            folder = tmp_path / f"replica{i}"
            folder.mkdir()
            self.gateways.append(stack.enter_context(running(text, folder)))

    def stop(self, gateway: Gateway) -> None:
        i = self.gateways.index(gateway)
        self.stacks[i].close()
        del self.gateways[i], self.stacks[i]

    def close(self) -> None:
        for stack in self.stacks:
            stack.close()

    def lister(self) -> Gateway:
        (found,) = [g for g in self.gateways if g.replication is not None and g.replication.cluster.leading]
        return found

    def others(self) -> list[Gateway]:
        return [g for g in self.gateways if g is not self.lister()]

    def converged(self) -> bool:
        numbers = {g.version.number for g in self.gateways}
        leading = [g for g in self.gateways if g.replication is not None and g.replication.cluster.leading]
        return len(numbers) == 1 and numbers != {0} and len(leading) == 1 and len(self.gateways[0].version.entries) > 0


@pytest.fixture
def cluster(redis_server: RedisServer, files_url: str, weather_url: str, tmp_path: Path) -> Iterator[Replicas]:
    replicas = Replicas(config_text(redis_server.url, files_url, weather_url, tmp_path), tmp_path, 3)
    try:
        wait_for(replicas.converged)
        yield replicas
    finally:
        replicas.close()


def test_three_replicas_serve_one_catalog_and_each_enforces_permissions(cluster: Replicas) -> None:
    lister, others = cluster.lister(), cluster.others()
    assert all(g.replication is not None and g.replication.loaded >= 1 for g in others)  # loaded, not listed
    answers = []

    async def scenario(gateway: Gateway) -> None:
        async with session(gateway, ALICE) as alice, session(gateway, BOB) as bob:
            found = [await search(alice, q) for q in ("weather forecast for a city", "read a text file")]
            answers.append(found)
            assert found[0][0] == "weather__get_forecast" and "files__read_file" in found[1]
            assert text_of(await call(alice, "weather__get_forecast", {"city": "Oslo"})) == "Oslo: sunny for 3 days"
            listing = json.dumps([t.model_dump(mode="json") for t in (await bob.list_tools()).tools])
            assert "files" not in listing
            assert await search(bob, "read a text file delete file") == []
            assert text_of(await call(bob, "files__read_file", {"path": "x"})) == "Unknown tool: files__read_file"
            assert text_of(await call(alice, "files__delete_file", {"path": "x"})) == "Unknown tool: files__delete_file"

    for gateway in (lister, *others):
        anyio.run(scenario, gateway)
    assert answers[0] == answers[1] == answers[2]
    assert {g.version.number for g in cluster.gateways} == {lister.version.number}


def test_a_change_on_one_upstream_is_visible_on_every_replica_within_2_s(cluster: Replicas) -> None:
    follower = cluster.others()[0]

    async def grow() -> None:
        async with session(follower, ROOT) as root:  # the upstream tells only this connection
            assert text_of(await call(root, "files__grow", {})) == "grown"

    anyio.run(grow)
    grown = time.monotonic()
    for gateway in cluster.gateways:
        wait_for(lambda g=gateway: "files__archive_folder" in g.version.entries, timeout=VISIBLE_WITHIN_S)
    took = time.monotonic() - grown
    assert took < VISIBLE_WITHIN_S

    async def archive(gateway: Gateway) -> None:
        async with session(gateway, ALICE) as alice:
            assert "files__archive_folder" in await search(alice, "compress a folder into a zip archive")
            assert text_of(await call(alice, "files__archive_folder", {"path": "docs"})) == "archived docs"

    for gateway in cluster.gateways:
        anyio.run(archive, gateway)


def test_every_replica_serves_the_learned_words_of_the_store_with_each_version(
    redis_server: RedisServer, files_url: str, weather_url: str, tmp_path: Path
) -> None:
    usage = tmp_path / "usage.db"
    stored = Learned(usage)  # words learned before: every replica must serve them from the start
    for _ in range(3):
        stored.add("shared", {"weather__get_forecast": words("will it pour down in Oslo")})
    stored.close()
    # the learning round is an hour away: only the versions themselves can carry the words
    gateway = {"learn": True, "learn_rebuild_s": 3600, "learn_scope": "shared", "usage": str(usage)}
    replicas = Replicas(config_text(redis_server.url, files_url, weather_url, tmp_path, **gateway), tmp_path, 2)
    try:
        wait_for(replicas.converged)

        def served(g: Gateway) -> bool:
            return "weather__get_forecast" in g.version.index_for("shared").learned

        for g in replicas.gateways:
            wait_for(lambda g=g: served(g), timeout=VISIBLE_WITHIN_S)
        follower, first = replicas.others()[0], replicas.others()[0].version.number

        async def grow() -> None:
            async with session(follower, ROOT) as root:
                assert text_of(await call(root, "files__grow", {})) == "grown"

        anyio.run(grow)  # a new version, loaded by the follower from Redis
        wait_for(lambda: follower.version.number > first, timeout=VISIBLE_WITHIN_S)
        assert served(follower)
    finally:
        replicas.close()


def budget_listing_one_weather_tool(gateway: Gateway) -> int:
    """A budget at which alice's plan, with no usage, lists air quality and defers the forecast
    (the larger schema goes first), found on the catalog the replicas serve."""
    index, perms = gateway.version.index, ["files", "weather"]
    pinned = [n for n in index.names if index.tool(index.position(n)).core]
    for budget in range(100, 4000, 5):
        tiers = ToolTierOptions(core=pinned, pinned=pinned, budget_tokens=budget)
        plan = Toolbox(index, tiers=tiers, caller=perms).plan()
        if plan["weather__get_forecast"] is Tier.DEFERRED and plan["weather__get_air_quality"] is Tier.LISTED:
            return budget
    raise AssertionError("no such budget")


def test_usage_counted_on_three_replicas_pins_a_tool_on_every_replica_after_reset(cluster: Replicas) -> None:
    budget = budget_listing_one_weather_tool(cluster.gateways[0])
    for gateway in cluster.gateways:
        gateway.config = dataclasses.replace(gateway.config, budget_tokens=budget)
        gateway.reset()

    def tiers(name: str) -> set[str]:
        async def plan(gateway: Gateway) -> str:
            caller = gateway.config.callers[0]  # alice
            return (await gateway.listing(caller)).toolbox.plan()[name].value

        return {anyio.run(plan, g) for g in cluster.gateways}

    assert tiers("weather__get_forecast") == {"deferred"} and tiers("weather__get_air_quality") == {"listed"}
    for gateway in cluster.gateways:  # one call on each: the warm-up (3 calls) is reached only together

        async def use(gateway: Gateway = gateway) -> None:
            async with session(gateway, ALICE) as alice:
                assert not (await call(alice, "weather__get_forecast", {"city": "Pune"})).is_error

        anyio.run(use)
    assert tiers("weather__get_forecast") == {"deferred"}  # pins move only at reset()
    for gateway in cluster.gateways:
        gateway.reset()
    assert tiers("weather__get_forecast") == {"listed"} and tiers("weather__get_air_quality") == {"deferred"}
    # bob's plan (his own usage key) is untouched by alice's calls
    assert cluster.gateways[0].usage.score(usage_key(["weather"]), "weather__get_forecast") == 0


def hold_a_change(replicas: Replicas, via: Gateway) -> None:
    """An upstream change of files__read_file, made through ``via``, held on every replica."""

    async def reword() -> None:
        async with session(via, ROOT) as root:
            assert text_of(await call(root, "files__reword", {})) == "reworded"

    anyio.run(reword)
    for gateway in replicas.gateways:
        wait_for(lambda g=gateway: "files__read_file" in g.held(), timeout=VISIBLE_WITHIN_S)
        assert "files__read_file" not in gateway.version.entries


def test_a_held_schema_change_stays_held_when_the_lister_changes_and_any_replica_can_accept_it(
    redis_server: RedisServer, files_url: str, weather_url: str, tmp_path: Path
) -> None:
    text = config_text(redis_server.url, files_url, weather_url, tmp_path, strict_schema_changes=True)
    replicas = Replicas(text, tmp_path, 3)
    try:
        wait_for(replicas.converged)
        hold_a_change(replicas, replicas.others()[0])
        replicas.stop(replicas.lister())  # the lister goes; another takes over its table
        wait_for(lambda: any(g.replication is not None and g.replication.cluster.leading for g in replicas.gateways))
        wait_for(replicas.converged)
        lister = replicas.lister()
        assert "files__read_file" in lister.held() and "files__read_file" not in lister.version.entries
        other = replicas.others()[0]

        async def accept() -> None:
            async with session(other, ROOT) as root:
                assert (await call(root, "files__read_file", {"path": "a"})).is_error  # still held
                digest = other.held()["files__read_file"][1]
                # a replica that does not list shows the held definition too (from the manifest)
                listed = json.loads(text_of(await root.call_tool("gateway_schema_changes", {})))
                shown = listed["held"]["files__read_file"]
                assert shown["new"] == digest and shown["definition"]["name"] == "files__read_file"
                review = await root.call_tool("gateway_schema_changes", {"accept": [f"files__read_file@{digest}"]})
                assert json.loads(text_of(review))["accepted"] == ["files__read_file"]

        anyio.run(accept)
        for gateway in replicas.gateways:
            wait_for(lambda g=gateway: "files__read_file" in g.version.entries, timeout=VISIBLE_WITHIN_S)
        import redis

        store = redis.Redis.from_url(redis_server.url)
        wait_for(lambda: store.hgetall("toolsift:acks") == {})  # an acceptance is of one change: applied, gone
        store.close()

        async def read(gateway: Gateway) -> None:
            async with session(gateway, ALICE) as alice:
                assert text_of(await call(alice, "files__read_file", {"path": "a"})) == "new contents of a"

        for gateway in replicas.gateways:
            anyio.run(read, gateway)
    finally:
        replicas.close()


@pytest.mark.parametrize("fault", ["lock_lost", "unreachable"])
def test_a_lister_that_lost_the_lock_while_publishing_leaves_the_acceptance_to_the_new_one(
    redis_server: RedisServer, files_url: str, weather_url: str, tmp_path: Path, fault: str
) -> None:
    """A lister that stalls past lock_ttl between building a version and storing it (the store
    refuses it), or that cannot reach Redis then (it serves the version alone meanwhile): it
    kept serving that version under a number the new lister gave another catalog, and forgot the
    admin's acceptance applied there, which then never reached the new lister (the change stayed
    held on every other replica)."""
    import redis

    text = config_text(redis_server.url, files_url, weather_url, tmp_path, strict_schema_changes=True)
    replicas = Replicas(text, tmp_path, 2)
    store = redis.Redis.from_url(redis_server.url)
    try:
        wait_for(replicas.converged)
        old, new = replicas.lister(), replicas.others()[0]
        hold_a_change(replicas, new)
        before = old.version.number
        assert old.replication is not None and new.replication is not None
        cluster, handed = old.replication.cluster, []
        script = cluster._publish

        async def stalled(keys: list[str], args: list[object]) -> object:
            if not handed:  # the lock expired during the stall and the other replica took it
                handed.append(store.set(keys[0], new.replication.cluster.id, px=60_000))
                if fault == "unreachable":
                    raise redis.ConnectionError("Redis unreachable from the lister")
            return await script(keys=keys, args=args)

        cluster._publish = stalled

        async def accept() -> None:
            async with session(old, ROOT) as root:
                digest = old.held()["files__read_file"][1]
                review = await root.call_tool("gateway_schema_changes", {"accept": [f"files__read_file@{digest}"]})
                assert json.loads(text_of(review))["accepted"] == ["files__read_file"]

        anyio.run(accept)
        assert handed
        if fault == "lock_lost":  # that version is dropped: the new lister's are the cluster's
            assert not cluster.leading and old.version.number == before
            assert "files__read_file" not in old.version.entries
        else:  # served here until Redis is back, then replaced by the stored one of that number
            assert old.version.number == before + 1 and "files__read_file" in old.version.entries
        wait_for(lambda: new.replication is not None and new.replication.cluster.leading)
        for gateway in replicas.gateways:  # the new lister applied the acceptance; the old one loaded it
            wait_for(lambda g=gateway: "files__read_file" in g.version.entries, timeout=VISIBLE_WITHIN_S)
        wait_for(lambda: old.version.number == new.version.number, timeout=VISIBLE_WITHIN_S)
        assert old.version.number > before and sorted(old.version.entries) == sorted(new.version.entries)
        wait_for(lambda: store.hgetall("toolsift:acks") == {})  # forgotten once stored, not before
    finally:
        store.close()
        replicas.close()


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("[cluster]\nprefix = 'x'\n", "cluster.redis"),
        ("[cluster]\nredis = 'http://127.0.0.1:6379'\n", "cluster.redis"),
        ("[cluster]\nredis = 'redis://127.0.0.1:6379'\nlock_ttl = 0\n", "cluster.lock_ttl"),
        ("[cluster]\nredis = 'redis://127.0.0.1:6379'\nprefix = 'a:b'\n", "cluster.prefix"),
        ("[cluster]\nredis = 'redis://127.0.0.1:6379'\ncolour = 1\n", "cluster.colour"),
        ("[cluster]\nredis = 5\n", "cluster.redis"),
    ],
)
def test_cluster_config_errors_name_the_field(text: str, field: str) -> None:
    import tomllib

    with pytest.raises(GatewayConfigError) as e:
        parse(tomllib.loads("[servers.a]\ncommand = 'x'\n" + text), "g.toml")
    assert e.value.field == field


def test_replicas_need_a_cluster_and_http(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text("[servers.a]\ncommand = 'x'\n")
    assert cli.main(["serve", "--config", str(path), "--replicas", "2"]) == 2
    assert "[cluster]" in capsys.readouterr().err
    cluster = "[cluster]\nredis = 'redis://127.0.0.1:1'\n"
    path.write_text(f"[gateway]\ntransport = 'stdio'\n{cluster}[servers.a]\ncommand = 'x'\n")
    assert cli.main(["serve", "--config", str(path), "--replicas", "2"]) == 2
    assert "[gateway.transport]" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # by the command line, before the config is read
        cli.main(["serve", "--config", str(path), "--replicas", "0"])
    assert refused.value.code == 2 and "argument --replicas: must be >= 1, not 0" in capsys.readouterr().err


@pytest.mark.parametrize("forgery", ["permissions", "server", "manifest", "snapshot", "deployment"])
def test_a_forged_version_in_redis_is_refused(
    cluster: Replicas, redis_server: RedisServer, forgery: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Forged, or another deployment's (same Redis, same prefix: its versions were refused
    with a message about a tool, not about the shared prefix)."""
    import redis

    from toolsift.gateway.cluster import encode_manifest, snapshot_bytes

    client = redis.Redis.from_url(redis_server.url)
    number = cluster.gateways[0].version.number
    perms = ("weather",) if forgery == "permissions" else ("files",)  # bob holds "weather" only
    name = "weather__read_file" if forgery == "server" else "files__read_file"
    tool = ts.Tool(name, "Read a text file from the workspace", permissions=perms)
    rows = ((name, "files", "read_file", "0" * 64, False, 0),)
    servers = ["billing", "files"] if forgery == "deployment" else ["files", "weather"]
    manifest = b"{not json" if forgery == "manifest" else encode_manifest(rows, {}, servers)
    snapshot = b"TSIDX garbage" if forgery == "snapshot" else snapshot_bytes(ts.Index([tool]))
    client.hset("toolsift:catalog", mapping={"version": number + 1, "manifest": manifest, "snapshot": snapshot})
    client.publish("toolsift:events", f"catalog {number + 1}")
    followers = cluster.others()

    wait_for(lambda: all(g.replication is not None and g.replication.refused >= 1 for g in followers))
    assert all(g.version.number == number and "files__write_file" in g.version.entries for g in followers)
    said = "give each its own [cluster] prefix (both use 'toolsift')"
    assert (said in caplog.text) == (forgery == "deployment")

    async def bob_sees_nothing(gateway: Gateway) -> None:
        async with session(gateway, BOB) as bob:
            assert await search(bob, "read a text file") == []
            assert text_of(await call(bob, name, {"path": "x"})) == f"Unknown tool: {name}"

    for gateway in cluster.gateways:
        anyio.run(bob_sees_nothing, gateway)


def test_the_readme_cluster_config_is_valid_and_its_section_short() -> None:
    import re

    import tomllib

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme[readme.index("### Several replicas (cluster)") : readme.index("## Framework adapters")]
    assert len(section.strip().splitlines()) <= 30
    block = re.search(r"```toml\n(.*?)```", section, re.S)
    assert block is not None
    config = parse(tomllib.loads(block.group(1) + "[servers.a]\ncommand = 'x'\n"), "README")
    assert config.cluster is not None and config.cluster.redis.startswith("redis://")


def test_a_port_another_program_holds_is_said_and_replicas_are_not_restarted_for_ever(
    weather_url: str, redis_server: RedisServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bind failed after the whole start-up, as a raw exception group; under --replicas the
    supervisor restarted every replica after each failure, for ever."""
    import socket
    import subprocess
    import sys

    from gateway_support import config_text as single_config

    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    port = held.getsockname()[1]
    try:
        path = tmp_path / "gateway.toml"
        path.write_text(single_config(weather_url, tmp_path))
        assert cli.main(["serve", "--config", str(path), "--port", str(port)]) == 2
        assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err
        clustered = tmp_path / "clustered.toml"
        clustered.write_text(
            single_config(weather_url, tmp_path) + f"\n[cluster]\nredis = {json.dumps(redis_server.url)}\n"
        )
        supervisor = subprocess.run(
            [
                sys.executable,
                "-m",
                "toolsift",
                "serve",
                "--config",
                str(clustered),
                "--port",
                str(port),
                "--replicas",
                "2",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert supervisor.returncode == 2 and "refused its configuration" in supervisor.stderr
    finally:
        held.close()


def test_a_version_number_that_is_not_whole_is_ignored_and_published_over(redis_server: RedisServer) -> None:
    """A fraction (or text) in the version field raised a raw ValueError on every tick, for
    good; and the publish script kept fractions from then on."""
    import redis

    from toolsift.gateway.cluster import Cluster

    client = redis.Redis.from_url(redis_server.url)
    prefix = "fraction"
    client.hset(f"{prefix}:catalog", mapping={"version": "2.5", "manifest": b"{}", "snapshot": b"x"})

    async def main() -> tuple[int | None, object, int | None, object]:
        cluster = Cluster(redis_server.url, prefix=prefix, lock_ttl=5.0)
        try:
            stored, fetched = await cluster.stored_version(), await cluster.fetch()
            assert await cluster.elect()
            number = await cluster.publish(0, b"{}", b"snapshot")
            return stored, fetched, number, client.hget(f"{prefix}:catalog", "version")
        finally:
            await cluster.close()

    stored, fetched, number, written = anyio.run(main)
    assert (stored, fetched) == (0, None)  # nothing loadable until the lister publishes over it
    assert number == 3 and written == b"3"  # a whole number again (2.5 floored, plus one)
