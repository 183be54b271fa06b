"""Schema path coverage of one version pair's round trips: the coverage objects
(``coverage_objects``) go through the round trip before any random draw; a path whose
objects the server refused (or the webhook failed to convert), or whose round trip
stopped at another path's failure, is tried on its own, with other values, on the user's
samples; and at the end every declared leaf path of A's schema is either held (with data) by an
object that went through the round trip, or named with why it is not. Below every path,
a pair that found nothing is "not proven", never a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, field
from types import MappingProxyType

from crdharness.gate import concurrency, diff
from crdharness.gate.api import Answer
from crdharness.gate.checks.pair_record import PairRecord
from crdharness.gate.evidence import (
    coverage,
    coverage_objects,
    drawn_bodies,
    objects,
    refusal,
    rule_literals,
    written_back,
)
from crdharness.gate.results import CheckResult, NotConvertible, RoundTripFailure
from crdharness.gate.run.context import GateContext

ALTERNATIVES = 3  # values tried per path whose coverage object the server refused
# objects per version pair spent on such paths beyond the first one each (its own value)
RETRIES = 60
# Rounds of objects packed again for the paths a failed round trip stopped short of: a
# group that makes no progress is halved each round, so 12 rounds narrow 4,096 paths to one.
REPACKS = 12
SHOWN = 8  # uncovered paths named in a one-line evidence
STOPPED = (
    "its objects' round trips stopped at a failure on another path first (fix that, or give a "
    "sample holding it)"
)

LOST_PARENT = "its objects lost "  # how the reason below a field lost whole begins

# What a path not held is behind (``Coverage.behind_a_failure``): the failure its objects met.
BEHIND_STOPPED = "a round trip that failed on another path first"
BEHIND_LOST_PARENT = "a round trip that lost a field above it whole"
BEHIND_NOT_CONVERTIBLE = "valid at A, but not convertible"


# (body, refusals to fill) -> a failure, with a record of its own
Attempt = Callable[[dict, PairRecord, list[Answer]], RoundTripFailure | None]


@dataclass
class Coverage:
    """Declared leaf paths of A's schema, and why each one not held is not."""

    declared: list[str]
    uncovered: dict[str, str] = field(default_factory=dict)  # path -> reason
    # judged without going round: below a field lost whole that B does not declare
    lost_whole: dict[str, str] = field(default_factory=dict)  # path -> why
    # not held only because its objects met a failure first: a round trip stopped at another
    # path's, a field above it lost whole, or every object holding it was valid at A and
    # failed its conversion (a convertibility failure). Where those failures are all an
    # earlier release's, so are these paths (``checks.debt``). Path -> which (BEHIND_*).
    behind_a_failure: dict[str, str] = field(default_factory=dict)

    @property
    def exercised(self) -> int:
        return len(self.declared) - len(self.uncovered)

    def figure(self) -> str:
        return f"schema paths {self.exercised}/{len(self.declared)}"

    def whole(self) -> str:
        """The paths counted only as lost with a field the other version lacks, said."""
        if not self.lost_whole:
            return ""
        return (
            f" ({len(self.lost_whole)} of them only lost whole with a field the other version "
            "does not declare, that field's loss named above)"
        )

    def named(self) -> str:
        shown = [f"{p} ({why})" for p, why in list(self.uncovered.items())[:SHOWN]]
        more = len(self.uncovered) - SHOWN
        return "; ".join(shown) + (f"; and {more} more (see the report)" if more > 0 else "")

    def as_json(self) -> dict:
        found = {
            "exercised": self.exercised,
            "declared": len(self.declared),
            "uncovered": self.uncovered,
        }
        if self.lost_whole:  # only where there are some: report.json as before otherwise
            found["lost_whole"] = self.lost_whole
        if self.behind_a_failure:
            found["behind_a_failure"] = dict(sorted(self.behind_a_failure.items()))
        return found


def exercise(
    ctx: GateContext,
    entry: dict,
    samples: list[dict],
    attempt: Attempt,
    seen: PairRecord,
    other: dict | None = None,
) -> tuple[list[RoundTripFailure], dict[str, str], set[str]]:
    """Round-trip the coverage objects of ``entry``'s version (``concurrency`` at once);
    pack again what a round trip that failed on another path stopped short of; then retry
    what the server refused (or failed to convert), and what is still not held, one path
    at a time. The failures found, in order, the refused paths with who refused them and
    the server's message, and those of them whose objects were valid at A but could not be
    converted (behind that convertibility failure)."""
    schema = objects.body_schema(entry)
    found: list[RoundTripFailure] = []
    refused: dict[str, str] = {}
    batch = coverage_objects.bodies(entry)
    outcomes = concurrency.each(lambda b: _one(attempt, b), batch, ctx.config.concurrency)
    retry: list[str] = []
    refused_objects: set[str] = set()  # paths held by an object the server refused
    for body, (failure, record, answers) in zip(batch, outcomes, strict=True):
        seen.add(record)
        if failure is not None:
            found.append(failure)
        if answers:
            refused_objects |= coverage.held(schema, body)
            retry += [p for p in sorted(coverage.held(schema, body)) if p not in retry]
        # A round trip that failed on one path stopped before the others were judged: each
        # of them again on its own (a loss behind the first one shows; the path is held).
        retry += [p for p in sorted(record.stopped) if p not in retry]
    # A path built into an object that was sent without it (repaired against the CRD's
    # rules: ``run.screening``) is tried again like one stopped short of.
    for body in batch:
        retry += [p for p in sorted(coverage.held(schema, body)) if p not in retry]
    retry = [p for p in retry if p not in seen.held]
    _repack(ctx, attempt, schema, [p for p in retry if p not in refused_objects], seen, found)
    # A path lost whole with a field B does not declare is judged (``lost_beyond_b``): no
    # value of its own keeps that field at B, so no object more is sent for it.
    retry = [p for p in retry if p not in seen.held and p not in seen.lost_whole]
    unconverted: set[str] = set()
    if not retry:
        return found, refused, unconverted
    leaves = {leaf.path: leaf for leaf in coverage.leaves(schema)}
    bases: list[dict | None] = [*samples[:2]] or [None]
    # A path only stopped short of is tried first with nothing of the samples (whose own
    # fields, or labels and annotations, may be what the webhook loses), then on them.
    alone: list[dict | None] = [None, *samples[:2]]
    # Built here, on one thread (hypothesis draws the alternatives); written many at once.
    # The rules of ``other`` (B's version) too: an object valid at A is written back at B.
    also = objects.body_schema(other) if other is not None else None
    plans = {
        path: _plan(schema, path, leaves[path], bases if path in refused_objects else alone, also)
        for path in retry
    }
    # First each path's first object (its own value, alone: most paths are refused only
    # beside another path's value); then the budget, spread over the paths still refused.
    first = _round(ctx, attempt, {p: plan[:1] for p, (plan, _) in plans.items()}, seen, found)
    left = [p for p in retry if p not in seen.held and first[p][0]]
    budget = max(RETRIES // max(len(left), 1), 1)
    rest = {p: plans[p][0][1 : 1 + budget + plans[p][1]] for p in left}
    # A path whose first object went round but stopped at another path's failure (nothing
    # refused: its other values would stop the same way), not judged with a field lost whole,
    # gets one object more: on the least B requires, where B's schema asks for more than A's.
    least = written_back.least_for(also, schema) if also is not None else {}
    for p in retry:
        if p in seen.held or first[p][0] or p in seen.lost_whole or not least:
            continue
        values = _alternatives(leaves[p])
        based = coverage_objects.single(schema, p, values[0], least) if values else None
        if based is not None and based != plans[p][0][0]:
            rest[p] = [based]
    second = _round(ctx, attempt, rest, seen, found)
    for path in retry:
        message, tried, failed_conversion, last_unconverted = first[path]
        if path in second and second[path][0]:
            message, last_unconverted = second[path][0], second[path][3]
        if path in second:
            tried += second[path][1]
            failed_conversion = failed_conversion or second[path][2]
        if path not in seen.held and message:
            refused[path] = refusal.reason(schema, message, tried, last_unconverted)
            if failed_conversion:
                unconverted.add(path)
    return found, refused, unconverted


def _repack(
    ctx: GateContext,
    attempt: Attempt,
    schema: dict,
    stopped: list[str],
    seen: PairRecord,
    found: list[RoundTripFailure],
) -> None:
    """The paths round trips stopped short of, packed again (many per object, none of the
    paths already held, no labels or annotations: the webhook may lose those), for a few
    rounds: each round's failures are held, what they stop is packed again. A group whose
    objects judged none of its paths (a refusal that names no field, as a CEL rule at
    ``spec`` that cannot evaluate one of them) is halved, and each half packed on its own:
    the paths beside the one that fails go round in a few objects, not one each (seen:
    upjet's CRDs, 1,100 objects of one path for six of them). What is left after the last
    round, and single paths that still fail, are tried one path at a time."""
    groups = [stopped]
    for _ in range(REPACKS):
        groups = [g for g in ([p for p in group if _open(p, seen)] for group in groups) if g]
        if not groups:
            return
        sent = [(i, body) for i, g in enumerate(groups) for body in _packed(schema, g)]
        outcomes = concurrency.each(lambda s: _one(attempt, s[1]), sent, ctx.config.concurrency)
        judged: set[int] = set()
        for (i, _), (failure, record, _) in zip(sent, outcomes, strict=True):
            if record.held & set(groups[i]):
                judged.add(i)
            seen.add(record)
            if failure is not None:
                found.append(failure)
        groups = [
            part
            for i, g in enumerate(groups)
            for part in ([g] if i in judged else _halves([p for p in g if _open(p, seen)]))
        ]


def _open(path: str, seen: PairRecord) -> bool:
    """Not yet held, nor judged lost with a field B does not declare, nor below a field an
    object lost whole (packed again, it is lost again: its own values are tried alone)."""
    return path not in seen.held and path not in seen.lost_whole and path not in seen.parents_lost


def _packed(schema: dict, group: list[str]) -> list[dict]:
    return coverage_objects.packed(schema, only=set(group))


def _halves(group: list[str]) -> list[list[str]]:
    """A group that made no progress, in two; a single path is left to the one-path tries
    (its first is the same object, and its other values follow there)."""
    middle = len(group) // 2
    return [half for half in (group[:middle], group[middle:]) if len(half) > 1]


def _round(
    ctx: GateContext,
    attempt: Attempt,
    plans: dict[str, list[dict]],
    seen: PairRecord,
    found: list[RoundTripFailure],
) -> dict[str, tuple[str, int, bool, bool]]:
    """Each path's objects, one after another until one is not refused (paths many at
    once); per path, the last refusal's message, how many objects were tried, whether
    one of them was valid at A but could not be converted, and whether the last was."""
    paths = list(plans)
    tries = concurrency.each(lambda p: _alone(attempt, plans[p]), paths, ctx.config.concurrency)
    out: dict[str, tuple[str, int, bool, bool]] = {}
    for path, (records, failures, message, tried, last) in zip(paths, tries, strict=True):
        for record in records:
            seen.add(record)
        found += failures
        unconverted = any(isinstance(f, NotConvertible) for f in failures)
        out[path] = (message, tried, unconverted, last)
    return out


def _plan(
    schema: dict,
    path: str,
    leaf: coverage.Leaf,
    bases: list[dict | None],
    other: dict | None = None,
) -> tuple[list[dict], int]:
    """The objects tried for one path, in order: its first value, then that value with the
    fields the rules above it select set to what they ask (``rule_literals``, each
    combination: tried until the server accepts one), at A and then at ``other`` (B's
    schema, where the object read is written back: a rule only B has), on the least B's
    schema requires, then its other values; and how many meet a rule or B's schema (they
    are tried beside the budget, and also where the first object only stopped short)."""
    values = _alternatives(leaf)
    plain = [coverage_objects.single(schema, path, v, base) for v in values for base in bases]
    wanted = rule_literals.assignments(schema, path)
    if other is not None:
        wanted += [a for a in rule_literals.assignments(other, path) if a not in wanted]
    met = [
        rule_literals.applied(body, assignment)
        for assignment in wanted
        for body in plain[: len(bases)]
    ]
    if other is not None and values:
        # Also on the least B requires (of fields A declares): what is read at B is written
        # back there, and B may require what A leaves out (a ``spec``, a ``minProperties``).
        least = coverage_objects.single(
            schema, path, values[0], written_back.least_for(other, schema)
        )
        met += [least] if least not in plain and least not in met else []
    return plain[: len(bases)] + met + plain[len(bases) :], len(met)


def _one(attempt: Attempt, body: dict):
    record: PairRecord = PairRecord()
    answers: list[Answer] = []
    failure = attempt(body, record, answers)
    return failure, record, answers


def _alone(attempt: Attempt, plan: list[dict]):
    """One path's objects (its values, each on the user's samples or on the least the
    schema requires), one after another until the server accepts one and the webhook
    converts it (a webhook failing on one value, a Go type's parse error, may take
    another)."""
    records: list[PairRecord] = []
    failures: list[RoundTripFailure] = []
    message, tried, unconverted = "", 0, False
    for body in plan:
        tried += 1
        failure, record, answers = _one(attempt, body)
        records.append(record)
        if failure is not None:
            failures.append(failure)
        if isinstance(failure, NotConvertible):
            message, unconverted = failure.evidence, True
            continue
        if not answers:
            break
        message, unconverted = answers[-1].message, False
    return records, failures, message, tried, unconverted


def _alternatives(leaf: coverage.Leaf) -> list:
    """The leaf's own values that hold data, then (a plain string) the texts the Go types
    behind such a field parse, then values drawn from its schema."""
    own = [v for v in leaf.values if coverage.holds_data(leaf.schema, v)]
    texts = coverage.go_texts(leaf.schema)
    drawn = [
        v
        for v in drawn_bodies.values(leaf.schema, ALTERNATIVES * 3, 0)  # drawn once per schema
        if coverage.holds_data(leaf.schema, v)
    ]
    values: list = []
    for v in own + texts + drawn:
        if v not in values and len(values) < ALTERNATIVES + len(texts):
            values.append(v)
    return values


def judge(
    entry: dict,
    held: set[str],
    refused: dict[str, str],
    stopped: Set[str] = frozenset(),
    lost_whole: Mapping[str, str] = MappingProxyType({}),
    parents: Mapping[str, str] = MappingProxyType({}),
    unconverted: Set[str] = frozenset(),
    gone: Mapping[str, str] = MappingProxyType({}),
) -> Coverage:
    """Every declared leaf path of ``entry``'s version, and for each one ``held`` lacks,
    why: lost whole with a field the other version does not declare (``lost_whole``: judged,
    the field's loss is its loss), the builder's reason, the server's refusal (or the
    webhook's failure) of every object tried for it alone, a round trip that stopped at
    another path's failure (``stopped``), or none found."""
    found = Coverage(coverage.declared(objects.body_schema(entry)))
    pruned_at_b = sorted(gone)
    for leaf in coverage.leaves(objects.body_schema(entry)):
        if leaf.path in held:
            continue
        if leaf.path in lost_whole:
            found.lost_whole[leaf.path] = lost_whole[leaf.path]
            continue
        above = next((f for f in pruned_at_b if diff.at_or_under(leaf.path, f)), None)
        if above is not None and leaf.path != above:
            # Below a field B does not declare, which round trips lost whole under strategy
            # None: the API server prunes it at B whatever it holds (a choice's other branch,
            # which no object could hold beside the one built, included).
            found.lost_whole[leaf.path] = (
                f"lost whole with {above}, which {gone[above]} does not declare (no object "
                f"held this path itself: that field is pruned at {gone[above]} whatever it "
                "holds)"
            )
            continue
        if leaf.path in refused:
            why = refused[leaf.path]
            if leaf.path in unconverted:
                found.behind_a_failure[leaf.path] = BEHIND_NOT_CONVERTIBLE
        elif leaf.path in parents:
            # The "other path" is its own parent: say which, and what would show it.
            field = parents[leaf.path]
            why = (
                f"{LOST_PARENT}{field} whole first (named above): it shows once the "
                f"webhook keeps {field}, or with a sample it keeps {field} for"
            )
            found.behind_a_failure[leaf.path] = BEHIND_LOST_PARENT
        elif leaf.path in stopped:
            why = STOPPED
            found.behind_a_failure[leaf.path] = BEHIND_STOPPED
        elif leaf.reason:
            why = leaf.reason
        elif not any(coverage.holds_data(leaf.schema, v) for v in leaf.values):
            why = "the schema allows no value here but a zero or empty one, which reads as absent"
        else:
            why = "no object holding it reached the round trip (built, but not created)"
        found.uncovered[leaf.path] = why
    return found


def settle(result: CheckResult, found: Coverage, a: str) -> None:
    """The pair's coverage on its round-trip result: in its evidence when it passed, and a
    pass below every path is "not proven", naming the paths and why."""
    result.coverage = found.as_json()
    if result.passed and found.uncovered:
        result.passed = None
        result.unproven_pass = result.evidence
        result.evidence = (
            f"not proven: {found.figure()} at {a} went through the round trip{found.whole()}; "
            f"not held: {found.named()}"
        )
        result.details += [f"not held: {p}: {why}" for p, why in found.uncovered.items()]
    elif result.passed:
        result.evidence += f"; {found.figure()} held{found.whole()}"
    result.details += [
        f"judged without going round: {p}: {why}" for p, why in found.lost_whole.items()
    ]
