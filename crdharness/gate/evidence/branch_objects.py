"""Objects for the paths the coverage objects were built to hold but were sent without.

A CRD's rules may let one object hold only one branch of a choice (exactly one of, at most
one of, a discriminator's ternary): the coverage object packs every branch, and repair
(``run.screening``) keeps one and drops the others, so their paths were never written — on a
single-version CRD, which has no round trips to try them again, never at all. What the
accepted objects lack is packed again (``coverage_objects.packed``: each round's objects are
repaired to another branch), and what is still missing after that is built one path per
object. Both are bounded: a CRD of a hundred exclusive choices costs tens of objects more,
not thousands; a CRD whose coverage objects went through whole costs nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable

from crdharness.gate.evidence import coverage, coverage_objects, objects

REPACKS = 3  # rounds of the missing paths packed again
SINGLES = 24  # then objects of one missing path each, per version


def unheld(schema: dict, built: Iterable[dict], sent: Iterable[dict]) -> set[str]:
    """The paths the coverage bodies ``built`` hold and no body the server accepted
    (``sent``, as repaired) holds."""
    wanted: set[str] = set()
    for body in built:
        wanted |= coverage.held(schema, objects.intent(body))
    for body in sent:
        wanted -= coverage.held(schema, body)
    return wanted


def more(schema: dict, missing: set[str], round_: int) -> list[dict]:
    """The bodies of round ``round_`` (from 0) for the ``missing`` paths: packed for the
    first ``REPACKS`` rounds, then one path each (up to ``SINGLES``); none after that."""
    marked = {objects.METADATA: copy.deepcopy(coverage_objects.MARK)}
    if round_ < REPACKS:
        return [{**b, **marked} for b in coverage_objects.packed(schema, only=missing)]
    if round_ > REPACKS:
        return []
    values = {
        leaf.path: next((v for v in leaf.values if coverage.holds_data(leaf.schema, v)), None)
        for leaf in coverage.leaves(schema)
        if leaf.path in missing
    }
    return [
        {**coverage_objects.single(schema, path, value), **marked}
        for path, value in sorted(values.items())[:SINGLES]
        if value is not None
    ]


def fill(
    schema: dict,
    built: list[dict],
    sent: Callable[[], list[dict]],
    write: Callable[[list[dict]], object],
) -> None:
    """Write (``write``) more bodies until every path of the coverage bodies ``built`` is
    held by an accepted one (``sent``: the accepted bodies so far, as repaired), or the
    rounds are spent. A packed round that keeps none of the missing paths goes straight to
    one path per object: the same rule would drop them again."""
    missing = unheld(schema, built, sent())
    round_ = 0
    while missing and round_ <= REPACKS:
        write(more(schema, missing, round_))
        left = unheld(schema, built, sent())
        stuck = len(left) == len(missing) and round_ < REPACKS
        round_, missing = (REPACKS if stuck else round_ + 1), left
