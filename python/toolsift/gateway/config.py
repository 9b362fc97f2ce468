"""Gateway configuration: a TOML file read into frozen dataclasses, every field checked.

A wrong type, a missing required key or an unknown key raises
:class:`~toolsift.errors.GatewayConfigError` naming the file and the dotted field; nothing is
ignored silently. See the README for a complete example.
"""

from __future__ import annotations

import fnmatch
import hmac
import ipaddress
import os
import re
import sys
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..callers import RESERVED
from ..errors import GatewayConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SEPARATOR = "__"
STATISTICS = ("caller", "shared")  # see Index(statistics=...): per-caller statistics by default
SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*(?:_[A-Za-z0-9-]+)*$")  # never holds the separator


@dataclass(frozen=True)
class ServerConfig:
    """One upstream MCP server: a command run over stdio, or a streamable-HTTP URL."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    permissions: tuple[str, ...] = ()
    pinned: tuple[str, ...] = ()
    timeout: float | None = None


@dataclass(frozen=True)
class Rule:
    """Extra permissions (or hiding) for the tools a rule matches.

    ``match`` is a glob over namespaced names (``files__delete_*``); ``read_only`` and
    ``destructive``, when set, also require the tool's MCP annotations to agree (a tool that is not
    read-only is destructive unless it says ``destructiveHint: false``, as the MCP spec defaults).
    """

    match: str = "*"
    read_only: bool | None = None
    destructive: bool | None = None
    require: tuple[str, ...] = ()
    hide: bool = False

    def applies(self, name: str, annotations: Mapping[str, Any] | None) -> bool:
        if not fnmatch.fnmatchcase(fold(name), fold(self.match)):  # raw__Delete_file meets raw__delete_*
            return False
        notes = annotations or {}
        read_only = notes.get("readOnlyHint") is True
        destructive = not read_only and notes.get("destructiveHint", True) is not False
        if self.read_only is not None and self.read_only != read_only:
            return False
        return self.destructive is None or self.destructive == destructive


@dataclass(frozen=True)
class CallerConfig:
    """A downstream caller: the token it presents and the permissions it holds."""

    name: str
    token: str
    permissions: tuple[str, ...] = ()
    admin: bool = False


@dataclass(frozen=True)
class ClusterConfig:
    """``[cluster]``: replicas sharing state through one Redis (see :mod:`toolsift.gateway.cluster`)."""

    redis: str
    prefix: str = "toolsift"
    lock_ttl: float = 5.0


@dataclass(frozen=True)
class GatewayConfig:
    """The whole gateway: downstream transport, upstream servers, rules and callers.

    Every way of making one (:func:`parse`, ``dataclasses.replace`` with command-line overrides,
    the constructor) runs the same checks, so no combination of settings skips them: a gateway
    bound to a non-loopback host without ``[callers]`` is refused however the host was set.
    """

    servers: tuple[ServerConfig, ...]
    callers: tuple[CallerConfig, ...] = ()
    rules: tuple[Rule, ...] = ()
    transport: str = "http"
    host: str = "127.0.0.1"
    port: int = 8765
    path: str = "/mcp"
    log: str | None = None
    log_max_bytes: int = 64 * 2**20
    log_backups: int = 3
    budget_tokens: int = 4000
    max_description_chars: int = 16_384
    call_timeout: float = 30.0
    debounce: float = 0.2
    strict_schema_changes: bool = False
    scan: str = "report"
    statistics: str = "caller"
    min_evidence: float | None = None
    session_idle_timeout: float = 300.0
    json_response: bool = True
    max_sessions: int = 10_000
    max_sessions_per_caller: int = 100
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    usage: str | None = None
    learn: bool = False
    learn_scope: str = "caller"
    learn_rebuild_s: float = 60.0
    telemetry: bool = True
    telemetry_text: bool = False
    cluster: ClusterConfig | None = None
    reuse_port: bool = False
    source: str = ""

    def __post_init__(self) -> None:
        def fail(message: str, field: str) -> GatewayConfigError:
            return GatewayConfigError(message, path=self.source, field=field)

        if not self.servers:
            raise fail("at least one upstream server is needed", "servers")
        choices = {
            "transport": ("http", "stdio"),
            "scan": ("off", "report", "withhold"),
            "statistics": STATISTICS,
            "learn_scope": ("caller", "permissions", "shared"),
        }
        for key, allowed in choices.items():
            if getattr(self, key) not in allowed:
                names = ", ".join(repr(a) for a in allowed)
                raise fail(f"must be one of {names}, not {getattr(self, key)!r}", f"gateway.{key}")
        if not 0 <= self.port < 65536:
            raise fail("must be in 0..65535", "gateway.port")
        positive = (
            "budget_tokens",
            "max_description_chars",
            "max_sessions",
            "max_sessions_per_caller",
            "log_max_bytes",
        )
        for key in positive:
            if getattr(self, key) <= 0:
                raise fail("must be a positive integer", f"gateway.{key}")
        for key in ("call_timeout", "session_idle_timeout", "learn_rebuild_s"):
            if not 0 < getattr(self, key) < float("inf"):
                raise fail("must be a positive number of seconds", f"gateway.{key}")
        if not 0 <= self.debounce < float("inf"):
            raise fail("must be a number of seconds >= 0", "gateway.debounce")
        if self.min_evidence is not None and not 0 <= self.min_evidence < float("inf"):
            raise fail("must be a number >= 0 (see Index(min_evidence=...))", "gateway.min_evidence")
        if self.log_backups < 1:  # Python's rotation never rotates without a backup: unbounded
            raise fail("must be >= 1 (the rotated files kept)", "gateway.log_backups")
        if not self.path.startswith("/") or any(c.isspace() for c in self.path):
            raise fail(f"must be a URL path starting with '/', not {self.path!r}", "gateway.path")
        if self.log is not None and self.usage is not None and _same_file(self.log, self.usage):
            raise fail("must not be the usage database's file (the log would be written into it)", "gateway.log")
        if self.transport == "http" and not self.callers and not loopback(self.host):
            raise fail("a gateway bound to a non-loopback host needs [callers] with tokens", "gateway.host")
        if self.cluster is not None:
            if not self.cluster.redis.startswith(("redis://", "rediss://", "unix://")):
                raise fail("must be a redis://, rediss:// or unix:// URL", "cluster.redis")
            if not self.cluster.prefix or ":" in self.cluster.prefix:
                raise fail("must be a non-empty name without ':'", "cluster.prefix")
            if not 0.3 <= self.cluster.lock_ttl < 3600:
                raise fail("must be a number of seconds in 0.3..3600", "cluster.lock_ttl")

    def server(self, name: str) -> ServerConfig:
        return next(s for s in self.servers if s.name == name)

    def caller_for_token(self, token: str | None) -> CallerConfig | None:
        """The caller whose token this is (constant-time comparison), or ``None``."""
        if token is None:
            return None
        found = None
        for caller in self.callers:
            if hmac.compare_digest(caller.token.encode(), token.encode()):
                found = caller
        return found


def _same_file(log: str, usage: str) -> bool:
    """Whether the log would write over the usage database: one file, or one the log writes beside
    itself (``.tools.jsonl``, rotated ``.1`` …) or SQLite beside the database (``-wal`` …)."""
    written, store = str(Path(log).expanduser().resolve()), str(Path(usage).expanduser().resolve())
    if written == store or written + ".tools.jsonl" == store:
        return True
    if store.startswith(written + ".") and store[len(written) + 1 :].isdigit():
        return True
    return written in (store + "-wal", store + "-shm", store + "-journal")


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, message: str, field: str | None = None) -> GatewayConfigError:
        return GatewayConfigError(message, path=self.path, field=field)

    def table(self, data: Any, where: str) -> dict[str, Any]:
        if not isinstance(data, Mapping):
            raise self.fail(f"must be a table, not {type(data).__name__}", where)
        self.string_keys(data, where)
        return dict(data)

    def string_keys(self, data: Mapping[Any, Any], where: str) -> None:
        """Refuses a key that is not a string (a table given to :func:`parse` from Python)."""
        odd = next((k for k in data if not isinstance(k, str)), None)
        if odd is not None:
            raise self.fail(f"keys must be strings, not {type(odd).__name__} {odd!r:.80}", where)

    def take(
        self, data: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str, default: Any = None
    ) -> Any:
        value = data.pop(key, default)
        if value is default:
            return value
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
            names = " or ".join(k.__name__ for k in kinds)
            raise self.fail(f"must be {names}, not {type(value).__name__}", f"{where}.{key}")
        return value

    def strings(self, data: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
        value = self.take(data, key, (list, str), where, ())
        items = [value] if isinstance(value, str) else list(value)
        if not all(isinstance(v, str) and v for v in items):
            raise self.fail("must be a list of non-empty strings", f"{where}.{key}")
        if key in ("permissions", "require") and any(v.startswith(RESERVED) for v in items):
            # no caller can hold one: each request of such a caller failed, and such a rule hid its tools
            raise self.fail(f"permissions starting with {RESERVED!r} are reserved", f"{where}.{key}")
        return tuple(items)

    def string_map(self, data: dict[str, Any], key: str, where: str) -> dict[str, str] | None:
        value = self.take(data, key, Mapping, where)
        if value is None:
            return None
        self.string_keys(value, f"{where}.{key}")
        if not all(isinstance(v, str) for v in value.values()):
            raise self.fail("values must be strings", f"{where}.{key}")
        return dict(value)

    def done(self, data: dict[str, Any], where: str) -> None:
        if data:
            raise self.fail(
                f"unknown key {sorted(data)[0]!r}", f"{where}.{sorted(data)[0]}" if where else sorted(data)[0]
            )


def _server(r: _Reader, name: str, data: Any) -> ServerConfig:
    where = f"servers.{name}"
    if not SERVER_NAME.fullmatch(name):
        raise r.fail(
            f"server name {name!r} must be letters, digits, '-' and single '_' (it prefixes tool names with "
            f"{SEPARATOR!r})",
            where,
        )
    d = r.table(data, where)
    command, url = r.take(d, "command", str, where), r.take(d, "url", str, where)
    if (command is None) == (url is None):
        raise r.fail("needs exactly one of 'command' (stdio) or 'url' (streamable HTTP)", where)
    if command is not None and not command.strip():
        raise r.fail("must name a program, not be empty", f"{where}.command")
    if url is not None and not url.lower().startswith(("http://", "https://")):
        raise r.fail(f"must be an http:// or https:// URL (streamable HTTP), not {url!r}", f"{where}.url")
    timeout = r.take(d, "timeout", (int, float), where)
    if timeout is not None and not 0 < timeout < float("inf"):
        raise r.fail("must be a positive number of seconds", f"{where}.timeout")
    server = ServerConfig(
        name=name,
        command=command,
        args=r.strings(d, "args", where),
        env=r.string_map(d, "env", where),
        cwd=r.take(d, "cwd", str, where),
        url=url,
        headers=r.string_map(d, "headers", where) or {},
        permissions=r.strings(d, "permissions", where) or (name,),
        pinned=r.strings(d, "pinned", where),
        timeout=None if timeout is None else float(timeout),
    )
    r.done(d, where)
    return server


def _rule(r: _Reader, i: int, data: Any) -> Rule:
    where = f"rules[{i}]"
    d = r.table(data, where)
    rule = Rule(
        match=r.take(d, "match", str, where, "*"),
        read_only=r.take(d, "read_only", bool, where),
        destructive=r.take(d, "destructive", bool, where),
        require=r.strings(d, "require", where),
        hide=r.take(d, "hide", bool, where, False),
    )
    r.done(d, where)
    if not rule.require and not rule.hide:
        raise r.fail("a rule needs 'require' or 'hide = true'", where)
    return rule


def _caller(r: _Reader, name: str, data: Any) -> CallerConfig:
    where = f"callers.{name}"
    d = r.table(data, where)
    token, env = r.take(d, "token", str, where), r.take(d, "token_env", str, where)
    if (token is None) == (env is None):
        raise r.fail("needs exactly one of 'token' or 'token_env'", where)
    if env is not None:
        token = os.environ.get(env)
        if not token:
            raise r.fail(f"environment variable {env} is not set", f"{where}.token_env")
    field = f"{where}.token" if env is None else f"{where}.token_env"
    if len(token) < 8:
        raise r.fail("tokens must have at least 8 characters", field)
    if not (token.isascii() and token.isprintable()) or token != token.strip() or " " in token:
        # a request's header carries printable ASCII, and its spaces are stripped: such a token
        # could never be presented
        raise r.fail("tokens must be printable ASCII without spaces", field)
    caller = CallerConfig(
        name=name,
        token=token,
        permissions=r.strings(d, "permissions", where),
        admin=r.take(d, "admin", bool, where, False),
    )
    r.done(d, where)
    return caller


#: The keys of ``[gateway]`` and their TOML types (``tuple``: a list of strings); defaults are
#: those of :class:`GatewayConfig`.
_GATEWAY_KEYS: dict[str, type | tuple[type, ...]] = {
    "transport": str,
    "host": str,
    "port": int,
    "path": str,
    "log": str,
    "log_max_bytes": int,
    "log_backups": int,
    "budget_tokens": int,
    "max_description_chars": int,
    "call_timeout": (int, float),
    "debounce": (int, float),
    "strict_schema_changes": bool,
    "scan": str,
    "statistics": str,
    "min_evidence": (int, float),
    "session_idle_timeout": (int, float),
    "json_response": bool,
    "max_sessions": int,
    "max_sessions_per_caller": int,
    "allowed_hosts": tuple,
    "allowed_origins": tuple,
    "usage": str,
    "learn": bool,
    "learn_scope": str,
    "learn_rebuild_s": (int, float),
    "telemetry": bool,
    "telemetry_text": bool,
}


def _cluster(r: _Reader, data: Any) -> ClusterConfig | None:
    if data is None:
        return None
    d = r.table(data, "cluster")
    redis = r.take(d, "redis", str, "cluster")
    if redis is None:
        raise r.fail("needs 'redis', the URL of the shared Redis", "cluster.redis")
    lock_ttl = r.take(d, "lock_ttl", (int, float), "cluster", 5.0)
    cluster = ClusterConfig(redis, r.take(d, "prefix", str, "cluster", "toolsift"), float(lock_ttl))
    r.done(d, "cluster")
    return cluster


def parse(data: Mapping[str, Any], source: str = "") -> GatewayConfig:
    """A :class:`GatewayConfig` from already-parsed TOML (or JSON) data."""
    r = _Reader(source)
    top = r.table(data, "")
    gw = r.table(top.pop("gateway", {}), "gateway")
    servers_table = r.table(top.pop("servers", {}), "servers")
    servers = tuple(_server(r, name, value) for name, value in servers_table.items())
    rules_list = r.take(top, "rules", list, "", [])
    rules = tuple(_rule(r, i, value) for i, value in enumerate(rules_list))
    callers = tuple(_caller(r, name, value) for name, value in r.table(top.pop("callers", {}), "callers").items())
    cluster = _cluster(r, top.pop("cluster", None))
    tokens = [c.token for c in callers]
    if len(set(tokens)) != len(tokens):
        raise r.fail("two callers share a token", "callers")
    r.done(top, "")
    options: dict[str, Any] = {}
    for key, kind in _GATEWAY_KEYS.items():
        if key in gw and kind is tuple:
            options[key] = r.strings(gw, key, "gateway")
        elif key in gw:
            value = r.take(gw, key, kind, "gateway")
            options[key] = float(value) if kind == (int, float) else value
    config = GatewayConfig(servers=servers, callers=callers, rules=rules, cluster=cluster, source=source, **options)
    r.done(gw, "gateway")
    return config


def loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def load(path: str | Path) -> GatewayConfig:
    """Reads and checks a gateway TOML file."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GatewayConfigError("no such file", path=str(p)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise GatewayConfigError(f"cannot read: {e}", path=str(p)) from None
    except tomllib.TOMLDecodeError as e:
        raise GatewayConfigError(f"not valid TOML: {e}", path=str(p)) from None
    return parse(data, str(p))


def fold(name: str) -> str:
    """A name as rules compare it: compatibility forms and case folded (``raw__Delete_file`` and its
    fullwidth spelling both meet ``raw__delete_*``)."""
    return unicodedata.normalize("NFKC", name).casefold()


def namespaced(server: str, tool: str) -> str:
    """The name a gateway client sees for ``tool`` of ``server``."""
    return f"{server}{SEPARATOR}{tool}"


def permissions_of(
    config: GatewayConfig, server: str, name: str, annotations: Mapping[str, Any] | None
) -> tuple[tuple[str, ...], bool]:
    """``(permissions, hidden)`` for a namespaced tool: the server's, plus every matching rule's."""
    perms: list[str] = list(config.server(server).permissions)
    hidden = False
    for rule in config.rules:
        if rule.applies(name, annotations):
            perms.extend(rule.require)
            hidden = hidden or rule.hide
    return tuple(sorted(set(perms))), hidden


def all_permissions(config: GatewayConfig) -> Sequence[str]:
    """Every permission the config names (the anonymous caller's set when no callers are configured)."""
    perms = {p for s in config.servers for p in s.permissions}
    perms.update(p for rule in config.rules for p in rule.require)
    return sorted(perms)
