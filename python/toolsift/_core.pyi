"""Type stubs of the Rust extension ``toolsift._core``."""

from collections.abc import Sequence
from typing import final

import numpy as np
import numpy.typing as npt

__all__ = [
    "DEFAULT_PREFIX_WEIGHT",
    "MIN_FIELD_WEIGHT",
    "Caller",
    "Index",
    "__version__",
    "_panic_for_tests",
    "stem",
    "tokenize",
]
__version__: str
DEFAULT_PREFIX_WEIGHT: float
MIN_FIELD_WEIGHT: float

def tokenize(text: str) -> list[str]: ...
def stem(word: str) -> str: ...

# one text of weight 1, or (text, weight) pieces
_QueryArg = str | list[tuple[str, float]]

@final
class Caller: ...

@final
class Index:
    def __new__(
        cls,
        fields: list[list[str]],
        weights: list[float],
        bs: list[float],
        perms: list[list[str]],
        costs: list[int],
        core: list[bool],
        k1: float = 0.9,
        prefix_weight: float = ...,
    ) -> Index: ...
    def __len__(self) -> int: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes) -> Index: ...
    def search(
        self, query: _QueryArg, caller: Caller, k: int
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]: ...
    def select(
        self, query: _QueryArg, caller: Caller, budget_tokens: int, max_taken: int | None = None
    ) -> tuple[tuple[int, ...], int, int, tuple[int, ...], bool]: ...
    def search_many(
        self, queries: list[_QueryArg], caller: Caller, k: int
    ) -> list[tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]]: ...
    def select_many(
        self,
        queries: list[_QueryArg],
        caller: Caller,
        budget_tokens: int,
        max_taken: int | None = None,
    ) -> list[tuple[tuple[int, ...], int, int, tuple[int, ...], bool]]: ...
    def select_ranked(
        self, ranked: npt.NDArray[np.uint32], caller: Caller, budget_tokens: int, max_taken: int | None = None
    ) -> tuple[tuple[int, ...], int, int, tuple[int, ...], bool]: ...
    def allowed_mask(self, caller: Caller) -> npt.NDArray[np.bool_]: ...
    def allows(self, caller: Caller, position: int) -> bool: ...
    def cost(self, position: int) -> int: ...
    def permissions(self, position: int) -> list[str]: ...
    def is_core(self, position: int) -> bool: ...
    def memory_bytes(self) -> int: ...
    def caller(self, caller: Sequence[str]) -> Caller: ...
    @property
    def num_terms(self) -> int: ...
    @property
    def num_postings(self) -> int: ...
    @property
    def num_permissions(self) -> int: ...
    @property
    def prefix_weight(self) -> float: ...
    @property
    def k1(self) -> float: ...
    @property
    def field_params(self) -> list[tuple[float, float]]: ...

def _panic_for_tests() -> None: ...
