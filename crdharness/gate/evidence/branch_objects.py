"""Objects for the paths no accepted object holds yet: one per branch of a choice.

A CRD's rules may let one object hold only one branch of a choice (exactly one of, at most
one of, a discriminator's ternary, a ``oneOf``, ``maxProperties: 1``): the coverage object
packs every branch, and repair (``run.screening``) keeps one and drops the others, so their
paths were never written — on a single-version CRD, which has no round trips to try them
again, never at all.

What repair dropped is read from the accepted objects: a missing path's *branch* is its
shortest prefix no accepted object has (``spec.extAuth.http`` where ``spec.extAuth`` was
kept with ``grpc``). Branches under the same node are the choice's alternatives, so each
goes in a different object; branches under different nodes share one (the first branch of
every choice in one object, the second of every choice in the next, ...). A round's
objects are as many as the widest choice, and each round goes one choice deeper. A branch
whose object kept none of its paths is split into its children the next round (the rule
that dropped it is then one level down), down to one leaf.

Bounded twice: ``ROUNDS`` rounds (choices nested that deep), and half an object per
declared path in all (``budget``), so a CRD whose coverage objects went through whole
costs nothing. Paths the coverage objects could not reach (``coverage_objects``' cap on
objects: 43 providers with ``maxProperties: 1``) are sought too.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable

from crdharness.gate.evidence import choices, coverage, coverage_objects, objects

ROUNDS = 12  # choices nested this deep, or branches split this many times
SMALLEST_BUDGET = 8  # extra objects a small schema may still take
# paths one object is built to hold at most: repair's search is bounded, and an object
# with hundreds of paths and as many rules to meet loses whole subtrees to its pruning
# (envoy SecurityPolicy: one of 302 paths kept 89)
MOST_PATHS = 48


def wanted(schema: dict, built: Iterable[dict]) -> set[str]:
    """The paths some object could hold: those the coverage bodies ``built`` hold, and
    every declared leaf with a value that holds data."""
    found = {
        leaf.path
        for leaf in coverage.leaves(schema)
        if any(coverage.holds_data(leaf.schema, v) for v in leaf.values)
    }
    for body in built:
        found |= coverage.held(schema, objects.intent(body))
    return found


def unheld(schema: dict, built: Iterable[dict], sent: Iterable[dict]) -> set[str]:
    """The ``wanted`` paths no body the server accepted (``sent``, as repaired) holds."""
    missing = wanted(schema, built)
    for body in sent:
        missing -= coverage.held(schema, body)
    return missing


def budget(schema: dict) -> int:
    """How many objects ``fill`` may write for ``schema``'s missing paths."""
    return max(SMALLEST_BUDGET, len(coverage.declared(schema)) // 2)


def steps(path: str) -> list[str]:
    return re.findall(r"[^.\[\]]+|\[\]", path)


def spelt(parts: list[str]) -> str:
    """``steps`` joined back as ``coverage`` spells paths."""
    path = ""
    for part in parts:
        path = path + part if part == "[]" else coverage.join(path, part)
    return path


def branches(missing: set[str], have: set[str], split: set[str]) -> dict[str, set[str]]:
    """The ``missing`` paths by branch: the shortest prefix of each that no accepted object
    has (``have``), or the next one below, where that branch was ``split``."""
    found: dict[str, set[str]] = {}
    for path in missing:
        parts = steps(path)
        cut = next((i for i in range(1, len(parts) + 1) if spelt(parts[:i]) not in have), 0)
        cut = cut or len(parts)
        while cut < len(parts) and spelt(parts[:cut]) in split:
            cut += 1
        found.setdefault(spelt(parts[:cut]), set()).add(path)
    return found


def taken(branch: str, apart: dict[str, set[str] | None]) -> dict[str, str]:
    """The field ``branch`` takes at each choice on its way (``apart``: a choice's node ->
    the fields it names, None for all)."""
    parts = steps(branch)
    found = {}
    for i in range(len(parts)):
        node = spelt(parts[:i])
        fields = apart.get(node, set())
        if fields is None or parts[i] in fields:
            found[node] = parts[i]
    return found


def slotted(found: dict[str, set[str]], apart: dict[str, set[str] | None]) -> list[set[str]]:
    """The paths of each object of a round: branches together unless they take different
    fields of one choice (a choice's alternatives go in different objects) or make it hold
    more than ``MOST_PATHS``, the widest branches placed first."""
    slots: list[tuple[dict[str, str], set[str]]] = []
    for branch in sorted(found, key=lambda b: (-len(found[b]), b)):
        ways = taken(branch, apart)
        for chosen, paths in slots:
            fits = len(paths) + len(found[branch]) <= MOST_PATHS
            if fits and all(chosen.get(node, field) == field for node, field in ways.items()):
                chosen.update(ways)
                paths |= found[branch]
                break
        else:
            slots.append((dict(ways), set(found[branch])))
    return [paths for _, paths in slots]


def more(schema: dict, paths: set[str]) -> list[dict]:
    """Bodies holding ``paths`` (and what the schema requires), marked as coverage objects."""
    marked = {objects.METADATA: copy.deepcopy(coverage_objects.MARK)}
    return [{**b, **marked} for b in coverage_objects.packed(schema, paths)]


def fill(
    schema: dict,
    built: list[dict],
    sent: Callable[[], list[dict]],
    write: Callable[[list[dict]], object],
) -> None:
    """Write (``write``) more bodies until every ``wanted`` path is held by an accepted one
    (``sent``: the accepted bodies so far, as repaired), or the ``ROUNDS`` or the
    ``budget`` are spent."""
    missing = unheld(schema, built, sent())
    left_to_write = budget(schema)
    split: set[str] = set()
    apart: dict[str, set[str] | None] = {**choices.of(schema)}
    alone: set[str] = set()
    hopeless: set[str] = set()
    for _ in range(ROUNDS):
        if not missing or left_to_write <= 0:
            return
        have = set().union(set(), *(coverage.present(schema, body) for body in sent()))
        found = branches(missing, have, split)
        groups = slotted({b: p for b, p in found.items() if b not in alone}, apart)
        groups += [found[b] for b in sorted(found) if b in alone]
        bodies = [b for paths in groups for b in more(schema, paths)][:left_to_write]
        if not bodies:
            return
        left_to_write -= len(bodies)
        write(bodies)
        left = unheld(schema, built, sent())
        for branch, paths in found.items():
            if paths > left & paths:
                continue
            # none kept: tried again in an object of its own (another branch beside it may
            # have spoilt it); kept by none alone either, a leaf is given up (it would spoil
            # the objects it joins) and a subtree split, its fields apart (the rule that
            # drops it lies inside)
            if branch not in alone:
                alone.add(branch)
            elif branch in paths:
                hopeless |= paths
            else:
                split.add(branch)
                apart[branch] = None
        missing = left - hopeless
