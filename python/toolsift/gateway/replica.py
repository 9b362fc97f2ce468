"""One gateway replica's part in a cluster: elect the lister, publish or follow versions.

Every ``lock_ttl / 3`` seconds, and at once on each message of the events channel, a replica
renews (or tries to take) the lister's lock and reads the stored version number:

* the lister applies its upstreams' listings as a single gateway does, and publishes each new
  version (:meth:`Replication.publish`); it stores the version again when Redis has fewer (Redis
  restarted without its data), and applies acknowledgements of held changes found in Redis;
* any other replica loads a stored version newer than its own and swaps it in whole;
* a replica that becomes the lister first takes over the tool table of the version it serves
  (digests included, so a change held by the old lister stays held), then applies the latest
  listing of each of its upstreams.

A lister that finds, when it publishes, that it lost the lock (it stalled past ``lock_ttl`` and
another replica took over) does not put that version in service: the new lister's versions are
the cluster's, and an acceptance applied in it stays in Redis for the new lister to apply. An
acceptance is forgotten only once a version that applies it is stored.

While Redis cannot be reached, every replica serves the version it has (the lister keeps applying
listings locally, and publishes once Redis is back; if another replica listed meanwhile, its
stored version replaces the local one even under the same number), usage is counted locally and written later
(:class:`~toolsift.RedisUsageStore`), and an acknowledgement fails with
:class:`~toolsift.errors.StoreUnavailableError`.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.abc

from ..errors import ToolsiftError
from ..index import Index
from ..registry import Tool
from .cluster import Cluster, Row, decode_manifest, encode_manifest, load_snapshot, snapshot_bytes
from .config import GatewayConfig, namespaced, permissions_of
from .telemetry import Telemetry
from .upstream import Upstream
from .versions import Entry, Version
from .versions import digest as tool_digest

log = logging.getLogger("toolsift.gateway")


def _tables(version: Version) -> tuple[dict[str, Entry], dict[str, Entry]]:
    """The tool table and held changes of ``version``, for a replica that becomes the lister to
    take over."""
    table = {}
    for name, server, upstream, digest, hidden, cut in version.table:
        entry = version.entries.get(name)
        tool = entry.tool if entry is not None else Tool(name, "")
        table[name] = _entry(server, upstream, tool, digest, hidden, cut, placeholder=entry is None)
    # changes held in that version stay held here, known by their new digest until this
    # replica's own listing of the server brings the definition (never in service before)
    held = {
        name: _entry(table[name].server, table[name].upstream_name, Tool(name, ""), new, placeholder=True)
        for name, (_, new) in version.held.items()
        if name in table
    }
    return table, held


class Replicated(Protocol):
    """What replication reads and changes of its gateway (:class:`~toolsift.gateway.server.Gateway`
    is one): the version in service, and the tool table behind it only through methods that take
    the table's lock themselves. Named here so that this module does not import the server,
    which imports it."""

    config: GatewayConfig
    upstreams: dict[str, Upstream]
    version: Version
    log: Any  # server.EventLog
    telemetry: Telemetry

    def holds_changes(self) -> bool: ...
    def forget_table(self) -> None: ...
    async def take_over(self, tables: Callable[[Version], tuple[dict[str, Entry], dict[str, Entry]]]) -> None: ...
    def renumber(self, number: int) -> None: ...
    async def put_in_service(self, names: Iterable[str], digests: Mapping[str, str] | None = None) -> list[str]: ...
    async def announce(self, version: Version, previous: Version) -> None: ...
    def learned_indexes(self, index: Index, built: Mapping[str, Index]) -> dict[str, Index]: ...


class Replication:
    """Keeps one :class:`~toolsift.gateway.server.Gateway` in step with the others of its cluster."""

    def __init__(self, gateway: Replicated) -> None:
        config = gateway.config.cluster
        assert config is not None
        self.gateway = gateway
        self.cluster = Cluster(config.redis, prefix=config.prefix, lock_ttl=config.lock_ttl)
        self._payload: tuple[bytes, bytes] | None = None  # the last version this replica published
        self.local = False
        """Whether the version in service was made here and is not stored (Redis was unreachable)."""
        self._unsettled: set[str] = set()  # acceptances applied in a version not stored yet
        self._wake = anyio.Event()
        self._folder = tempfile.TemporaryDirectory(
            prefix="toolsift-replica-", ignore_cleanup_errors=True
        )  # files of loaded versions
        self._refused_version = 0  # not tried again on every tick
        self.loaded = self.refused = 0
        """Versions loaded from Redis, and refused (corrupt, or not what the config allows)."""

    # -- the loop ------------------------------------------------------------------------------
    async def run(self) -> None:
        """Ticks until cancelled: on a timer, and at once on each message of the events channel."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.cluster.listen, self._woken)
            while True:
                try:
                    await self.tick()
                except Exception as e:  # a tick never ends the loop: the next one tries again
                    log.warning("cluster: tick failed: %s", e)
                with anyio.move_on_after(self.cluster.lock_ttl / 3):
                    await self._wake.wait()
                self._wake = anyio.Event()

    def _woken(self, message: str) -> None:
        server = message.partition(" ")[2] if message.startswith("changed ") else None
        if server is not None and self.cluster.leading and server in self.gateway.upstreams:
            self.gateway.upstreams[server].relist()  # another replica heard of a change
        self._wake.set()

    async def listed(self, server: str, tools: list[Any]) -> None:
        """A replica that does not list heard ``server``'s tools: when they differ from the
        version in service, it asks the lister to list that server again (an upstream may tell
        only the connection that changed it)."""
        version = self.gateway.version
        if version.number == 0:
            return  # not caught up yet: nothing to compare with
        current = {r[0]: r[3] for r in version.table if r[1] == server}
        current.update({n: new for n, (_, new) in version.held.items() if n in current})
        fresh = {namespaced(server, t.name): tool_digest(t) for t in tools}
        if fresh != current:
            await self.cluster.announce(f"changed {server}")

    async def tick(self) -> None:
        cluster, gateway = self.cluster, self.gateway
        if cluster.usage.queued:  # calls counted while Redis was unreachable
            await anyio.to_thread.run_sync(cluster.usage.flush)
        was = cluster.leading
        if await cluster.elect() and not was:
            await self._lead()
            return
        if was and not cluster.leading:
            self._resigned("another replica holds the lock")
        stored = await cluster.stored_version()
        if stored is None:
            return
        if cluster.leading:
            if (stored < gateway.version.number or self.local) and self._payload is not None:
                await self._republish()
            if gateway.holds_changes():
                await self._apply_acks()
        elif self._replaces(stored) and stored != self._refused_version:
            await self._load()

    def _replaces(self, number: int) -> bool:
        """Whether the stored version ``number`` is to replace the one in service: a newer one,
        or any when the one in service was made here and never stored (while Redis was out of
        reach, another lister's may carry the same number)."""
        return number > self.gateway.version.number or (self.local and number > 0)

    def _resigned(self, why: str) -> None:
        """This replica no longer lists: what it applied to its tool table and did not store is
        left to the new lister, and its table is taken over again when it lists once more."""
        log.warning("cluster: replica %s no longer lists (%s)", self.cluster.id, why)
        self.gateway.log.write("lister_lost", replica=self.cluster.id, version=self.gateway.version.number, why=why)
        self.gateway.forget_table()
        self._payload, self._unsettled = None, set()

    async def _lead(self) -> None:
        gateway = self.gateway
        log.warning("cluster: replica %s is now the lister", self.cluster.id)
        gateway.log.write("lister", replica=self.cluster.id, version=gateway.version.number)
        stored = await self.cluster.stored_version()
        if stored is not None and stored > gateway.version.number:
            await self._load()
        await gateway.take_over(_tables)  # when it serves versions of another lister
        if gateway.holds_changes():
            await self._apply_acks()

    # -- the lister ----------------------------------------------------------------------------
    async def publish(
        self,
        index: Index,
        table: tuple[Row, ...],
        held: dict[str, tuple[str, str]],
        reviews: Mapping[str, Mapping[str, Any]],
    ) -> int | None:
        """Stores and announces a version the lister built; its number, or ``None`` when it could
        not be published (Redis unreachable, or the lock lost: then another replica lists)."""
        manifest = encode_manifest(table, held, sorted(s.name for s in self.gateway.config.servers), reviews)
        snapshot = await anyio.to_thread.run_sync(snapshot_bytes, index)
        number = await self.cluster.publish(self.gateway.version.number, manifest, snapshot)
        if number is not None:
            self._payload = (manifest, snapshot)
            await self._stored()
        elif self.cluster.leading:
            log.warning("cluster: Redis unreachable; serving the new version here, stored once Redis is back")
            self._payload, self.local = (manifest, snapshot), True
        else:
            self._resigned("lock lost while publishing: that version is dropped")
        return number

    async def _republish(self) -> None:
        assert self._payload is not None
        number = await self.cluster.publish(self.gateway.version.number, *self._payload)
        if number is not None:
            log.warning("cluster: Redis did not have the version in service; stored it as version %d", number)
            self.gateway.renumber(number)
            await self._stored()
        elif not self.cluster.leading:
            self._resigned("lock lost while storing the version in service again")

    async def _stored(self) -> None:
        """The version in service is in Redis: the acceptances it applied are forgotten."""
        self.local = False
        done, self._unsettled = sorted(self._unsettled), set()
        await self.cluster.settle(done)

    async def _apply_acks(self) -> list[str]:
        accepted = await self.cluster.accepted()
        done = await self.gateway.put_in_service(list(accepted), accepted)
        if not done or not self.cluster.leading:  # lock lost: left in Redis for the new lister
            return done
        if self.local:  # forgotten once the version applying them is stored
            self._unsettled.update(done)
        else:
            await self.cluster.settle(done)
        return done

    async def acknowledge(self, names: list[str], digests: Mapping[str, str] | None = None) -> list[str]:
        """Stores the acceptance of each held change named (its new digest, which must be the one
        in ``digests`` when given) for the lister."""
        held = self.gateway.version.held
        done = [n for n in dict.fromkeys(names) if n in held and (digests is None or digests.get(n) == held[n][1])]
        await self.cluster.accept({n: held[n][1] for n in done})
        if self.cluster.leading:
            await self._apply_acks()
        return done

    # -- the others ----------------------------------------------------------------------------
    async def _load(self) -> None:
        gateway, started = self.gateway, time.perf_counter()
        stored = await self.cluster.fetch()
        if stored is None or not self._replaces(stored.version):
            return
        try:
            work = (stored.version, stored.manifest, stored.snapshot)
            index, table, held, reviews = await anyio.to_thread.run_sync(self._decode, *work)
        except ToolsiftError as e:  # a corrupt or foreign version: the one in service stays
            log.warning("cluster: version %d refused: %s", stored.version, e)
            gateway.log.write("version_refused", version=stored.version, error=str(e))
            self.refused, self._refused_version = self.refused + 1, stored.version
            return
        entries = {}
        for name, server, upstream, digest, hidden, cut in table:
            if name in index:  # O(1); index.names is a fresh list
                tool = index.tool(index.position(name))
                entries[name] = _entry(server, upstream, tool, digest, hidden, cut)
        if not self._replaces(stored.version):  # a newer one came in meanwhile
            return
        # each scope's learned texts on the new tools, as the lister's own swap does
        learned = await anyio.to_thread.run_sync(gateway.learned_indexes, index, {})
        if not self._replaces(stored.version):
            return
        self._payload, self.local = None, False  # what this replica made and did not store is dropped
        previous = gateway.version
        gateway.version = version = Version(
            stored.version, entries, index, held=held, reviews=reviews, table=table, learned=learned
        )
        gateway.telemetry.reindexed(version.number, len(entries), len(held), "loaded", time.perf_counter() - started)
        self.loaded += 1
        gateway.log.write("version_loaded", version=version.number, tools=len(entries))
        await gateway.announce(version, previous)

    def _decode(
        self, number: int, manifest: bytes, snapshot: bytes
    ) -> tuple[Index, tuple[Row, ...], dict[str, tuple[str, str]], dict[str, dict[str, Any]]]:
        """A stored version, checked against this replica's own config: every tool in service
        is on a configured server under its namespaced name, not hidden by a rule, and needs
        exactly the permissions the config gives it, so what is in Redis cannot open a tool to
        a caller the config does not."""
        config = self.gateway.config
        table, held, theirs, reviews = decode_manifest(manifest)
        servers = {s.name for s in config.servers}
        if theirs is not None and sorted(theirs) != sorted(servers):
            assert config.cluster is not None
            raise ToolsiftError(
                f"made by a gateway configured with other servers ({', '.join(theirs[:10]) or 'none'}; this one: "
                f"{', '.join(sorted(servers)[:10])}): if another deployment uses this Redis, give each its own "
                f"[cluster] prefix (both use {config.cluster.prefix!r}); in a rolling update, this clears "
                "once every replica runs the new configuration"
            )
        index = load_snapshot(snapshot, config.statistics, Path(self._folder.name) / f"version-{number}.tsidx")
        rows = {r[0]: r for r in table}
        for i in range(len(index)):
            tool = index.tool(i)
            row = rows.get(tool.name)
            if row is None or row[1] not in servers or namespaced(row[1], row[2]) != tool.name:
                raise ToolsiftError(f"tool {tool.name!r} is not in the manifest as a configured server's tool")
            perms, hidden = permissions_of(config, row[1], tool.name, tool.annotations)
            if hidden or tuple(sorted(tool.permissions)) != perms:
                raise ToolsiftError(f"tool {tool.name!r} does not carry the permissions the config gives it")
        return index, table, held, reviews

    async def close(self) -> None:
        await self.cluster.resign()
        await self.cluster.close()
        self._folder.cleanup()


def _entry(server: str, upstream: str, tool: Tool, digest: str, hidden: bool = False, cut: int = 0, **more: Any) -> Any:
    return Entry(server, upstream, tool, digest, hidden, cut, **more)
