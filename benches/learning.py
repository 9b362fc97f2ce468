"""Learning from use on BFCL: replays over several seeds, and the learned field's weight and ``b``.

For each seed, BFCL's requests are shuffled (or kept in the dataset's order, which is by category:
the scored half then asks for tools the log never called) and cut in half; the first half is played into a
:class:`toolsift.Learned` (each request followed by calls of the tools it needs), the second half
is scored by the index as built and by the index rebuilt with the learned texts, at the default
weight and ``b`` of the ``learned`` field and at each ``--weights`` / ``--bs`` pair given. Printed
per seed and setting: nDCG@10 overall, its change, and the worst change of any BFCL category.

    python benches/learning.py
    python benches/learning.py --seeds 0 1 2 3 --weights 0.2 0.3 0.5 --bs 0 0.15 0.75
    python benches/learning.py --known 0     # reinforce what already ranks first too
    python benches/learning.py --max-repeats 6 10   # let often-confirmed words count more
"""

from __future__ import annotations

import argparse
import itertools

import toolsift as ts
from toolsift.eval import evaluate
from toolsift.eval.datasets import load_bfcl
from toolsift.eval.replay import SCOPE, called_tools, split
from toolsift.eval.systems import System
from toolsift.learning import KNOWN, MAX_REPEATS
from toolsift.text import DEFAULT_FIELD_B, DEFAULT_FIELD_WEIGHTS


def _system(index: ts.Index) -> System:
    return System("toolsift", lambda q, k: [h.tool.name for h in index.search(q.text, k=k)], index)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--seeds", nargs="+", default=["order", "0", "1", "2", "3"], help="'order': the dataset's own order"
    )
    parser.add_argument("--weights", type=float, nargs="*", default=[])
    parser.add_argument("--bs", type=float, nargs="*", default=[])
    parser.add_argument("--known", type=int, default=KNOWN)
    parser.add_argument("--max-repeats", type=int, nargs="*", default=[], help="also with these Learned(max_repeats=)")
    args = parser.parse_args()
    default = (DEFAULT_FIELD_WEIGHTS["learned"], DEFAULT_FIELD_B["learned"], MAX_REPEATS)
    settings = [default, *((w, b, MAX_REPEATS) for w, b in itertools.product(args.weights, args.bs))]
    settings += [(default[0], default[1], r) for r in args.max_repeats]
    settings = list(dict.fromkeys(settings))
    data = load_bfcl()
    print("| seed | learned weight | b | max repeats | nDCG@10 before | after | change | worst category change |")
    print("|---|---|---|---|---|---|---|---|")
    gains: dict[tuple[float, float, int], list[float]] = {s: [] for s in settings}
    for seed in args.seeds:
        log, scored = split(data, 0.5, None if seed == "order" else int(seed))
        base = ts.Index(data.catalog)
        before = evaluate(_system(base), scored)
        learned = ts.Learned(clock=lambda: 0.0, known=args.known)
        for q in log:
            learned.observe(base, q.text, called_tools(data, q), scope=SCOPE)
        for w, b, repeats in settings:
            learned.max_repeats = repeats
            texts = learned.texts(SCOPE, base)
            index = ts.Index(data.catalog, field_weights={"learned": w}, b={"learned": b}).with_learned(texts)
            after = evaluate(_system(index), scored)
            worst = min(after.by_category[c]["nDCG@10"] - before.by_category[c]["nDCG@10"] for c in before.by_category)
            was, now = before.overall["nDCG@10"], after.overall["nDCG@10"]
            gains[(w, b, repeats)].append(now - was)
            print(f"| {seed} | {w:g} | {b:g} | {repeats} | {was:.3f} | {now:.3f} | {now - was:+.3f} | {worst:+.3f} |")
    for (w, b, repeats), g in gains.items():
        print(f"weight {w:g}, b {b:g}, max repeats {repeats}: mean change {sum(g) / len(g):+.4f} over {len(g)} seeds")


if __name__ == "__main__":
    main()
