"""One object's round trip, step by step: the differences each step found (written and read
back at A, read at B, back at A), reported together as one failure (a difference at one step
does not end the round trip: a loss on the way back would otherwise hide behind one at B),
what the write at A lost and what reads differently at B, and which paths an object's failed
round trip judged."""

from __future__ import annotations

from crdharness.gate import diff
from crdharness.gate.evidence import coverage, objects, pruning, schemas
from crdharness.gate.given.manifests import Release
from crdharness.gate.results import DataChanged, NotConvertible, RoundTripFailure


class Steps:
    """The differences each step of one object's round trip found, reported together as one
    failure: each step's headline with its own paths, the paths of all of them."""

    def __init__(self, schema: dict) -> None:
        self.schema = schema  # A's body schema: the fields it declares are named first
        self.headlines: list[str] = []
        self.details: list[str] = []
        self.found: list[diff.Difference] = []
        self.named: set[str] = set()
        self.at_b: set[str] = set()  # schema paths read differently at B (not only back at A)

    def add(self, headline: str, found: list, detail: str = "", at_b: bool = False) -> None:
        found = sorted(found, key=lambda d: coverage.headline_order(self.schema, d.path))
        self.headlines.append(
            headline.format(paths=", ".join(dict.fromkeys(d.path for d in found)))
        )
        self.details += [detail + d.describe() for d in found]
        self.found += found
        self.named |= {d.path for d in found}
        if at_b:
            self.at_b |= {diff.schema_path(d.path) for d in found}

    def failure(self, shown: list) -> DataChanged | None:
        if not self.found:
            return None
        failure = DataChanged(
            "; ".join(self.headlines),
            self.details,
            shown,
            frozenset(diff.schema_path(d.path) for d in self.found),
        )
        failure.lost = frozenset(diff.schema_path(d.path) for d in self.found if d.change == "lost")
        failure.at_b = frozenset(self.at_b)
        return failure

    def or_else(self, failure: NotConvertible) -> RoundTripFailure:
        """A step the server refused ends the round trip: the data already lost before it
        is the finding to show first (its paths are what a debt is known by); the refusal
        is added to its details."""
        lost = self.failure(failure.shown)
        if lost is None:
            return failure
        lost.details.append(f"then {failure.evidence}")
        lost.refusal = failure
        return lost


def judged_with(held: set[str], failed: frozenset[str]) -> set[str]:
    """The held leaf paths a round trip that failed on ``failed`` (paths as differences
    spell them) judged: a failing path itself, and a leaf with a failure inside it (a key of
    a preserve-unknown subtree: the failure is on that leaf's data). A path strictly below
    a failing one is not: what holds it was lost whole (an item the webhook dropped for an
    empty key), so what the webhook does with it is unknown (``below_a_loss``)."""
    paths = [diff.schema_path(p) for p in failed]
    return {p for p in held if any(p == f or diff.at_or_under(f, p) for f in paths)}


def below_a_loss(held: set[str], failed: frozenset[str]) -> set[str]:
    """The held paths strictly below a failing path: lost with their parent, not judged."""
    return set(parents_lost(held, failed))


def parents_lost(held: set[str], failed: frozenset[str]) -> dict[str, str]:
    """``below_a_loss``, each path with the failing path above it (the nearest)."""
    paths = sorted({diff.schema_path(p) for p in failed}, key=len, reverse=True)
    found: dict[str, str] = {}
    for path in held:
        parent = next((f for f in paths if path != f and diff.at_or_under(path, f)), None)
        if parent is not None:
            found[path] = parent
    return found


def lost_beyond_b(held: set[str], lost: frozenset[str], b_schema: dict, b: str) -> dict[str, str]:
    """Of the held paths below a field lost whole (``below_a_loss``), those whose lost field
    B's schema does not declare at all, each with why it is judged: no value of its own could
    have kept it at B, where the API server prunes the field whatever it holds (only the
    webhook's own annotation could carry it), so the field's loss, reported, is its loss too.
    A field B does declare may be dropped for one value only (an item with an empty key), so
    what is below it stays not judged (issue 43)."""
    gone = fields_gone(lost, b_schema)
    found: dict[str, str] = {}
    for path in sorted(held):
        field = next((f for f in gone if path != f and diff.at_or_under(path, f)), None)
        if field is not None:
            found[path] = f"lost whole with {field}, which {b} does not declare"
    return found


def fields_gone(lost: frozenset[str], b_schema: dict) -> list[str]:
    """Of the fields lost whole (``lost``), those B's schema does not declare at all: the
    API server prunes them at B whatever they hold."""
    return sorted(f for f in lost if coverage.node_at(b_schema, f) is None)


def lost_on_write(
    entry: dict, a: str, body: dict, metadata: dict, created: dict
) -> tuple[list[diff.Difference], list[str]]:
    """What the write of ``body`` (with ``metadata``) at A lost, by the server's answer
    ``created``: fields that appear (defaults) are not losses (nor can a dry-run create
    serve as the reference: it converts to the storage version too, and hides the loss). A
    loss at or under a path A's schema prunes is the gate's own request's: a note (the
    second list), never the webhook's."""
    wanted = {**objects.intent(body), "metadata": metadata}
    kept = {k: v for k, v in created.items() if k in wanted}
    kept["metadata"] = {k: v for k, v in created["metadata"].items() if k in metadata}
    lost = [d for d in diff.differences(wanted, kept) if d.change != "added"]
    return pruning.not_the_webhooks(lost, pruning.pruned(entry, objects.intent(body)), a)


def read_differently(release: Release, crd: str, a: str, b: str, at_a: dict, at_b: dict) -> list:
    """What reads differently at B than at A, at the fields both versions declare alike."""
    shared = schemas.shared_fields(release, crd, a, b)
    there = diff.leaves(at_b)
    found = []
    for path, value in diff.leaves(at_a).items():
        if path.startswith("metadata.") or diff.schema_path(path) not in shared:
            continue
        if path not in there:
            found.append(diff.Difference(path, "lost", value))
        elif not diff.same(value, there[path]):
            found.append(diff.Difference(path, "changed", value, there[path]))
    return found
