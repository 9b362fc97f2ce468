"""Coordinate search of toolsift's BM25F parameters on a labelled dataset (default: BFCL).

Prints nDCG@10 and Recall@10 for each setting tried, starting from the library defaults, and the
best setting found. Used to choose the defaults in ``toolsift.text``; rerun after tokenizer changes:

    python benches/tune_lexical.py [--rounds 2]
"""

from __future__ import annotations

import argparse

from toolsift.eval import evaluate, load_bfcl, toolsift_system
from toolsift.text import DEFAULT_FIELD_B, DEFAULT_FIELD_WEIGHTS

GRID = {
    "k1": [0.6, 0.9, 1.2, 1.5, 2.0],
    "w.name": [1.0, 2.0, 3.0, 4.0],
    "w.description": [0.5, 1.0, 1.5],
    "w.parameters": [0.0, 0.25, 0.5, 1.0],
    "b.name": [0.0, 0.25, 0.5, 0.75, 1.0],
    "b.description": [0.25, 0.5, 0.75, 1.0],
    "b.parameters": [0.25, 0.5, 0.75, 1.0],
}


def options(setting: dict[str, float]) -> dict[str, object]:
    weights = dict(DEFAULT_FIELD_WEIGHTS)
    bs = dict(DEFAULT_FIELD_B)
    for key, value in setting.items():
        if key.startswith("w."):
            weights[key[2:]] = value
        elif key.startswith("b."):
            bs[key[2:]] = value
    return {"k1": setting["k1"], "field_weights": weights, "b": bs}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    data = load_bfcl()
    best = {
        "k1": 1.2,
        **{f"w.{k}": v for k, v in DEFAULT_FIELD_WEIGHTS.items() if k in ("name", "description", "parameters")},
    }
    best.update({f"b.{k}": v for k, v in DEFAULT_FIELD_B.items() if k in ("name", "description", "parameters")})

    def score(setting: dict[str, float]) -> tuple[float, float]:
        r = evaluate(toolsift_system(data, **options(setting)), data)
        return r.overall["nDCG@10"], r.overall["R@10"]

    best_score = score(best)
    print(f"start {best} -> nDCG@10 {best_score[0]:.4f} R@10 {best_score[1]:.4f}")
    for _ in range(args.rounds):
        for key, values in GRID.items():
            for v in values:
                if v == best[key]:
                    continue
                trial = {**best, key: v}
                s = score(trial)
                print(f"  {key}={v}: nDCG@10 {s[0]:.4f} R@10 {s[1]:.4f}")
                if s > best_score:
                    best, best_score = trial, s
            print(f"best after {key}: {best} -> {best_score[0]:.4f} / {best_score[1]:.4f}")


if __name__ == "__main__":
    main()
