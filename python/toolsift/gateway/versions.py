"""The gateway's data of one index version: each upstream tool as held (:class:`Entry`), the
listing of one permission set (:class:`Listing`), the version itself (:class:`Version`), and the
digest that tells a changed definition (:func:`digest`). Shared by the server and replication."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types

from ..index import Index
from ..registry import Tool
from ..tiers import Toolbox


@dataclass(frozen=True)
class Entry:
    """One upstream tool as the gateway holds it."""

    server: str
    upstream_name: str
    tool: Tool
    digest: str
    hidden: bool = False
    cut_from: int = 0
    """The length in characters of the longest upstream text the gateway cut (the description,
    the title, a schema's description or title), else 0."""
    placeholder: bool = False
    """Known by digest only (taken over from another replica's version, not in service there):
    never put in service until a listing of its server brings the definition."""


Permissions = tuple[str, ...]


@dataclass
class Listing:
    """What the gateway answers one permission set with: its toolbox, its ``tools/list`` tools and
    their input schemas by name."""

    toolbox: Toolbox
    tools: list[types.Tool]
    schemas: dict[str, Any] = field(default_factory=dict)


@dataclass
class Version:
    """One immutable index version and the listings made from it, one per permission set (callers
    with the same permissions share one; each is built once, off the event loop)."""

    number: int
    entries: Mapping[str, Entry]
    index: Index
    listings: dict[tuple[Permissions, str], Listing] = field(default_factory=dict)
    """By permission set and learning scope."""
    building: dict[tuple[Permissions, str], anyio.Lock] = field(default_factory=dict)
    ready: anyio.Event = field(default_factory=anyio.Event)
    """Set once the listing of every configured caller's permission set is built (one that fails
    is logged, and its callers get the error on their requests)."""
    held: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    """Schema changes held back when this version was made: ``{name: (old digest, new digest)}``."""
    reviews: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """The definition of each held change its lister had (that of the new digest), so that an
    admin on any replica reviews what it accepts."""
    table: tuple[tuple[str, str, str, str, bool, int], ...] = ()
    """The whole tool table it was made from (see :data:`toolsift.gateway.cluster.Row`)."""
    learned: Mapping[str, Index] = field(default_factory=dict)
    """``index`` rebuilt with each learning scope's learned texts (``[gateway] learn``); a scope
    without texts ranks with ``index``."""

    def index_for(self, scope: str) -> Index:
        """The index a caller of learning scope ``scope`` ranks with."""
        return self.learned.get(scope, self.index)


def digest(tool: types.Tool) -> str:
    """SHA-256 of what a model relies on: description, input schema, annotations, title and
    output schema (text with a lone surrogate, which an upstream may send, is hashed as it is,
    not an error). A tool without an output schema keeps the digest it had before one was
    hashed."""
    data = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    kept = {k: data.get(k) for k in ("title", "description", "inputSchema", "annotations")}
    if data.get("outputSchema") is not None:
        kept["outputSchema"] = data["outputSchema"]
    text = json.dumps(kept, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
