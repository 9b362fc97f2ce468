"""Exceptions raised by toolsift.

Every class derives from :class:`ToolsiftError` and also from the builtin a caller would naturally
catch (``ValueError``, ``TypeError``, ``LookupError``, ``RuntimeError``). Errors about a tool carry
``tool`` (its name, or its position when it has no usable name) and ``field`` attributes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class ToolsiftError(Exception):
    """Base class of every toolsift error."""


class CatalogError(ToolsiftError, ValueError):
    """A tool or catalog cannot be accepted."""

    def __init__(self, message: str, *, tool: str | None = None, field: str | None = None) -> None:
        self.tool = tool
        self.field = field
        where = ""
        if tool is not None:
            where = f"tool {tool!r}"
            if field is not None:
                where += f", field {field!r}"
            where += ": "
        super().__init__(where + message)


class InvalidToolError(CatalogError):
    """A tool definition has a field of the wrong type or value."""


class InvalidToolTypeError(InvalidToolError, TypeError):
    """A tool field has the wrong Python type (for example a non-string description)."""


class SchemaError(InvalidToolError):
    """A tool's parameters are not a JSON-schema object (or not JSON at all)."""


class DuplicateToolError(CatalogError):
    """Two tools in one catalog share a name."""


class CatalogFormatError(CatalogError):
    """A loader input (MCP, OpenAI, Anthropic, JSON or JSONL) has the wrong shape."""


class CatalogEncodingError(CatalogFormatError):
    """A catalog file is not valid UTF-8."""


class CatalogTooLargeError(CatalogError):
    """More tools than the index can address."""


class PoisonedToolError(CatalogError):
    """A tool definition carries prompt-injection markers, hidden characters or a look-alike name.

    Attributes:
        findings: Every :class:`toolsift.scan.Finding`, in registry order.
    """

    def __init__(self, findings: Sequence[Any]) -> None:
        self.findings = tuple(findings)
        first = self.findings[0]
        more = f" (and {len(self.findings) - 1} more)" if len(self.findings) > 1 else ""
        super().__init__(f"{first.kind}: {first.detail}{more}", tool=first.tool, field=first.field)


class UnknownToolError(ToolsiftError, LookupError):
    """No tool of that name is available to the caller.

    Raised alike for a tool that does not exist and for one the caller may not use, so the error
    never reveals that a hidden tool exists.
    """

    def __init__(self, name: str) -> None:
        self.tool = name
        self.field: str | None = None
        super().__init__(f"unknown tool {name!r}")


class InvalidParameterError(ToolsiftError, ValueError):
    """A search, selection or build parameter is out of its domain (k, budget, k1, b, weights)."""


class UnknownPermissionError(InvalidParameterError):
    """A caller holds permissions that no tool of the index requires (see
    :meth:`toolsift.Index.check_caller`): usually a misspelled or wrongly namespaced permission
    (``s3`` for ``aws:s3``). ``unknown`` lists them."""

    def __init__(self, unknown: Sequence[str]) -> None:
        self.unknown = tuple(unknown)
        super().__init__(f"no tool requires the caller's permissions {list(self.unknown)!r}")


class SnapshotError(ToolsiftError, ValueError):
    """A saved index cannot be loaded: not a snapshot, a newer format, truncated or corrupted."""


class GatewayConfigError(ToolsiftError, ValueError):
    """A gateway configuration file is missing, not TOML, or has a wrong or unknown field.

    Attributes:
        path: The configuration file.
        field: The offending key, dotted (``servers.files.command``), or ``None``.
    """

    def __init__(self, message: str, *, path: str = "", field: str | None = None) -> None:
        self.path, self.field = path, field
        where = f"{path}: " if path else ""
        at = f" [{field}]" if field else ""
        super().__init__(f"{where}{message}{at}")


class StoreUnavailableError(ToolsiftError, ConnectionError):
    """The shared store of a gateway cluster (Redis) cannot be reached for something that must
    be written there now (an acknowledgement of a held schema change), or a store file stays
    locked by another process past the busy timeout; try again once it is back."""


class StoreFormatError(ToolsiftError, ValueError):
    """A usage or learned-words store cannot be opened: the file is not a SQLite database, is
    corrupted, or cannot be created there.

    Attributes:
        path: The store's file.
    """

    def __init__(self, message: str, *, path: str = "") -> None:
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class InternalError(ToolsiftError, RuntimeError):
    """The Rust core failed unexpectedly; the index is unchanged. Please report it."""


class MissingHandlerError(ToolsiftError, LookupError):
    """The tool exists and the caller may use it, but the toolbox has no handler to run it."""

    def __init__(self, message: str, *, tool: str | None = None) -> None:
        self.tool, self.field = tool, None
        super().__init__(message)


class UpstreamError(ToolsiftError, RuntimeError):
    """A gateway call could not be completed by the upstream server (down, timed out, crashed,
    bad reply). ``server`` names the upstream, ``reason`` is ``"unavailable"``, ``"timeout"`` or
    ``"error"``."""

    def __init__(self, server: str, reason: str, message: str) -> None:
        self.server, self.reason = server, reason
        super().__init__(message)


class UnknownCallerError(ToolsiftError, PermissionError):
    """A gateway request carries no caller token, or one no configured caller holds."""


class MissingExtraError(ToolsiftError, ImportError):
    """A feature needs an optional dependency that is not installed; the message names the
    extra to install (``pip install 'toolsift[dense]'``)."""


__all__ = [
    "CatalogEncodingError",
    "CatalogError",
    "CatalogFormatError",
    "CatalogTooLargeError",
    "DuplicateToolError",
    "GatewayConfigError",
    "InternalError",
    "InvalidParameterError",
    "InvalidToolError",
    "InvalidToolTypeError",
    "MissingExtraError",
    "MissingHandlerError",
    "PoisonedToolError",
    "SchemaError",
    "SnapshotError",
    "StoreFormatError",
    "StoreUnavailableError",
    "ToolsiftError",
    "UnknownCallerError",
    "UnknownPermissionError",
    "UnknownToolError",
    "UpstreamError",
]
