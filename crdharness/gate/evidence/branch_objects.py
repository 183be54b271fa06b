"""Objects for the paths the coverage objects were built to hold but were sent without.

A CRD's rules may let one object hold only one branch of a choice (exactly one of, at most
one of, a discriminator's ternary): the coverage object packs every branch, and repair
(``run.screening``) keeps one and drops the others, so their paths were never written — on a
single-version CRD, which has no round trips to try them again, never at all. What the
accepted objects lack is packed again by subtree, one level deeper each round (two branches
of a choice are two subtrees: ``spec.extAuth`` and ``spec.jwt``, then ``spec.extAuth.grpc``
and ``spec.extAuth.http``), and what is still missing after that is built one path per
object. Bounded by the schema's size: half an object per declared path at most (measured on
a 617-path CRD of many exclusive choices: 7 rounds, 264 objects, 71 -> 589 paths held), so
a CRD whose coverage objects went through whole costs nothing.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable

from crdharness.gate.evidence import coverage, coverage_objects, objects

REPACKS = 6  # rounds packed by subtree (depths 2 to 7), then one round of one path each
SMALLEST_BUDGET = 8  # extra objects a small schema may still take


def unheld(schema: dict, built: Iterable[dict], sent: Iterable[dict]) -> set[str]:
    """The paths the coverage bodies ``built`` hold and no body the server accepted
    (``sent``, as repaired) holds."""
    wanted: set[str] = set()
    for body in built:
        wanted |= coverage.held(schema, objects.intent(body))
    for body in sent:
        wanted -= coverage.held(schema, body)
    return wanted


def budget(schema: dict) -> int:
    """How many objects ``fill`` may write for ``schema``'s missing paths."""
    return max(SMALLEST_BUDGET, len(coverage.declared(schema)) // 2)


def more(schema: dict, missing: set[str], round_: int) -> list[dict]:
    """The bodies of round ``round_`` (from 0) for the ``missing`` paths: packed by subtree
    for the first ``REPACKS`` rounds, then one path each; none after that."""
    marked = {objects.METADATA: copy.deepcopy(coverage_objects.MARK)}
    if round_ < REPACKS:
        groups: dict[str, set[str]] = {}
        for path in sorted(missing):
            groups.setdefault(_prefix(path, round_ + 2), set()).add(path)
        bodies = [b for group in groups.values() for b in coverage_objects.packed(schema, group)]
        return [{**b, **marked} for b in bodies]
    if round_ > REPACKS:
        return []
    values = {
        leaf.path: next((v for v in leaf.values if coverage.holds_data(leaf.schema, v)), None)
        for leaf in coverage.leaves(schema)
        if leaf.path in missing
    }
    return [
        {**coverage_objects.single(schema, path, value), **marked}
        for path, value in sorted(values.items())
        if value is not None
    ]


def _prefix(path: str, depth: int) -> str:
    """The first ``depth`` steps of ``path`` (a field, or ``[]``/``*`` into items)."""
    return ".".join(re.findall(r"[^.\[\]]+|\[\]", path)[:depth])


def fill(
    schema: dict,
    built: list[dict],
    sent: Callable[[], list[dict]],
    write: Callable[[list[dict]], object],
) -> None:
    """Write (``write``) more bodies until every path of the coverage bodies ``built`` is
    held by an accepted one (``sent``: the accepted bodies so far, as repaired), or the
    rounds or the ``budget`` are spent. A round that keeps none of the missing paths goes
    straight to one path per object: packed again, the same rule would drop them again."""
    missing = unheld(schema, built, sent())
    left_to_write = budget(schema)
    round_ = 0
    while missing and round_ <= REPACKS and left_to_write > 0:
        bodies = more(schema, missing, round_)[:left_to_write]
        left_to_write -= len(bodies)
        write(bodies)
        left = unheld(schema, built, sent())
        stuck = len(left) == len(missing) and round_ < REPACKS
        round_, missing = (REPACKS if stuck else round_ + 1), left
