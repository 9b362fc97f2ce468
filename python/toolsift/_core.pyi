"""Type stubs of the Rust extension ``toolsift._core``."""

from typing import final

import numpy as np
import numpy.typing as npt

__all__ = ["Index", "__version__", "_panic_for_tests", "stem", "tokenize"]
__version__: str

def tokenize(text: str) -> list[str]: ...
def stem(word: str) -> str: ...

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
    ) -> Index: ...
    def __len__(self) -> int: ...
    def search(
        self, query: list[tuple[str, float]], caller: list[str], k: int
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]: ...
    def select(
        self, query: list[tuple[str, float]], caller: list[str], budget_tokens: int, max_taken: int | None = None
    ) -> tuple[npt.NDArray[np.uint32], int, int, npt.NDArray[np.uint32], bool]: ...
    def search_many(
        self, queries: list[list[tuple[str, float]]], caller: list[str], k: int
    ) -> list[tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]]: ...
    def select_many(
        self,
        queries: list[list[tuple[str, float]]],
        caller: list[str],
        budget_tokens: int,
        max_taken: int | None = None,
    ) -> list[tuple[npt.NDArray[np.uint32], int, int, npt.NDArray[np.uint32], bool]]: ...
    def select_ranked(
        self, ranked: npt.NDArray[np.uint32], caller: list[str], budget_tokens: int, max_taken: int | None = None
    ) -> tuple[npt.NDArray[np.uint32], int, int, npt.NDArray[np.uint32], bool]: ...
    def allowed_mask(self, caller: list[str]) -> npt.NDArray[np.bool_]: ...
    def allows(self, caller: list[str], position: int) -> bool: ...
    def cost(self, position: int) -> int: ...
    @property
    def num_terms(self) -> int: ...
    @property
    def num_postings(self) -> int: ...
    @property
    def num_permissions(self) -> int: ...

def _panic_for_tests() -> None: ...
