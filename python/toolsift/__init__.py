"""toolsift: pick the tools an LLM agent sees.

Permission-filtered BM25 in a Rust core, token-budgeted selection, registry-order output for a
stable prompt prefix.
"""

from . import errors
from ._core import __version__
from .assemble import default_token_count, to_anthropic, to_mcp, to_openai, tool_references
from .dense import DenseIndex, Embedder, OpenAIEmbedder, SentenceTransformerEmbedder, default_embedder
from .doctor import Checkup, Diagnosis, doctor
from .index import Index
from .learning import Learned
from .plan import Tier
from .query import MAX_WEIGHT, Query
from .registry import Catalog, Tool
from .results import Dropped, Hit, Selection
from .static import StaticEmbedder
from .text import tokenize
from .tiers import Hooks, Toolbox, ToolEvent, ToolTierOptions
from .usage import RedisUsageStore, Usage, UsageStore

__all__ = [
    "MAX_WEIGHT",
    "Catalog",
    "Checkup",
    "DenseIndex",
    "Diagnosis",
    "Dropped",
    "Embedder",
    "Hit",
    "Hooks",
    "Index",
    "Learned",
    "OpenAIEmbedder",
    "Query",
    "RedisUsageStore",
    "Selection",
    "SentenceTransformerEmbedder",
    "StaticEmbedder",
    "Tier",
    "Tool",
    "ToolEvent",
    "ToolTierOptions",
    "Toolbox",
    "Usage",
    "UsageStore",
    "__version__",
    "default_embedder",
    "default_token_count",
    "doctor",
    "errors",
    "to_anthropic",
    "to_mcp",
    "to_openai",
    "tokenize",
    "tool_references",
]
