"""Gateway replicas sharing one Redis: the elected lister, catalog versions, acknowledgements.

With ``[cluster] redis = "redis://…"``, every replica keeps its own upstream connections (calls
stay local to the replica that serves them), and one replica, the holder of a lock with a TTL
that it renews, applies the upstreams' listings: it builds each new index version, then stores
it (the index file's bytes and a manifest of the tool table) and announces it in one atomic
script that first checks it still holds the lock, so a replica that lost the lock cannot publish.
The others load each announced version whole and swap it in; a replica that starts, or misses a
message, catches up from the stored version number, which it reads on every renewal tick.

Keys, under ``prefix`` (``toolsift`` by default):

========================  =======================================================================
``<p>:leader``            the lister's replica id, with a TTL of ``lock_ttl`` seconds
``<p>:catalog``           hash: ``version``, ``manifest`` (JSON), ``snapshot`` (index file bytes)
``<p>:acks``              hash: tool name -> the schema digest an admin accepted (until applied)
``<p>:events``            pub/sub channel: ``catalog <version>``, ``ack``, ``changed <server>``
``<p>:usage:…``           usage counts (:class:`~toolsift.RedisUsageStore`)
========================  =======================================================================

Whoever can write these keys can change what every replica serves, as with index files: keep
Redis where only the gateways reach it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import socket
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from ..errors import SnapshotError, StoreUnavailableError
from ..index import Index
from ..usage import RedisUsageStore, redis_module

log = logging.getLogger("toolsift.gateway")

#: Seconds one Redis command (or connection attempt) may take before Redis counts as unreachable.
REDIS_TIMEOUT_S = 1.0

# Renews the lock when this replica holds it, takes it when nobody does.
_ELECT = """
local owner = redis.call('GET', KEYS[1])
if owner == ARGV[1] or not owner then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""

# Stores and announces a version, only while this replica holds the lock. The number is one more
# than both the stored one and the lister's own, so it keeps growing even after Redis lost its data.
_PUBLISH = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return false
end
local stored = math.floor(tonumber(redis.call('HGET', KEYS[2], 'version') or '0') or 0)
local version = math.max(stored, tonumber(ARGV[2])) + 1
redis.call('HSET', KEYS[2], 'version', version, 'manifest', ARGV[3], 'snapshot', ARGV[4])
redis.call('PUBLISH', KEYS[3], 'catalog ' .. version)
return version
"""

_RESIGN = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


@dataclass(frozen=True)
class Stored:
    """A catalog version as stored in Redis."""

    version: int
    manifest: bytes
    snapshot: bytes


class Cluster:
    """One replica's view of the shared Redis.

    Args:
        url: The Redis URL (``[cluster] redis``).
        prefix: Namespace of the keys (``[cluster] prefix``).
        lock_ttl: Seconds the lister's lock lives without renewal (``[cluster] lock_ttl``); it is
            renewed every third of that, and so is the stored version number read.
    """

    def __init__(self, url: str, *, prefix: str = "toolsift", lock_ttl: float = 5.0) -> None:
        redis = redis_module()
        from redis import asyncio as aredis

        self.errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self.id = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.lock_ttl = lock_ttl
        timeout = REDIS_TIMEOUT_S
        self._redis: Any = aredis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        self._events: Any = aredis.Redis.from_url(url, socket_connect_timeout=timeout)  # waits on pub/sub
        self._keys = {k: f"{prefix}:{k}" for k in ("leader", "catalog", "acks", "events")}
        self._elect = self._redis.register_script(_ELECT)
        self._publish = self._redis.register_script(_PUBLISH)
        self._resign = self._redis.register_script(_RESIGN)
        self.usage = RedisUsageStore(url, prefix=prefix, timeout_s=REDIS_TIMEOUT_S)
        self.leading = False
        self.available = True
        """Whether the last command reached Redis."""

    def _reached(self, ok: bool, error: BaseException | None = None) -> None:
        if ok and not self.available:
            log.warning("cluster: Redis is reachable again")
        elif not ok and self.available:
            log.warning("cluster: Redis unreachable, serving the last version: %s", error)
        self.available = ok

    async def elect(self) -> bool:
        """Renews or takes the lister's lock; whether this replica holds it (unchanged while Redis
        cannot be reached: the lister keeps applying listings locally meanwhile)."""
        try:
            held = await self._elect(keys=[self._keys["leader"]], args=[self.id, int(self.lock_ttl * 1000)])
        except self.errors as e:
            self._reached(False, e)
            return self.leading
        self._reached(True)
        self.leading = bool(held)
        return self.leading

    async def stored_version(self) -> int | None:
        """The version number in Redis (0: none stored), or ``None`` when Redis cannot be reached."""
        try:
            got = await self._redis.hget(self._keys["catalog"], "version")
        except self.errors as e:
            self._reached(False, e)
            return None
        self._reached(True)
        return _number(got) or 0

    async def fetch(self) -> Stored | None:
        """The stored version, or ``None`` (none stored, or Redis unreachable)."""
        try:
            got = await self._redis.hmget(self._keys["catalog"], ["version", "manifest", "snapshot"])
        except self.errors as e:
            self._reached(False, e)
            return None
        self._reached(True)
        number = _number(got[0])
        if number is None or got[1] is None or got[2] is None:
            return None
        return Stored(number, bytes(got[1]), bytes(got[2]))

    async def publish(self, after: int, manifest: bytes, snapshot: bytes) -> int | None:
        """Stores and announces a version numbered above ``after`` and the stored one; its number,
        or ``None`` when Redis cannot be reached or this replica no longer holds the lock (then
        :attr:`leading` is false: another replica lists)."""
        keys = [self._keys["leader"], self._keys["catalog"], self._keys["events"]]
        try:
            number = await self._publish(keys=keys, args=[self.id, after, manifest, snapshot])
        except self.errors as e:
            self._reached(False, e)
            return None
        self._reached(True)
        if number is None:
            self.leading = False
            return None
        return int(number)

    async def accept(self, digests: dict[str, str]) -> None:
        """Records an admin's acceptance of held schema changes (tool -> new digest) and tells the
        lister. Raises :class:`~toolsift.errors.StoreUnavailableError` when Redis cannot be reached."""
        try:
            if digests:
                await self._redis.hset(self._keys["acks"], mapping=digests)
            await self._redis.publish(self._keys["events"], "ack")
        except self.errors as e:
            self._reached(False, e)
            raise StoreUnavailableError(
                f"cannot record the acceptance: the cluster's Redis is unreachable ({e})"
            ) from None

    async def settle(self, names: list[str]) -> None:
        """Forgets the acceptances of ``names`` once applied: an acceptance is of one held change,
        not of every later change to the same definition (kept, and applied again, when Redis
        cannot be reached)."""
        if not names:
            return
        try:
            await self._redis.hdel(self._keys["acks"], *names)
        except self.errors as e:
            self._reached(False, e)

    async def accepted(self) -> dict[str, str]:
        """Every accepted digest by tool (empty when Redis cannot be reached)."""
        try:
            got = await self._redis.hgetall(self._keys["acks"])
        except self.errors as e:
            self._reached(False, e)
            return {}
        return {k.decode(): v.decode() for k, v in got.items()}

    async def announce(self, message: str) -> None:
        """Sends ``message`` on the events channel (lost, and logged, when Redis is unreachable)."""
        try:
            await self._redis.publish(self._keys["events"], message)
        except self.errors as e:
            self._reached(False, e)

    async def listen(self, wake: Callable[[str], None]) -> None:
        """Calls ``wake(message)`` on every message of the events channel, until cancelled;
        reconnects after failures (the renewal tick catches up meanwhile)."""
        while True:
            try:
                async with self._events.pubsub() as pubsub:
                    await pubsub.subscribe(self._keys["events"])
                    wake("subscribed")  # whatever was missed before is read from the stored version
                    while True:
                        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                        if message is not None and isinstance(message.get("data"), bytes):
                            wake(message["data"].decode("utf-8", "replace"))
            except self.errors as e:
                log.debug("cluster: events channel lost: %s", e)
                await anyio.sleep(min(self.lock_ttl / 3, 1.0))

    async def resign(self) -> None:
        """Gives up the lock (at shutdown), so that another replica takes over at once."""
        with contextlib.suppress(*self.errors):
            await self._resign(keys=[self._keys["leader"]], args=[self.id])
        self.leading = False

    async def close(self) -> None:
        for client in (self._redis, self._events):
            with contextlib.suppress(*self.errors):
                await client.aclose()
        await anyio.to_thread.run_sync(self.usage.close)


#: One row of the tool table as a version's manifest carries it:
#: ``(name, server, upstream name, schema digest, hidden, description length when cut)``.
Row = tuple[str, str, str, str, bool, int]


def snapshot_bytes(index: Index) -> bytes:
    """The bytes of ``index``'s file (:meth:`Index.save`), for Redis."""
    with tempfile.TemporaryDirectory(prefix="toolsift-") as folder:
        path = Path(folder) / "version.tsidx"
        index.save(path)
        return path.read_bytes()


def load_snapshot(data: bytes, statistics: str, path: Path) -> Index:
    """An index from :func:`snapshot_bytes`, written to ``path`` (an index may keep reading its
    file after loading), checked as :meth:`Index.load` checks a file, with the gateway's own
    ``statistics`` whatever the bytes say. Other versions' files beside it are removed (one still
    open stays readable where the system allows, and is removed with the folder otherwise)."""
    path.write_bytes(data)
    index = Index.load(path, statistics=statistics)
    for old in path.parent.glob("version-*.tsidx"):
        if old != path:
            with contextlib.suppress(OSError):
                old.unlink()
    return index


def encode_manifest(
    rows: tuple[Row, ...],
    held: Mapping[str, tuple[str, str]],
    servers: list[str],
    reviews: Mapping[str, Mapping[str, Any]] | None = None,
) -> bytes:
    """The manifest of a version: the whole tool table in registry order, the held changes, the
    names of the lister's configured servers (so that a replica of another deployment sharing
    the Redis and prefix can say so), and the held changes' definitions (for review)."""
    table = [list(r) for r in rows]
    data = {"table": table, "held": {n: list(d) for n, d in held.items()}, "servers": servers}
    return json.dumps({**data, "reviews": dict(reviews or {})}).encode()


Manifest = tuple[tuple[Row, ...], dict[str, tuple[str, str]], list[str] | None, dict[str, dict[str, Any]]]


def decode_manifest(data: bytes) -> Manifest:
    """``(rows, held, servers, reviews)`` of a manifest (``servers``: ``None`` in one that does
    not say; ``reviews``: the definition of each held change the lister had, empty in one that
    has none); :class:`~toolsift.errors.SnapshotError` when it is not one."""
    try:
        raw = json.loads(data)
        rows = tuple(_row(r) for r in raw["table"])
        held = {str(n): (str(d[0]), str(d[1])) for n, d in raw["held"].items()}
        servers = raw.get("servers")
        reviews = raw.get("reviews", {})
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
        raise SnapshotError(f"not a gateway version manifest: {e}") from None
    if servers is not None and (type(servers) is not list or not all(type(s) is str for s in servers)):
        raise SnapshotError("not a gateway version manifest: servers must be a list of names")
    if type(reviews) is not dict or not all(n in held and type(d) is dict for n, d in reviews.items()):
        raise SnapshotError("not a gateway version manifest: reviews must map held changes to definitions")
    return rows, held, servers, reviews


def _row(r: Any) -> Row:
    name, server, upstream, digest, hidden, cut = r
    if not all(isinstance(x, str) for x in (name, server, upstream, digest)):
        raise SnapshotError("names and digests must be strings")
    if not isinstance(hidden, bool) or not isinstance(cut, int):
        raise SnapshotError("hidden must be a boolean and cut an integer")
    return name, server, upstream, digest, hidden, cut


def _number(raw: object) -> int | None:
    """A stored version number, or ``None`` for none or one that is not a whole number (written
    by something else than a lister: nothing to load until the lister publishes over it)."""
    if raw is None:
        return None
    try:
        return int(raw)  # type: ignore[call-overload,no-any-return]  # bytes or str from Redis: digits only
    except (TypeError, ValueError):
        log.warning("cluster: the stored version number %r is not a whole number: ignored", raw)
        return None
