"""The fusion rule: standardised scores, a missing tool at its side's lowest, blind to each
side's scale, never worse than its better side on a constructed case where the old rule was."""

from __future__ import annotations

import random

import numpy as np
import pytest

from toolsift.errors import InvalidParameterError
from toolsift.fusion import fuse, fuse_arrays, fuse_max, fuse_numpy, rrf


def order(ranking: list[tuple[int, float]]) -> list[int]:
    return [p for p, _ in ranking]


def test_a_tool_both_sides_rank_first_is_first() -> None:
    lexical = [(3, 12.0), (1, 9.0), (2, 4.0)]
    dense = [(3, 0.81), (2, 0.62), (5, 0.40)]
    assert order(fuse(lexical, dense))[0] == 3


def test_each_sides_scale_and_offset_do_not_change_the_order() -> None:
    rng = random.Random(7)
    for _ in range(50):
        lexical = sorted(((p, rng.uniform(0, 30)) for p in rng.sample(range(40), 15)), key=lambda x: -x[1])
        dense = sorted(((p, rng.uniform(-0.2, 0.9)) for p in rng.sample(range(40), 15)), key=lambda x: -x[1])
        scale, shift = rng.uniform(0.01, 100), rng.uniform(-50, 50)
        moved = [(p, s * scale + shift) for p, s in dense]
        assert order(fuse(lexical, dense, 0.6)) == order(fuse(lexical, moved, 0.6))


def test_a_tool_found_by_one_side_only_is_not_buried() -> None:
    # lexical: tool 1 well ahead of the rest; dense: tool 1 is not in its top 5, where tools 7,
    # 8, 9 are about alike. Tool 1 is the lexical side's clear best and the dense side's
    # preference for 7 is slight: the fused ranking keeps tool 1 first.
    lexical = [(1, 20.0), (7, 15.0), (8, 14.0), (9, 13.0), (4, 12.0)]
    dense = [(7, 0.52), (8, 0.51), (9, 0.50), (4, 0.35), (6, 0.30)]
    assert order(fuse(lexical, dense, 0.65))[0] == 1
    # max-normalisation scores tool 1 as 0 on the dense side: it falls behind tool 7
    assert order(fuse_max(lexical, dense, 0.65))[0] == 7


def test_an_uninformative_side_leaves_the_other_sides_order() -> None:
    lexical = [(2, 9.0), (5, 7.0), (1, 3.0)]
    flat = [(5, 0.3), (1, 0.3), (2, 0.3)]  # every score alike: says nothing
    assert order(fuse(lexical, flat)) == [2, 5, 1]
    assert order(fuse(lexical, [])) == [2, 5, 1]
    assert order(fuse([], [(4, 0.9), (6, 0.2)])) == [4, 6]
    assert fuse([], []) == []


@pytest.mark.parametrize("rule", [fuse, rrf])
def test_ties_break_by_registry_position_and_output_is_deterministic(rule) -> None:  # type: ignore[no-untyped-def]
    lexical = [(9, 1.0), (3, 1.0)]
    dense = [(3, 0.5), (9, 0.5)]
    first = rule(lexical, dense)
    assert first == rule(list(lexical), list(dense))
    assert order(first) == [3, 9]


def test_each_fused_score_is_the_convex_combination_of_the_two_z_scores() -> None:
    # the rule spelt out with Python floats, against the array code a hybrid index runs
    rng = random.Random(3)
    for _ in range(30):
        lexical = [(p, rng.uniform(0, 30)) for p in rng.sample(range(60), rng.randint(1, 25))]
        dense = [(p, rng.uniform(-0.2, 0.9)) for p in rng.sample(range(60), rng.randint(1, 25))]

        def z(side: list[tuple[int, float]]) -> tuple[dict[int, float], float]:
            mean = sum(s for _, s in side) / len(side)
            sd = (sum((s - mean) ** 2 for _, s in side) / len(side)) ** 0.5
            got = {p: (s - mean) / sd if sd else 0.0 for p, s in side}
            return got, min(got.values())

        (a, a_low), (b, b_low) = z(lexical), z(dense)
        want = {p: 0.7 * a.get(p, a_low) + 0.3 * b.get(p, b_low) for p in a.keys() | b.keys()}
        got = fuse(lexical, dense, 0.7)
        assert sorted(p for p, _ in got) == sorted(want)
        assert all(abs(s - want[p]) < 1e-9 for p, s in got)
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)


def test_the_cores_fusion_gives_the_numpy_rules_scores_bit_for_bit() -> None:
    # the rule hybrid indexes ran in numpy before the core did, on the same inputs
    # sides of every size numpy sums differently (one by one, eight accumulators, halves), with
    # ties, flat sides and scores of very different magnitudes
    rng = np.random.default_rng(11)
    for trial in range(300):
        sides = []
        for _ in range(2):
            n = int(rng.integers(0, 300))
            positions = rng.choice(400, size=n, replace=False)
            scale = 10.0 ** int(rng.integers(-4, 6))
            scores = rng.standard_normal(n) * scale + rng.uniform(-scale, scale)
            if trial % 7 == 0:
                scores = np.round(scores)  # ties
            if trial % 11 == 0:
                scores[:] = scale  # a flat side
            sides.append((positions, -np.sort(-scores)))
        alpha = float(rng.uniform(0, 1))
        want_positions, want_scores = fuse_numpy(sides[0], sides[1], alpha)
        got_positions, got_scores = fuse_arrays(sides[0], sides[1], alpha)
        assert got_positions.tolist() == want_positions.tolist()
        # + 0.0: numpy may give a flat side's zeros a sign (-0.0), the core never does
        assert (got_scores + 0.0).tobytes() == (want_scores + 0.0).tobytes()


def test_fusion_refuses_sides_whose_positions_and_scores_differ_in_length() -> None:
    with pytest.raises(InvalidParameterError, match="dense"):
        fuse_arrays((np.array([1, 2]), np.array([2.0, 1.0])), (np.array([3]), np.array([1.0, 0.5])))


@pytest.mark.parametrize("positions", [[-1, 2], [2**32 + 2, 2], [2**70, 1], [0.5, 1.0]])
def test_fusion_refuses_positions_that_are_not_registry_positions(positions: list[float]) -> None:
    with pytest.raises(InvalidParameterError, match="lexical positions"):
        fuse([(p, 1.0) for p in positions], [(2, 0.5)])  # type: ignore[misc]
    with pytest.raises(InvalidParameterError, match="dense positions"):
        fuse_arrays((np.array([2]), np.array([1.0])), (positions, np.array([2.0, 1.0])))


def test_a_side_with_a_non_finite_score_says_nothing_and_never_ranks_a_missing_tool_first() -> None:
    dense = [(7, 0.9), (4, 0.1)]
    for bad in (float("nan"), float("inf")):
        got = fuse([(1, bad), (2, 2.0), (3, 1.0)], dense, 0.5)
        assert order(got) == [7, 1, 2, 3, 4]
    overflowing = [(1, 1e308), (2, 1e308), (3, -1e308)]  # finite scores whose mean overflows
    assert order(fuse(overflowing, dense, 0.5))[0] == 7


@pytest.mark.parametrize(
    ("lexical", "alpha", "match"),
    [
        ([(0, "high")], 0.7, "lexical scores must be numbers"),
        ([(0, None)], 0.7, "lexical scores must be numbers"),
        ([(0, 1.0)], float("nan"), r"alpha must be in \[0, 1\]"),
        ([(0, 1.0)], 5, r"alpha must be in \[0, 1\]"),
        ([(0, 1.0)], "0.5", "alpha must be a number"),
    ],
)
def test_fusion_refuses_scores_and_weights_that_are_not_numbers_in_range(
    lexical: list[tuple[int, object]], alpha: object, match: str
) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        fuse(lexical, [(1, 0.5)], alpha)  # type: ignore[arg-type]
