"""``consolidator calibrate``: choose the bounds of attribute resolution for the configured
embedder, on the shipped labelled predicate pairs, and print what they do.

Embeds the humanised predicates of ``processors.attribute_pairs`` (never the values: only
their shapes take part), picks the bounds on the ``tune`` split
(``processors.attribute_calibration.choose_bounds``) and prints leakage, flagged, false
supersede and false conflict on ``tune`` and ``holdout``, for the chosen bounds and for the
configured ones, separately for supersedes (values differ) and reinforcements (values equal),
and on the blind holdout (``processors.attribute_pairs_blind``), which nothing is chosen on;
and ``named``: every labelled pair with the same name before both predicates
(``ada_lovelace_home_city``), as a third party's attributes are keyed
(``processors.about``), reported, never tuned on.
The decisions are ``processors`` code; this module only does the I/O.

Invariants:
- bounds are chosen on the ``tune`` split only; ``holdout`` and the blind set are reported,
  never tuned on;
- nothing is written: the command prints figures and changes no setting, row or topic.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, replace
from typing import TYPE_CHECKING

import orjson

from processors import attribute_pairs_blind as blind
from processors.attribute_calibration import PairScore, Rates, choose_bounds, rates, score
from processors.attribute_pairs import (
    AttributePair,
    different_pairs,
    reinforcement_pairs,
    same_pairs,
)
from processors.attributes import Bounds, attribute, compared
from schemas.settings import Settings
from streams.embedding.embedder import make_embedder

if TYPE_CHECKING:
    from streams.cli.common import Subparsers


# Names put before both predicates of every labelled pair for the ``named`` report.
NAMES = ("ada_lovelace", "lake_tahoe")


def _scores(settings: Settings) -> dict[str, list[PairScore]]:
    embedder = make_embedder(settings.embedding)
    splits: dict[str, list[tuple[AttributePair, str]]] = {}
    for split in ("tune", "holdout"):
        rows = [(p, "supersede") for p in (*same_pairs(split), *different_pairs(split))]
        # A reinforcement restates the value under another name: scored as a create.
        rows += [(p.reinforcement(), "create") for p in reinforcement_pairs(split)]
        splits[split] = rows
    # The blind holdout: reported, never used to choose (processors.attribute_pairs_blind).
    splits["blind"] = [
        (AttributePair(lp, lv, rp, rv, "blind", same), "supersede")
        for same, rows in ((True, blind.SAME), (False, blind.DIFFERENT))
        for lp, lv, rp, rv in rows
    ]
    splits["named"] = [
        (
            replace(
                p,
                left_predicate=f"{n}_{p.left_predicate}",
                right_predicate=f"{n}_{p.right_predicate}",
            ),
            a,
        )
        for n in NAMES
        for rows in (splits["tune"], splits["holdout"], splits["blind"])
        for p, a in rows
        if a == "supersede"
    ]
    attrs = {
        split: [
            (attribute(p.left_predicate, p.left_value), attribute(p.right_predicate, p.right_value))
            for p, _a in rows
        ]
        for split, rows in splits.items()
    }
    texts = sorted(
        {t for pairs in attrs.values() for a, b in pairs for cut in compared(a, b) for t in cut}
    )
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))
    out: dict[str, list[PairScore]] = {}
    for split, rows in splits.items():
        out[split] = []
        for (pair, action), (a, b) in zip(rows, attrs[split], strict=True):
            d = min(float(1.0 - float(vectors[x] @ vectors[y])) for x, y in compared(a, b))
            out[split].append(score(a, b, d, pair.same, action))
    return out


def configured_bounds(settings: Settings) -> Bounds:
    """The attribute-resolution bounds the settings configure."""
    return Bounds(
        settings.semantic_threshold,
        settings.semantic_unsure_create,
        settings.semantic_unsure_supersede,
        settings.semantic_shape_penalty,
    )


def _table(scores: dict[str, list[PairScore]], bounds: Bounds) -> dict[str, dict[str, Rates]]:
    return {
        split: {
            action: rates([p for p in pairs if p.action == action], bounds)
            for action in ("supersede", "create")
        }
        for split, pairs in scores.items()
        if any(p.action == "supersede" for p in pairs)
    }


def run_calibration(settings: Settings, as_json: bool = False) -> int:
    """Choose the bounds on ``tune`` and print the rates of chosen and configured bounds."""
    scores = _scores(settings)
    chosen = choose_bounds(scores["tune"])  # tune only: holdout and blind are for checking
    configured = configured_bounds(settings)
    doc: dict[str, object] = {
        "embedder": settings.embedder,
        "model": settings.embedding_model,
        "chosen": asdict(chosen),
        "configured": asdict(configured),
        "at_chosen": _table(scores, chosen),
        "at_configured": _table(scores, configured),
    }
    if as_json:
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    print(f"embedder {settings.embedder} ({settings.embedding_model})")
    for title, b in (("chosen on tune", chosen), ("configured", configured)):
        print(
            f"\n{title}: same <= {b.same:.2f}, unsure <= {b.unsure_create:.2f} (create) / "
            f"{b.unsure_supersede:.2f} (supersede), disjoint-shape penalty "
            f"{b.disjoint_shape_penalty:.2f}"
        )
        print(
            f"  {'split':<8} {'pairs':<14} {'leakage':>8} {'flagged':>8} {'false sup':>10} "
            f"{'false conf':>10}"
        )
        for split, by_action in _table(scores, b).items():
            for action, r in by_action.items():
                if not r.pairs_same + r.pairs_different:
                    continue
                label = f"{action} {r.pairs_same}/{r.pairs_different}"
                print(
                    f"  {split:<8} {label:<14} {r.leakage:>8.1%} {r.flagged:>8.1%} "
                    f"{r.false_supersede:>10.1%} {r.false_conflict:>10.1%}"
                )
    print(
        "\nleakage: same attribute, both facts stay active; flagged: same attribute, asked; "
        "false sup: different attributes, one retired; false conf: different, asked."
    )
    return 0


def cmd_calibrate(args: argparse.Namespace, s: Settings) -> int:
    """Calibrate the semantic threshold (``--json`` for the document)."""
    return run_calibration(s, as_json=args.json)


def register(sub: Subparsers) -> None:
    """Add ``calibrate``."""
    cal = sub.add_parser("calibrate", help="calibrate the semantic threshold")
    cal.add_argument("--json", action="store_true")
    cal.set_defaults(fn=cmd_calibrate)
