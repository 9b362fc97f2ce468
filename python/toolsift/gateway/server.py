"""The gateway: upstream tools in one index, served to downstream MCP clients by caller.

Downstream clients see, per caller, the tools array of a :class:`~toolsift.Toolbox`: the pinned
tools (full schemas), then ``tool_search`` and ``call_tool``. Every upstream tool is namespaced
``server__tool`` and needs its server's permissions plus those of every matching rule; a caller
never sees, finds or runs a tool it lacks a permission for, and such a tool gives the same error
as one that does not exist.

An upstream's change notification re-lists that server only; the difference (added, removed and
changed tools, by schema digest) is applied to the gateway's ordered tool table, and a new index
is built beside the one in service and swapped in whole, so every request sees exactly one version.
"""

from __future__ import annotations

import contextvars
import json
import logging
import logging.handlers
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

import anyio
import mcp_types as types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.server.transport_security import TransportSecuritySettings

from ..arguments import folded_name
from ..errors import (
    GatewayConfigError,
    InvalidParameterError,
    StoreUnavailableError,
    ToolsiftError,
    UnknownCallerError,
    UnknownToolError,
    UpstreamError,
)
from ..index import Index
from ..learning import Learned
from ..plan import CALL, DEFAULT_LIMIT, SEARCH
from ..registry import MAX_NAME_CHARS, Catalog, Tool, check_tool_text
from ..tiers import Toolbox, ToolTierOptions, usage_key
from ..usage import Usage, UsageStore
from .config import CallerConfig, GatewayConfig, all_permissions, loopback, namespaced, permissions_of
from .replica import Replication
from .telemetry import Telemetry
from .upstream import Upstream
from .versions import Entry, Listing, Permissions, Version, digest

#: Who is told of a change alike: a permission set, and whether it reviews held schema changes.
Audience = tuple[Permissions, bool]
#: What a listing is built for: a permission set and a learning scope (see ``Gateway._scope``).
ListingKey = tuple[Permissions, str]

log = logging.getLogger("toolsift.gateway")
#: A search waiting for its calls, to learn from: (query, caller, when, tools called, and the
#: tools it found where only those may be taught, else ``None``: see :meth:`Gateway._learn`).
Pending = tuple[str, CallerConfig, float, list[str], frozenset[str] | None]

REVIEW = "gateway_schema_changes"
#: Seconds a session may take to accept a change notification: one that does not (it stopped
#: reading its stream) is notified no more, since changes wait on the notifications.
NOTIFY_TIMEOUT_S = 2.0
ANONYMOUS = "anonymous"
#: Longest string field of a log record (a query, an error), in characters; longer ones are cut.
MAX_LOG_CHARS = 2000
#: Most names in one list of a log record (``reindex``'s added/removed/changed), and most lines of
#: one kind (``schema_changed``, ``invalid_tool``, ``poisoned``) per listing; the rest are counted.
MAX_LOG_ITEMS = 100
#: ``tool_search`` runs on the event loop when it is a plain search of at most this many tools
#: with a query of at most :data:`INLINE_QUERY_CHARS`, and in a worker thread otherwise (``group``,
#: longer queries, larger limits, a per-caller index not built yet). A plain search of 5 costs
#: about 100 µs at 1k-100k tools (``benches/scale.py``, "Toolbox tool_search µs"), less than the
#: hop to a thread and back; these bounds keep an inline one well under a millisecond.
INLINE_LIMIT = 50
INLINE_QUERY_CHARS = 1000

#: The caller of the HTTP request being served, set by :class:`_Authenticate` for the SDK's
#: request-scoped hooks that get no context (``get_tool_input_schema``).
_REQUEST_CALLER: contextvars.ContextVar[CallerConfig | None] = contextvars.ContextVar("caller", default=None)


class EventLog:
    """JSONL log of searches and calls (one object per line), appended and flushed per event.

    Bounded: a string field is cut to :data:`MAX_LOG_CHARS` characters and a list to
    :data:`MAX_LOG_ITEMS` items (its length is kept as ``<field>_total``), and the file is rotated
    at ``max_bytes`` (``gateway.jsonl.1`` ... ``.N``, oldest dropped), so no caller and no upstream
    can grow it without limit.
    """

    def __init__(self, path: str | None, max_bytes: int = 64 * 2**20, backups: int = 3) -> None:
        self._handler: logging.Handler | None = None
        if path:
            # a lone surrogate (a name or query may hold one) is written as its JSON escape, not lost
            self._handler = logging.handlers.RotatingFileHandler(
                path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8", errors="backslashreplace"
            )

    def write(self, event: str, **data: Any) -> None:
        if self._handler is None:
            return
        record: dict[str, Any] = {"ts": round(time.time(), 6), "event": event}
        for key, value in data.items():
            if isinstance(value, list) and len(value) > MAX_LOG_ITEMS:
                record[f"{key}_total"] = len(value)
                value = value[:MAX_LOG_ITEMS]
            record[key] = _bounded(value)
        line = json.dumps(record, ensure_ascii=False, sort_keys=True)
        self._handler.handle(logging.makeLogRecord({"msg": line, "levelno": logging.INFO}))

    def write_each(self, event: str, items: Iterable[dict[str, Any]]) -> None:
        """One line per item up to :data:`MAX_LOG_ITEMS`, then one ``<event>_more`` line counting the rest."""
        more = 0
        for n, item in enumerate(items):
            if n < MAX_LOG_ITEMS:
                self.write(event, **item)
            else:
                more += 1
        if more:
            self.write(f"{event}_more", count=more)

    def close(self) -> None:
        if self._handler is not None:
            self._handler.close()


def _bounded(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_LOG_CHARS:
        return value[:MAX_LOG_CHARS] + f"…[{len(value) - MAX_LOG_CHARS} more characters]"
    if isinstance(value, list):
        return [_bounded(v) for v in value[:MAX_LOG_ITEMS]]
    return value


class _Server(Server[Any]):
    """The SDK's low-level server, announcing ``tools.listChanged`` to handshake-era clients too:
    the gateway sends them ``notifications/tools/list_changed`` after every swap."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = notification_options or NotificationOptions(tools_changed=True)
        return super().create_initialization_options(options, experimental_capabilities, extensions)


class Gateway:
    """An MCP server that fronts the upstream servers of a :class:`GatewayConfig`.

    Args:
        config: The configuration (see :func:`toolsift.gateway.load_config`).
        token: For the stdio transport, the token of the caller on the other end of the pipe.
        tracer_provider: OpenTelemetry ``TracerProvider`` (default: the global one).
        meter_provider: OpenTelemetry ``MeterProvider`` (default: the global one).
    """

    def __init__(
        self,
        config: GatewayConfig,
        *,
        token: str | None = None,
        tracer_provider: Any = None,
        meter_provider: Any = None,
    ) -> None:
        self.config = config
        self.telemetry = Telemetry(
            config.telemetry, config.telemetry_text, tracer_provider=tracer_provider, meter_provider=meter_provider
        )
        try:
            self.log = EventLog(config.log, config.log_max_bytes, config.log_backups)
        except OSError as e:  # a folder, a missing folder, no permission
            raise GatewayConfigError(
                f"cannot open the log: {e.strerror or e}", path=config.source, field="gateway.log"
            ) from None
        self.upstreams = {s.name: Upstream(s, self.apply, debounce=config.debounce) for s in config.servers}
        self._table: dict[str, Entry] = {}  # registry order: first seen first, new tools appended
        self._held: dict[str, Entry] = {}  # schema changes waiting for acknowledgement
        # strict_schema_changes: the entry in service when a tool left its listing, so that a tool
        # removed and listed again with another definition is held as a change, not added unseen
        self._retired: dict[str, Entry] = {}
        self._seen: set[str] = set()  # servers listed at least once
        self._reported: set[tuple[str, str, str]] = set()  # scan findings already logged
        self._cuts_reported: set[tuple[str, str]] = set()  # (tool, digest) of descriptions cut and logged
        self._lock = anyio.Lock()
        self.version = Version(0, {}, Index(Catalog()))
        # who is told of a change: per audience (see _audience), the listen streams of 2026-07-28
        # sessions and the handshake-era sessions (removed when they close)
        self._listeners: dict[Audience, ListenHandler] = {}
        self._buses: dict[Audience, InMemorySubscriptionBus] = {}
        self._legacy: dict[int, tuple[Any, Audience]] = {}
        self._anonymous = CallerConfig(ANONYMOUS, "", tuple(all_permissions(config)), admin=True)
        self._stdio_caller: CallerConfig | None = None
        if config.transport == "stdio" or token is not None:
            self._stdio_caller = self._authenticate(token)
            if self._stdio_caller is None:
                raise InvalidParameterError("the token does not belong to any caller of the gateway config")
        self.server = self._build_server()
        self.port: int | None = None
        self.started = anyio.Event()
        self._task_group: anyio.abc.TaskGroup | None = None
        self._loop_thread = 0  # the thread of the event loop serving (run)
        self.replication = Replication(self) if config.cluster is not None else None
        self.usage: Usage = (
            self.replication.cluster.usage if self.replication is not None else UsageStore(config.usage or ":memory:")
        )
        self._listed: dict[str, list[types.Tool]] = {}  # the latest listing of each server
        self._table_version = 0  # the version the tool table last made
        # learning from use: the store (beside the usage counts), and per session the search
        # being answered, who asked, when, and the tools called since (an event once the next comes)
        self.learned = Learned(config.usage or ":memory:") if config.learn else None
        self._pending: dict[str, Pending] = {}
        self._learned_on: Index | None = None  # the index those learned indexes were built on

    # -- callers -------------------------------------------------------------------------------
    def _authenticate(self, token: str | None) -> CallerConfig | None:
        if not self.config.callers:
            return self._anonymous
        return self.config.caller_for_token(token)

    def _caller(self, ctx: Any) -> CallerConfig:
        request = getattr(ctx, "request", None)
        if request is None or not hasattr(request, "headers"):
            if self._stdio_caller is None:
                raise UnknownCallerError("no caller")
            return self._stdio_caller
        caller = self._authenticate(token_of(request.headers))
        if caller is None:
            raise UnknownCallerError("unknown caller")
        return caller

    # -- the tool table ------------------------------------------------------------------------
    def _entry(self, server: str, tool: types.Tool) -> Entry:
        name, notes = namespaced(server, tool.name), _annotations(tool)
        perms, hidden = permissions_of(self.config, server, name, notes)
        pinned = tool.name in self.config.server(server).pinned
        if tool.title is not None:  # sent as listed: refused like the rest of the definition
            check_tool_text(name, "title", tool.title)
        limit = self.config.max_description_chars
        described, cut_from = _cut(tool.description or tool.title or "", limit)
        item = Tool(
            name,
            described,
            tool.input_schema,
            permissions=perms,
            core=pinned,
            annotations=notes,
            title=tool.title,
            output_schema=tool.output_schema,
        )
        # the other texts a model is sent, cut alike: the title and each schema's descriptions
        # and titles (checked and copied by Tool, so of bounded depth; values such as enums and
        # defaults are what a call must send, and stay whole)
        title, title_from = _cut(item.title, limit) if item.title is not None else (None, 0)
        parameters, schema_from = _cut_schema(item.parameters, limit)
        output, output_from = _cut_schema(item.output_schema, limit) if item.output_schema is not None else (None, 0)
        if title_from or schema_from or output_from:
            cut_from = max(cut_from, title_from, schema_from, output_from)
            item = replace(item, title=title, parameters=parameters, output_schema=output)
        return Entry(server, tool.name, item, digest(tool), hidden, cut_from)

    async def apply(self, server: str, tools: list[types.Tool], refused: Iterable[Mapping[str, str]] = ()) -> None:
        """Applies a complete listing of ``server``: adds, removes and updates only what changed.
        ``refused`` names the listed tools its connection left out as malformed (logged as
        ``invalid_tool``, like the tools refused here). In a cluster, only the lister applies
        listings; the others keep the latest of each server, for the day they become the lister."""
        self._listed[server] = tools
        if self.replication is not None and not self.replication.cluster.leading:
            await self.replication.listed(server, tools)
            return
        await self._apply(server, tools, refused)

    async def _apply(self, server: str, tools: list[types.Tool], refused: Iterable[Mapping[str, str]] = ()) -> None:
        async with self._lock:
            before = self._tables_now()
            fresh: dict[str, Entry] = {}
            invalid: list[dict[str, Any]] = [{"server": server, **r} for r in refused]
            # names as the catalog tells them apart (NFKC): a name that folds like another
            # server's tool, or like one already listed here, would fail the whole index build
            taken = {folded_name(n): n for n, e in self._table.items() if e.server != server}
            for tool in tools:
                try:
                    entry = self._entry(server, tool)
                except (ToolsiftError, ValueError) as e:  # one bad definition costs that tool, not the listing
                    invalid.append({"server": server, "tool": getattr(tool, "name", "?"), "error": str(e)})
                    continue
                name, key = entry.tool.name, folded_name(entry.tool.name)
                if key in taken:
                    error = "duplicate name" if taken[key] == name else f"duplicate name (folds like {taken[key]!r})"
                    invalid.append({"server": server, "tool": name, "error": error})
                    continue
                taken[key] = name
                fresh[name] = entry
            self.log.write_each("invalid_tool", invalid)
            cut = [e for e in fresh.values() if e.cut_from and (e.tool.name, e.digest) not in self._cuts_reported]
            self._cuts_reported.update((e.tool.name, e.digest) for e in cut)
            self._report_cuts(server, cut)
            hold = self.config.strict_schema_changes
            # a tool that left and came back is compared with the one that left (held if changed)
            back = [n for n in fresh if n in self._retired and n not in self._table] if hold else []
            for n in back:
                self._table[n] = self._retired.pop(n)
            withdrawn = [
                n for n in fresh if n in self._held and n in self._table and fresh[n].digest == self._table[n].digest
            ]
            for n in withdrawn:  # the upstream went back to the definition in service: nothing to review
                del self._held[n]
            self.log.write_each("schema_change_withdrawn", ({"tool": n, "digest": fresh[n].digest} for n in withdrawn))
            old = {n: e for n, e in self._table.items() if e.server == server}
            old.update({n: e for n, e in self._held.items() if e.server == server and n not in old})
            added = [n for n in fresh if n not in old]
            removed = [n for n in old if n not in fresh]
            changed = [n for n in fresh if n in old and self._current_digest(n) != fresh[n].digest]
            known = [n for n in fresh if n in old and old[n].placeholder and n not in changed and n not in self._held]
            for n in known:  # the definition of a tool known by digest only: it may go into service
                self._table[n] = fresh[n]
            for n in fresh:  # a held change known by digest only gets its definition (still held)
                waiting = self._held.get(n)
                if waiting is not None and waiting.placeholder and waiting.digest == fresh[n].digest:
                    self._held[n] = fresh[n]
                    known.append(n)
            for n in removed:
                gone = self._table.pop(n, None)
                self._held.pop(n, None)
                if hold and gone is not None and not gone.placeholder:
                    self._retired[n] = gone
            for n in added:
                self._table[n] = fresh[n]
                self._retired.pop(n, None)
            self.log.write_each(
                "schema_changed",
                ({"tool": n, "old": self._current_digest(n), "new": fresh[n].digest, "held": hold} for n in changed),
            )
            for n in changed:
                (self._held if hold else self._table)[n] = fresh[n]
            if not (added or removed or changed or known or withdrawn or back) and server in self._seen:
                return
            self._seen.add(server)
            self.log.write("reindex", server=server, added=added, removed=removed, changed=changed)
            await self._swap_or_undo(before)

    def _report_cuts(self, server: str, cut: list[Entry]) -> None:
        """Logs each tool whose texts the gateway cut (description, title, schema texts; a line
        per tool, bounded; once per tool and definition, not on every re-listing) and says how
        many on stderr, so that no upstream text is ever dropped unseen; :meth:`truncated` and
        the ready line keep the count."""
        limit = self.config.max_description_chars
        self.log.write_each(
            "description_truncated",
            ({"server": server, "tool": e.tool.name, "chars": e.cut_from, "kept": limit} for e in cut),
        )
        if cut:
            names = ", ".join(e.tool.name for e in cut[:3]) + (f" and {len(cut) - 3} more" if len(cut) > 3 else "")
            print(
                f"toolsift gateway: {server}: cut the texts of {len(cut):,} tool(s) to {limit:,} characters "
                f"(max_description_chars): {names}",
                file=sys.stderr,
            )
            log.warning("%s: cut the texts of %d tool(s) to %d characters", server, len(cut), limit)

    def truncated(self) -> dict[str, int]:
        """Tools in service with an upstream text the gateway cut: ``{name: longest original length}``."""
        return {n: e.cut_from for n, e in self.version.entries.items() if e.cut_from}

    def _current_digest(self, name: str) -> str:
        held = self._held.get(name)
        return held.digest if held is not None else self._table[name].digest

    async def _swap(self) -> None:
        started = time.perf_counter()
        live = {n: e for n, e in self._table.items() if not (e.hidden or e.placeholder) and n not in self._held}
        # in the config's server order, each server's tools by name: the catalog (and so the order of
        # tools that rank alike, and of listings) is the same whichever upstream answered first
        rank = {s.name: i for i, s in enumerate(self.config.servers)}
        live = dict(sorted(live.items(), key=lambda item: (rank.get(item[1].server, len(rank)), item[0])))
        catalog = Catalog(e.tool for e in live.values())
        held = {n: (self._table[n].digest, e.digest) for n, e in self._held.items() if n in self._table}
        reviews = {n: self._held[n].tool.definition() for n in held if not self._held[n].placeholder}
        table = tuple((n, e.server, e.upstream_name, e.digest, e.hidden, e.cut_from) for n, e in self._table.items())

        def build() -> Index:  # off the event loop: index build and the catalog file beside the log
            if self.config.log:  # `toolsift eval --gateway-log` reads it with the log; serving does not
                try:
                    catalog.save(self.config.log + ".tools.jsonl")
                except (OSError, ToolsiftError) as e:
                    log.warning("could not write the catalog beside the log: %s", e)
            config = self.config
            return Index(catalog, scan=config.scan, statistics=config.statistics, min_evidence=config.min_evidence)

        index = await anyio.to_thread.run_sync(build)
        learned = await anyio.to_thread.run_sync(self.learned_indexes, index, {})
        new = [f for f in index.findings if (f.tool, f.kind, f.detail) not in self._reported]
        self._reported.update((f.tool, f.kind, f.detail) for f in new)
        withheld = self.config.scan == "withhold"
        self.log.write_each(
            "poisoned",
            ({"tool": f.tool, "field": f.field, "kind": f.kind, "detail": f.detail, "withheld": withheld} for f in new),
        )
        previous, number = self.version, self.version.number + 1
        if self.replication is not None:  # the lister: stored and announced for the other replicas
            number = await self.replication.publish(index, table, held, reviews) or number
            if not self.replication.cluster.leading:  # lost the lock meanwhile: another lists now
                self.log.write("version_dropped", version=number)
                return
        self.telemetry.reindexed(number, len(live), len(held), "listed", time.perf_counter() - started)
        self._table_version = number
        self.version = version = Version(number, live, index, held=held, reviews=reviews, table=table, learned=learned)
        await self.announce(version, previous)

    async def announce(self, version: Version, previous: Version) -> None:
        """Tells the clients whose tools ``version``, now in service in place of ``previous``,
        changed (see :meth:`_changed_for`), and builds its listings (when serving: a bare
        :meth:`apply` builds them on demand)."""
        await self._notify(self._changed_for(version, previous))
        if self._task_group is not None:
            self._task_group.start_soon(self._prepare, version)

    def _audience(self, caller: CallerConfig) -> Audience:
        """Whose change notifications a caller gets: its permission set, and whether it reviews
        held schema changes (an admin of a gateway with ``strict_schema_changes``)."""
        return _key(caller), caller.admin and self.config.strict_schema_changes

    def _changed_for(self, version: Version, previous: Version) -> set[Audience]:
        """The audiences listening now whose view differs between the two versions: a tool they
        may use came, went or changed (by digest), or, for reviewers, a held change did. Any
        other audience is told nothing: a notice for a change to tools it may not use would say
        that, and when, something it cannot see changed."""
        listening = set(self._buses) | {audience for _, audience in self._legacy.values()}
        if not listening:
            return set()
        new, old = version.entries, previous.entries
        changed = [n for n in old if n not in new]
        changed += [n for n, e in new.items() if (o := old.get(n)) is None or o.digest != e.digest]
        moved = {n for n in version.held.keys() | previous.held.keys() if version.held.get(n) != previous.held.get(n)}
        # with scan = "withhold", a tool's own definition is not all that decides whether it is
        # served: a look-alike listed beside it withholds both, without changing its digest
        withholding = self.config.scan == "withhold"

        def sees(audience: Audience) -> bool:
            perms, reviews = audience
            if (reviews and moved & (self._reviewable(version, perms) | self._reviewable(previous, perms))) or any(
                version.index.allows(n, caller=perms) or previous.index.allows(n, caller=perms) for n in changed
            ):
                return True
            return withholding and _allowed(version, perms) != _allowed(previous, perms)

        return {a for a in listening if sees(a)}

    # -- the tool table, as replication sees it ------------------------------------------------
    def holds_changes(self) -> bool:
        """True while a schema change waits for acknowledgement."""
        return bool(self._held)

    async def take_over(self, tables: Callable[[Version], tuple[dict[str, Entry], dict[str, Entry]]]) -> None:
        """Makes ``tables(version)`` (the tool table and held changes of the version in service)
        this gateway's own when that version is newer than its table (versions another lister
        made) or the table was forgotten, then applies the latest listing of every server: a
        replica becoming the lister."""
        async with self._lock:
            if self.version.number > self._table_version:
                self._table, self._held = tables(self.version)
                self._seen, self._table_version = set(), self.version.number
        for server, tools in list(self._listed.items()):
            await self._apply(server, tools)

    def forget_table(self) -> None:
        """This replica stopped listing: its tool table may hold changes that are not in service,
        so the next :meth:`take_over` starts again from the version in service."""
        self._table_version = -1

    def renumber(self, number: int) -> None:
        """The version in service, and the table it was made from, are stored as ``number``."""
        self.version.number = self._table_version = number

    def listing_keys(self, version: Version | None = None) -> list[ListingKey]:
        """The distinct listings of the configured callers (or of the anonymous caller) in
        ``version`` (default: the one in service)."""
        v = version or self.version
        return sorted({self._listing_key(c, v) for c in self._callers()})

    def _callers(self) -> tuple[CallerConfig, ...]:
        return tuple(self.config.callers) or (self._anonymous,)

    def _listing_key(self, caller: CallerConfig, version: Version) -> ListingKey:
        """What a caller's listing in ``version`` depends on: its permission set, and its
        learning scope when that scope has an index of its own there (callers of one
        permission set whose scopes learned nothing yet share one listing)."""
        scope = self._scope(caller)
        return _key(caller), scope if scope in version.learned else ""

    async def _prepare(self, version: Version) -> None:
        """Builds the listing of every configured permission set, one after another in a worker
        thread, right after ``version`` goes into service, so a caller's first ``tools/list``
        is answered from the cache. A request for a set not built yet builds it itself (a set
        being built is waited for, never built twice), so a slow plan for one caller never
        holds up another's first request."""
        started = time.perf_counter()
        for key in self.listing_keys(version):
            if version is not self.version:
                return  # a newer version is in service; its own preparation builds its listings
            try:
                await self._listing(version, key)
            except Exception as e:  # the set's own requests get the error; the others are built
                log.warning("could not build the listing of %s: %s", key[0], e)
                self.log.write("listing_failed", version=version.number, permissions=list(key[0]), error=str(e))
        version.ready.set()
        ms = (time.perf_counter() - started) * 1e3
        cut = sum(1 for e in version.entries.values() if e.cut_from)
        tools = len(version.entries)
        self.log.write("ready", version=version.number, tools=tools, truncated=cut, listings_ms=round(ms, 1))
        print(
            f"toolsift gateway: version {version.number} ready: {tools:,} tools ({cut:,} descriptions cut), "
            f"{len(version.listings)} listings in {ms:.0f} ms",
            file=sys.stderr,
        )

    def held(self) -> dict[str, tuple[str, str]]:
        """Schema changes waiting for acknowledgement: ``{name: (old digest, new digest)}``."""
        return dict(self.version.held)

    async def acknowledge(self, names: list[str], digests: Mapping[str, str] | None = None) -> list[str]:
        """Puts held schema changes into service (with ``digests``, only those whose new digest
        is the one given: the definition reviewed); returns the names put. In a cluster the
        acceptance (of each tool's new digest) is stored in Redis and the lister applies it;
        :class:`~toolsift.errors.StoreUnavailableError` when Redis cannot be reached."""
        if self.replication is not None:
            return await self.replication.acknowledge(names, digests)
        return await self.put_in_service(names, digests)

    async def put_in_service(self, names: Iterable[str], digests: Mapping[str, str] | None = None) -> list[str]:
        """Puts the held changes of ``names`` into service (those whose new digest is the one in
        ``digests``, when given), with a new version if any was held; the names put."""
        async with self._lock:
            unique = dict.fromkeys(names)  # a name given twice is put once
            done = [
                n for n in unique if n in self._held and (digests is None or digests.get(n) == self._held[n].digest)
            ]
            before = self._tables_now()
            for n in done:
                self._table[n] = self._held.pop(n)
                self.log.write("schema_acknowledged", tool=n, digest=self._table[n].digest)
            if done:
                await self._swap_or_undo(before)
            return done

    def _tables_now(self) -> tuple[dict[str, Entry], dict[str, Entry], dict[str, Entry], set[str]]:
        """Copies of the tool table, held and retired changes and servers seen: what a failed
        swap puts back (shallow: entries are not changed in place)."""
        return dict(self._table), dict(self._held), dict(self._retired), set(self._seen)

    async def _swap_or_undo(
        self, before: tuple[dict[str, Entry], dict[str, Entry], dict[str, Entry], set[str]]
    ) -> None:
        """Builds and serves the table's new version; when that fails, the table goes back to
        the version in service, so the same listing (sent again after a reconnect) or the same
        acceptance is applied again instead of finding nothing to do, for good."""
        served = self.version
        try:
            await self._swap()
        except BaseException:
            if self.version is served:  # not once the new version is in service (a cancelled notice)
                self._table, self._held, self._retired, self._seen = before
            raise

    def reset(self) -> None:
        """Rebuilds every listing (tier plans) of the version in service on next use, with the
        usage counts of now: pins move only here and when a new version goes into service."""
        v = self.version
        self.version = version = Version(
            v.number, v.entries, v.index, held=v.held, reviews=v.reviews, table=v.table, learned=v.learned
        )
        if self._task_group is not None and threading.get_ident() == self._loop_thread:  # else: on first use
            self._task_group.start_soon(self._prepare, version)

    async def _notify(self, audiences: set[Audience] | None = None) -> None:
        """Sends ``tools/list_changed`` to the sessions of ``audiences`` (default: every one)."""
        for audience, bus in list(self._buses.items()):
            if audiences is None or audience in audiences:
                await bus.publish(ToolsListChanged())

        async def tell(key: int, session: Any) -> None:
            sent = False
            with anyio.move_on_after(NOTIFY_TIMEOUT_S):
                try:
                    await session.send_tool_list_changed()
                    sent = True
                except Exception:
                    pass
            if not sent:  # gone, or not reading its stream: it must not hold up every change
                self._legacy.pop(key, None)
                log.info("a session that did not take a change notification is no longer notified")

        async with anyio.create_task_group() as tg:  # at most NOTIFY_TIMEOUT_S, however many sessions
            for key, (session, audience) in list(self._legacy.items()):
                if audiences is None or audience in audiences:
                    tg.start_soon(tell, key, session)

    def _remember_session(self, ctx: Any, caller: CallerConfig) -> None:
        """Keeps a handshake-era session for change notifications until its connection closes."""
        connection = getattr(ctx.session, "_connection", None)
        key = id(connection if connection is not None else ctx.session)
        if key in self._legacy:
            return
        self._legacy[key] = (ctx.session, self._audience(caller))
        stack = getattr(connection, "exit_stack", None)
        if stack is not None:  # torn down by the SDK when the session ends (DELETE, idle, crash)
            stack.callback(self._legacy.pop, key, None)

    # -- per caller ----------------------------------------------------------------------------
    async def listing(self, caller: CallerConfig, version: Version | None = None) -> Listing:
        """The caller's toolbox and tools array in ``version`` (default: the one in service).

        Built once per permission set and version in a worker thread: a plan over thousands of
        tools (and, with per-caller statistics, the caller's own index) never holds up the event
        loop, so other callers' requests go on being served meanwhile.
        """
        v = version or self.version
        key = self._listing_key(caller, v)
        found = v.listings.get(key)
        return found if found is not None else await self._listing(v, key)

    async def _listing(self, v: Version, key: ListingKey) -> Listing:
        async with v.building.setdefault(key, anyio.Lock()):
            found = v.listings.get(key)
            if found is None:
                found = v.listings[key] = await anyio.to_thread.run_sync(self._build_listing, v, key)
        return found

    def _build_listing(self, v: Version, key: ListingKey) -> Listing:
        perms, scope = key
        pinned = [e.tool.name for e in v.entries.values() if e.tool.core]
        usage = self.usage.usage_count(usage_key(perms))  # shared by the replicas of a cluster
        tiers = ToolTierOptions(core=pinned, pinned=pinned, budget_tokens=self.config.budget_tokens, usage_count=usage)
        handlers = {name: self._runner(entry) for name, entry in v.entries.items()}
        box = Toolbox(v.index_for(scope), tiers=tiers, caller=list(perms), handlers=handlers)
        definitions = box.tools("mcp")
        tools = [types.Tool.model_validate(d) for d in definitions]
        box.index.search("", k=0, caller=perms)  # builds the caller's own index now (statistics="caller")
        return Listing(
            box, tools, {d["name"]: d["inputSchema"] for d in definitions if d["name"] not in (SEARCH, CALL)}
        )

    def _input_schema(self, name: str) -> Any | None:
        """The input schema of a tool in the requesting caller's ``tools/list``, for the SDK's
        ``Mcp-Param-*`` header check of 2026-07-28 requests (which otherwise runs the whole
        ``tools/list`` handler for every ``tools/call``). ``None`` (nothing to check) for the
        meta-tools, whose schemas declare no headers, and for any tool the caller may not see."""
        caller = _REQUEST_CALLER.get()
        if caller is None or name in (SEARCH, CALL):
            return None
        v = self.version
        listing = v.listings.get(self._listing_key(caller, v))
        if listing is not None:
            return listing.schemas.get(name)
        entry = v.entries.get(name)
        if entry is None or not entry.tool.core or not v.index.allows(name, caller=_key(caller)):
            return None
        return entry.tool.parameters

    def _runner(self, entry: Entry) -> Any:
        upstream = self.upstreams[entry.server]
        timeout = upstream.config.timeout or self.config.call_timeout

        def run(arguments: Mapping[str, Any]) -> Any:
            return upstream.call(entry.upstream_name, dict(arguments), timeout)

        return run

    # -- MCP handlers --------------------------------------------------------------------------
    def _build_server(self) -> Server[Any]:
        return _Server(
            "toolsift-gateway",
            version=_version(),
            instructions="Find tools with tool_search, then run them with call_tool.",
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=self._listen,
        )

    async def _listen(self, ctx: Any, params: Any) -> Any:
        """Serves ``subscriptions/listen`` (2026-07-28) with the stream of the caller's audience."""
        audience = self._audience(self._caller(ctx))
        handler = self._listeners.get(audience)
        if handler is None:
            bus = self._buses[audience] = InMemorySubscriptionBus()
            handler = self._listeners[audience] = ListenHandler(bus)
        return await handler(ctx, params)

    async def _list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        caller = self._caller(ctx)
        if not str(ctx.protocol_version).startswith("2026"):
            self._remember_session(ctx, caller)
        tools = list((await self.listing(caller)).tools)
        if caller.admin and self.config.strict_schema_changes:
            tools.append(_review_tool())
        return types.ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        caller = self._caller(ctx)
        name, arguments = params.name, dict(params.arguments or {})
        version = self.version
        started = time.perf_counter()
        box = (await self.listing(caller, version)).toolbox
        if name == REVIEW and caller.admin and self.config.strict_schema_changes:
            return await self._review(caller, arguments)
        session = _session_key(ctx, caller)
        if name == SEARCH:
            with self.telemetry.operation("tool_search") as record:
                record["caller"], record["version"] = caller.name, version.number
                record.text("query", arguments.get("query", ""))
                result, found = await self._search(version, caller, box, arguments, started, record)
            if self.learned is not None and not result.is_error:
                await self._learn(session, caller, arguments, found)
            return result
        with self.telemetry.operation("call_tool") as record:
            result = await self._run(version, caller, box, name, arguments, started, record)
        event = self._pending.get(session) if self.learned is not None and not result.is_error else None
        called = str(arguments.get("name") if name == CALL else name)
        if event is not None and (event[4] is None or called in event[4]):  # see _learn
            event[3].append(called)
        return result

    async def _search(
        self,
        version: Version,
        caller: CallerConfig,
        box: Toolbox,
        arguments: dict[str, Any],
        started: float,
        record: Any,
    ) -> tuple[types.CallToolResult, list[str]]:
        """The answer to a ``tool_search``, and the names of the tools it found."""
        try:
            if self._inline(version, caller, arguments):
                found = box.search_tools(arguments)
            else:
                found = await anyio.to_thread.run_sync(box.search_tools, arguments)
        except InvalidParameterError as e:
            record["outcome"] = "invalid"
            return _error(str(e)), []
        text = json.dumps([t.definition() for t in found], ensure_ascii=False)
        chosen = [t.name for t in found]
        record["outcome"], record["results"] = "ok", len(chosen)
        record.text("tools", chosen)
        ms = (time.perf_counter() - started) * 1e3
        query = arguments.get("query")
        self.log.write("search", caller=caller.name, query=query, tools=chosen, version=version.number, ms=ms)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)]), chosen

    async def _run(
        self,
        version: Version,
        caller: CallerConfig,
        box: Toolbox,
        name: str,
        arguments: dict[str, Any],
        started: float,
        record: Any,
    ) -> types.CallToolResult:
        target = arguments.get("name") if name == CALL else name
        # what is logged of a name that is not a string: its type, not the whole value
        shown = target if isinstance(target, str) else f"<{type(target).__name__}>"
        record["caller"], record["tool"], record["via"], record["version"] = (caller.name, shown, name, version.number)
        record.text("arguments", arguments.get("arguments", {}) if name == CALL else arguments)
        outcome, result = "ok", None
        try:
            _sendable(arguments)  # before any upstream: what cannot be written would close its connection
            result = await box.acall(name, arguments)
            if not isinstance(result, types.CallToolResult):
                raise UpstreamError("?", "error", "the upstream returned no tool result")
            outcome = "error" if result.is_error else "ok"
            result = result.model_copy(update={"meta": None})
            if outcome == "ok" and isinstance(target, str):
                try:
                    await anyio.to_thread.run_sync(self.usage.record, usage_key(_key(caller)), target)
                except Exception:  # the call ran: its result goes back, only the count is lost
                    log.warning("usage of %r not recorded", target, exc_info=True)
        except UnknownToolError:
            # a name no tool may have is not echoed whole (an answer a client could make huge)
            named = str(target)
            named = named if len(named) <= MAX_NAME_CHARS else named[:MAX_NAME_CHARS] + "…"
            outcome, result = "unknown", _error(f"Unknown tool: {named}")
        except InvalidParameterError as e:
            outcome, result = "invalid", _error(str(e))
        except UpstreamError as e:
            outcome, result = e.reason, _error(str(e))
        record["outcome"] = outcome
        ms = (time.perf_counter() - started) * 1e3
        self.log.write(
            "call", caller=caller.name, tool=_bounded(shown), via=name, outcome=outcome, ms=ms, version=version.number
        )
        return result

    def _inline(self, version: Version, caller: CallerConfig, arguments: Mapping[str, Any]) -> bool:
        """Whether a ``tool_search`` is cheap enough to run on the event loop (see
        :data:`INLINE_LIMIT`): no group, a short query, a small limit, and the caller's own
        index already built (``statistics = "caller"``)."""
        query, limit = arguments.get("query", ""), arguments.get("limit", DEFAULT_LIMIT)
        if arguments.get("group") is not None or not isinstance(query, str) or len(query) > INLINE_QUERY_CHARS:
            return False
        if query.startswith("group:") or not isinstance(limit, int) or limit > INLINE_LIMIT:
            return False
        return version.index.ready_for(_key(caller))

    async def _review(self, caller: CallerConfig, arguments: Mapping[str, Any]) -> types.CallToolResult:
        """The held schema changes of tools this admin may use (their definitions in service are
        in its listing), and the acceptance of those it names; a held change of a tool it may
        not use, or a hidden one, is neither shown nor accepted, as for any other caller."""
        accept = arguments.get("accept", [])
        if not isinstance(accept, list) or not all(isinstance(n, str) for n in accept):
            return _error("accept must be a list of NAME@DIGEST strings")
        # an acceptance names the definition reviewed (its new digest), so that a change the
        # upstream makes between the review and the accept is not put in service unseen
        digests = dict(item.rpartition("@")[::2] for item in accept)
        if any(not name or not digest for name, digest in digests.items()):
            return _error("accept takes NAME@DIGEST: the tool and the `new` digest of its held change, as listed")
        mine = self._reviewable(self.version, _key(caller))
        digests = {n: d for n, d in digests.items() if n in mine}
        try:
            done = await self.acknowledge(list(digests), digests)
        except StoreUnavailableError as e:
            return _error(str(e))
        pending = {}
        version = self.version
        mine = self._reviewable(version, _key(caller))
        for n, (old, new) in version.held.items():
            if n not in mine:
                continue
            entry = self._held.get(n)
            shown: dict[str, Any] = {"old": old, "new": new}
            if entry is not None and not entry.placeholder and entry.digest == new:  # what is to be reviewed
                shown["definition"] = entry.tool.definition()
            elif n in version.reviews:  # as the lister that made the version held it
                shown["definition"] = version.reviews[n]
            pending[n] = shown
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps({"accepted": done, "held": pending}))]
        )

    def _reviewable(self, version: Version, perms: Permissions) -> set[str]:
        """The tools of ``version`` with a held change that an admin of ``perms`` may review: those
        it may use (the caller needs all of a tool's permissions), and not hidden. A held tool is
        out of the index until accepted: its permissions are its entry's, or, known from another
        replica's version by digest only, those the config's rules give its server and name."""
        servers = {row[0]: row[1] for row in version.table}
        mine = set(perms)
        out = set()
        for n in version.held:
            entry = self._held.get(n)
            if entry is not None and not entry.placeholder:
                need, hidden = entry.tool.permissions, entry.hidden
            elif n in servers:
                notes = (version.reviews.get(n) or {}).get("annotations")
                need, hidden = permissions_of(self.config, servers[n], n, notes if isinstance(notes, Mapping) else None)
            else:
                continue
            if not hidden and set(need) <= mine:
                out.add(n)
        return out

    # -- learning from use (see toolsift.learning) ---------------------------------------------
    def _scope(self, caller: CallerConfig) -> str:
        """Whose learned words a caller ranks with and teaches (``learn_scope``): its own
        ("caller"), its permission set's ("permissions"), or everyone's ("shared"); ``""``
        without learning."""
        if self.learned is None:
            return ""
        if self.config.learn_scope == "shared":
            return "shared"
        if self.config.learn_scope == "permissions":
            return usage_key(_key(caller))
        return f"user:{caller.name}"

    async def _learn(self, session: str, caller: CallerConfig, arguments: Mapping[str, Any], found: list[str]) -> None:
        """Learns from the session's previous search and the calls after it, then waits on this
        one (a plain search: a lookup by name or group says nothing about words). Requests
        without a session (2026-07-28's) share one slot per caller, whatever conversation they
        belong to: from those, a search teaches only the tools it showed, so that one
        conversation's call never teaches a tool another conversation's words."""
        done = self._pending.pop(session, None)
        query = arguments.get("query")
        plain = arguments.get("group") is None and isinstance(query, str) and query.strip()
        if plain and isinstance(query, str) and not query.startswith(("select:", "group:")):
            shown = frozenset(found) if session.endswith("\0") else None  # no session id: see above
            # the query as far as a search reads it inline: a megabyte query held per slot is not learned from
            self._pending[session] = (query[:INLINE_QUERY_CHARS], caller, time.monotonic(), [], shown)
        if done is not None and done[3]:
            await anyio.to_thread.run_sync(self._observe, done)

    def _observe(self, event: Pending) -> None:
        assert self.learned is not None
        query, caller, _, called, _ = event
        perms, scope = _key(caller), self._scope(caller)
        try:
            taught = self.learned.observe(self.version.index_for(scope), query, called, scope=scope, caller=list(perms))
        except Exception as e:  # the store failed (locked, full, damaged): this event is lost, not the gateway
            log.warning("learning from a search of %s not recorded", caller.name, exc_info=True)
            self.log.write("learn_failed", caller=caller.name, error=str(e))
            return
        if taught:
            self.log.write("learned", caller=caller.name, tools=sorted(taught))

    def learned_indexes(self, index: Index, built: Mapping[str, Index]) -> dict[str, Index]:
        """``index`` rebuilt with the learned texts of each configured caller's scope as the store
        holds them now (this replica's events, other replicas' sharing the store, ageing); a
        scope whose texts equal those of its index in ``built``, made on ``index``, keeps that
        one. A scope whose texts cannot be read (a store locked or damaged) is logged and ranks
        without them: it never costs a version or another scope."""
        if self.learned is None:
            return {}
        if index is not self._learned_on:
            built, self._learned_on = {}, index
        out: dict[str, Index] = {}
        for scope in sorted({self._scope(c) for c in self._callers()}):
            try:
                texts = self.learned.texts(scope, index)
            except Exception as e:
                log.warning("learned texts of scope %r not read", scope, exc_info=True)
                self.log.write("learn_failed", scope=scope, error=str(e))
                continue
            old = built.get(scope)
            if old is not None and old.learned == texts:
                out[scope] = old
            elif texts:
                out[scope] = index.with_learned(texts)
        return out

    async def _learning(self) -> None:
        """Every ``learn_rebuild_s``: learns from the searches idle that long, then puts indexes
        with the scopes' new learned texts into service (the tools arrays stay as they are)."""
        assert self.learned is not None
        every = self.config.learn_rebuild_s
        while True:
            await anyio.sleep(every)
            now = time.monotonic()
            for session, event in list(self._pending.items()):
                if now - event[2] >= every and self._pending.get(session) is event:
                    del self._pending[session]
                    if event[3]:
                        await anyio.to_thread.run_sync(self._observe, event)
            async with self._lock:  # not while a new version is being made
                v = self.version
                try:
                    learned = await anyio.to_thread.run_sync(self.learned_indexes, v.index, v.learned)
                except Exception as e:  # the store failed: the indexes in service stay, the next round retries
                    log.warning("learned texts not read; the next round tries again", exc_info=True)
                    self.log.write("learn_failed", version=v.number, error=str(e))
                    continue
                if self.version is not v:
                    continue  # a version from the cluster came meanwhile; the next round teaches it
                if learned.keys() == v.learned.keys() and all(learned[s] is v.learned[s] for s in learned):
                    continue  # no scope's texts changed
                self.version = version = Version(
                    v.number, v.entries, v.index, held=v.held, reviews=v.reviews, table=v.table, learned=learned
                )
            self.log.write("relearned", version=v.number, scopes=sorted(learned))
            if self._task_group is not None:
                self._task_group.start_soon(self._prepare, version)

    # -- running -------------------------------------------------------------------------------
    async def run(self, *, startup_timeout: float = 30.0) -> None:
        """Starts the upstreams and serves downstream clients until cancelled."""
        try:
            async with anyio.create_task_group() as tg:
                self._task_group, self._loop_thread = tg, threading.get_ident()
                for upstream in self.upstreams.values():
                    tg.start_soon(upstream.run)
                if self.replication is not None:
                    tg.start_soon(self.replication.run)
                if self.learned is not None:
                    tg.start_soon(self._learning)
                with anyio.move_on_after(startup_timeout):
                    for upstream in self.upstreams.values():
                        await upstream.ready.wait()
                for upstream in self.upstreams.values():
                    if not upstream.ready.is_set():
                        print(f"toolsift gateway: upstream {upstream.name} not ready yet", file=sys.stderr)
                if self.config.transport == "stdio":
                    await self._serve_stdio()
                else:
                    await self._serve_http()
                tg.cancel_scope.cancel()
        finally:
            if self.replication is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                    await self.replication.close()
            self.log.close()
            self._close_stores()

    def _close_stores(self) -> None:
        """Closes the usage and learning stores the gateway opened (a cluster's usage store is
        the replication's, closed with it)."""
        if self.replication is None:
            self.usage.close()
        if self.learned is not None:
            self.learned.close()

    async def _serve_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        self.started.set()
        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    async def _serve_http(self) -> None:
        import uvicorn

        c = self.config
        mcp_app = self.server.streamable_http_app(
            streamable_http_path=c.path,
            host=c.host,
            transport_security=_transport_security(c),
            session_idle_timeout=c.session_idle_timeout,
            max_sessions=c.max_sessions,
            json_response=c.json_response,
        )
        _limit_sessions_per_caller(self.server, c.max_sessions_per_caller)
        app = _Authenticate(mcp_app, self)
        # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and
        # without it a kept-open connection waits ~40 ms for delayed ACKs on every response
        sock = socket.socket(
            socket.AF_INET6 if ":" in c.host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP
        )
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if c.reuse_port:  # replicas on one port: the kernel spreads connections among them
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            # so it joins the others only once it can answer: a replica that listened before its
            # first version was ready would get connections and answer "Unknown tool"
            with anyio.move_on_after(READY_BEFORE_LISTEN_S):
                while not (self.version.number > 0 and self.version.ready.is_set()):
                    await anyio.sleep(0.02)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.bind((c.host, c.port))
        except OSError as e:  # a port another program holds: said, not a traceback
            sock.close()
            raise GatewayConfigError(
                f"cannot listen on {c.host}:{c.port}: {e.strerror or e}", path=c.source, field="gateway.port"
            ) from None
        sock.listen(2048)  # connections queue from now on, even while the first listings are built
        self.port = sock.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        print(f"toolsift gateway: serving http://{self.config.host}:{self.port}{self.config.path}", file=sys.stderr)

        async def serve() -> None:
            with anyio.CancelScope(shield=True):  # stopped through should_exit, so it shuts down cleanly
                await server.serve(sockets=[sock])

        async with anyio.create_task_group() as tg:
            tg.start_soon(serve)
            try:
                while not server.started:
                    await anyio.sleep(0.01)
                self.started.set()
                await anyio.sleep_forever()
            finally:
                server.should_exit = True
        sock.close()


#: How long a replica on a shared port (``reuse_port``) waits for its first version to be ready
#: before it listens anyway.
READY_BEFORE_LISTEN_S = 60.0


def _transport_security(config: GatewayConfig) -> TransportSecuritySettings | None:
    """The SDK's Host/Origin (DNS-rebinding) check for the configured bind address.

    Loopback: the SDK's own loopback lists, plus ``allowed_hosts``/``allowed_origins``. Another
    address: that address (any port) plus the lists. A wildcard bind (``0.0.0.0``, ``::``): only
    the lists, and no check when both are empty, since any name may reach it (tokens are
    required there).
    """
    hosts, origins = list(config.allowed_hosts), list(config.allowed_origins)
    if loopback(config.host):
        hosts += ["127.0.0.1:*", "localhost:*", "[::1]:*"]
        origins += ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    elif config.host not in ("0.0.0.0", "::", ""):
        name = f"[{config.host}]" if ":" in config.host else config.host
        hosts += [name, f"{name}:*"]
        origins += [f"http://{name}:*", f"https://{name}:*", f"http://{name}", f"https://{name}"]
    elif not hosts and not origins:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(allowed_hosts=hosts, allowed_origins=origins)


def _limit_sessions_per_caller(server: Server[Any], most: int) -> None:
    """Caps the sessions one caller may hold open at once, so that one token cannot fill the
    session table and lock every other caller out. The SDK records each session's owner (the
    ``scope["user"]`` :class:`_Authenticate` sets) and admits sessions in one place; the cap wraps
    that place. A request over the cap gets the SDK's own 503 answer for a full table."""
    manager = server._session_manager  # set by streamable_http_app
    assert manager is not None
    owners: dict[str, Any] = manager._session_owners
    admit = manager._admit_session

    def admit_within_quota(requestor: Any) -> Any:
        if requestor is not None and sum(1 for o in owners.values() if o == requestor) >= most:
            log.warning("refusing a new session for %s: %d sessions open", requestor.get("client_id"), most)
            return None
        return admit(requestor)

    manager._admit_session = admit_within_quota  # type: ignore[method-assign]


class _Authenticate:
    """ASGI wrapper: a request without a known token gets 401 before it reaches MCP; a known one
    is handed on as the SDK's authenticated user, so each session is bound to the caller that
    opened it (another caller's token with its session id is answered as an unknown session)."""

    def __init__(self, app: Any, gateway: Gateway) -> None:
        self.app, self.gateway = app, gateway

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            caller = self.gateway._authenticate(token_of(headers))
            if caller is None:
                body = b'{"error":"invalid_token","error_description":"unknown or missing token"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
            scope = {**scope, "user": AuthenticatedUser(AccessToken(token="", client_id=caller.name, scopes=[]))}
            reset = _REQUEST_CALLER.set(caller)
            try:
                await self.app(scope, receive, send)
            finally:
                _REQUEST_CALLER.reset(reset)
            return
        await self.app(scope, receive, send)


def _cut(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to ``limit`` characters with a note saying so, and its length when cut (else 0)."""
    if len(text) <= limit:
        return text, 0
    return text[:limit] + f" …[cut by the gateway: {len(text) - limit:,} more characters]", len(text)


#: JSON Schema keywords whose value is a schema, a list of schemas, or a map of names to schemas:
#: where :func:`_cut_schema` looks for descriptions and titles (never inside ``const``, ``enum``,
#: ``default`` or ``examples``, values a call or result must match as they are).
_SUBSCHEMA = frozenset(
    {"items", "additionalItems", "additionalProperties", "unevaluatedItems", "unevaluatedProperties"}
    | {"contains", "propertyNames", "not", "if", "then", "else"}
)
_SUBSCHEMAS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_NAMED_SUBSCHEMAS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})


def _cut_schema(schema: Any, limit: int) -> tuple[Any, int]:
    """``schema`` with the ``description`` and ``title`` of it and of each of its subschemas
    cut to ``limit`` characters (see :func:`_cut`), and the longest length cut (0: none, and
    ``schema`` itself)."""
    longest = 0

    def walk(node: Any) -> Any:
        nonlocal longest
        if isinstance(node, list):  # "items" of an older draft: a schema per position
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {}
        for key, value in node.items():
            if key in ("description", "title") and isinstance(value, str):
                value, was = _cut(value, limit)
                longest = max(longest, was)
            elif key in _SUBSCHEMA or (key in _SUBSCHEMAS and isinstance(value, list)):
                value = walk(value)
            elif key in _NAMED_SUBSCHEMAS and isinstance(value, dict):
                value = {name: walk(sub) for name, sub in value.items()}
            out[key] = value
        return out

    cut = walk(schema)
    return (cut, longest) if longest else (schema, 0)


def _session_key(ctx: Any, caller: CallerConfig) -> str:
    """Whose searches and calls make one learning event: the MCP session, else the caller. A
    2026-07-28 request has no session: a session id header it carries is the client's own word
    (any number of them), and is not read."""
    request = getattr(ctx, "request", None)
    headers = getattr(request, "headers", None)
    session = headers.get("mcp-session-id") if headers is not None else None
    if str(getattr(ctx, "protocol_version", "")).startswith("2026"):
        session = None
    return f"{caller.name}\0{session or ''}"


def _sendable(arguments: Mapping[str, Any]) -> None:
    """Refuses arguments that cannot be written as JSON text (a lone surrogate, nesting past
    what the encoder takes): sent on, they failed inside the upstream's connection, which
    closed it for every caller, restart after restart."""
    try:
        json.dumps(arguments, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, ValueError, TypeError, RecursionError):
        raise InvalidParameterError("the arguments hold text that is not valid Unicode (a lone surrogate)") from None


def _allowed(version: Version, perms: Permissions) -> set[str]:
    """The names of the tools of ``version`` a permission set may use."""
    names = version.index.names  # a fresh list
    return {names[i] for i in version.index.allowed_positions(caller=perms).tolist()}


def _key(caller: CallerConfig) -> Permissions:
    """The key of a caller's listing: its distinct permissions, sorted."""
    return tuple(sorted(set(caller.permissions)))


def token_of(headers: Mapping[str, str]) -> str | None:
    """The caller's token: ``Authorization: Bearer T`` or ``X-API-Key: T``."""
    auth = headers.get("authorization")
    if auth and auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    return headers.get("x-api-key")


def _annotations(tool: types.Tool) -> dict[str, Any] | None:
    if tool.annotations is None:
        return None
    return tool.annotations.model_dump(by_alias=True, exclude_none=True, mode="json") or None


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _review_tool() -> types.Tool:
    return types.Tool(
        name=REVIEW,
        description=(
            "List upstream tools whose schema changed and is held back (each with its old and new digest and "
            "the new definition); accept some as NAME@DIGEST, the new digest you reviewed."
        ),
        input_schema={
            "type": "object",
            "properties": {"accept": {"type": "array", "items": {"type": "string", "description": "NAME@DIGEST"}}},
        },
    )


def _version() -> str:
    from .. import __version__

    return __version__
