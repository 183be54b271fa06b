"""What a gate check concludes: pass, fail or not provable here, with its evidence."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crdharness.gate import subjects

if TYPE_CHECKING:
    from crdharness.gate.api import Answer


@dataclass(frozen=True)
class Form:
    """What one failure of a check is, to know it again in another release: the (schema-spelt)
    paths it names, none when the check's subject is all it says (convertibility), and the
    version pair where the subject is a whole CRD (schemas-vs-strategy)."""

    paths: frozenset[str] = frozenset()
    pair: str = ""
    # Of ``paths``, those a round trip showed already on the read at B (what every client of
    # B reads), not only on the way back to A: owed only where the earlier release showed
    # them at B too (api-gateway 3.1.0 loses ``gateway`` at v2; 3.1.1 only on the way back).
    at_b: frozenset[str] = frozenset()


@dataclass(frozen=True)
class RefusedWrite:
    """A write the server refused (a 4xx), as ``evidence.hazard_errors`` matches a failure with a
    release's hazards: ``ratcheted`` for an update of an existing object (the server does not
    judge unchanged values again), not for a create."""

    ratcheted: bool
    message: str


@dataclass
class Found:
    """One failure of a check with its form: what ``checks.debt`` compares with the previous
    release's, and what is left of the check's result without the ones that are debt."""

    form: Form
    evidence: str
    details: list[str] = field(default_factory=list)
    objects: list[tuple[str, dict]] = field(default_factory=list)
    # The object that failed, as written at A (``same_write.key``): a
    # convertibility failure is the earlier release's debt when that release refused the
    # same write too (``checks.same_write``).
    written_as: str = ""
    refused: RefusedWrite | None = None  # the refused write a convertibility failure is


@dataclass
class Debt:
    """A failure of the candidate's own checks that the release before it has in the same
    form (``checks.debt``): that release's debt, listed apart, not the candidate's finding
    (unless ``debt: fail``)."""

    release: int  # 1-based: the release that already had it
    check: str
    subject: str
    form: Form
    evidence: str
    fails: bool = False  # `debt: fail` (or `strict`): it still fails the check
    # Known by its object, not its paths: the same write was refused under that release too.
    same_object: bool = False

    def as_json(self) -> dict:
        return {
            "release": self.release,
            "check": self.check,
            "subject": self.subject,
            "pair": self.form.pair,
            "paths": sorted(self.form.paths),
            "evidence": self.evidence,
            "fails": self.fails,
            **({"same_object": True} if self.same_object else {}),
        }

    def describe(self) -> str:
        where = " ".join(x for x in (self.form.pair, ", ".join(sorted(self.form.paths))) if x)
        return (
            f"{self.check} [{self.subject}]" + (f" {where}" if where else "") + f": {self.evidence}"
        )


@dataclass
class CheckResult:
    check: str  # one of subjects.CHECKS
    subject: str  # what it was about: "release 2", "release 1→2", "crontabs.example.com v1→v2"
    passed: bool | None = True  # None: cannot be proven on this cluster (say why in evidence)
    evidence: str = ""  # one line
    details: list[str] = field(default_factory=list)
    objects: list[tuple[str, dict]] = field(default_factory=list)  # (title, object) to show
    allowed: list[str] = field(default_factory=list)  # differences an `allow` entry excused
    normalised: list[str] = field(default_factory=list)  # {}, [], 0 read back absent, or back
    # Differences at A the webhook made by re-spelling (the object reads the same at B before
    # and after the round trip): both spellings, not findings unless ``strict``.
    respelt: list[str] = field(default_factory=list)
    # Annotations the webhook added (not on the object written) left at A after the round
    # trip: its bookkeeping, not a user's data (``annotation_objects``); findings under strict.
    own_annotations: list[str] = field(default_factory=list)
    # Fields the gate's own request lost (a version's schema prunes them), not the webhook.
    pruned: list[str] = field(default_factory=list)
    # Held at the other version only in the webhook's annotations: what a client reading
    # it does not see (``seen_at_b``); findings under strict.
    unseen_at_b: list[str] = field(default_factory=list)
    counts: dict[str, float] = field(default_factory=dict)  # objects, reviews, ms, s
    found: list[Found] = field(default_factory=list)  # its failures with their forms
    unexplained: bool = False  # a failure no ``found`` entry stands for: never debt
    # The lines ``fail`` was given (headlines and their details): what the failures say,
    # apart from notes a check adds to ``details`` (latency, what the server restores).
    failed: list[str] = field(default_factory=list)
    coverage: dict = field(default_factory=dict)  # schema path coverage (round trips)
    # A pass the coverage alone left "not proven" (paths no object held): its evidence then,
    # for ``checks.debt`` to give back where every such path is behind the earlier
    # release's debt (an unchanged CRD). Not stored: judged before the report is written.
    unproven_pass: str = ""

    @property
    def key(self) -> str:
        return subjects.key(self.check, self.subject)

    def fail(self, evidence: str, *details: str, found: Sequence[Found] = ()) -> CheckResult:
        """A failure; ``found``: the failures it is, with their forms (without it, the
        failure is not one ``checks.debt`` can know again)."""
        if self.passed is not False:  # keep the first failure as the headline
            self.evidence = evidence
        self.passed = False
        self.details += list(details)
        self.found += list(found)
        self.unexplained |= not found
        self.failed += [evidence, *details]
        return self

    def not_finished(self, cause: str, where: str) -> CheckResult:
        """The gate's own failure (a bug, a cluster gone) stopped this check: "not proven"
        with the cause, never a finding. What it had already found stays a finding."""
        line = f"the gate could not finish this check: {cause}"
        if self.passed is False:
            self.details += [f"(and then {line})", where]
        else:
            self.passed = None
            self.evidence = f"not proven: {line}"
            self.details += [where]
        return self

    def add(self, other: CheckResult) -> None:
        """What ``other`` found (one object's part of this check, judged beside others'),
        added as if found here: the first failure stays the headline."""
        if other.passed is False:
            said = len(self.failed)
            self.fail(other.evidence, *other.details, found=other.found)
            self.failed[said:] = other.failed or [other.evidence]  # not the notes it holds
            self.unexplained |= other.unexplained
        else:  # notes that are no finding (what an earlier release or the webhook did)
            self.details += [line for line in other.details if line not in self.details]
        self.objects += other.objects
        self.allowed += [note for note in other.allowed if note not in self.allowed]
        self.normalised += [note for note in other.normalised if note not in self.normalised]
        self.respelt += [note for note in other.respelt if note not in self.respelt]
        self.own_annotations += [n for n in other.own_annotations if n not in self.own_annotations]
        self.pruned += [note for note in other.pruned if note not in self.pruned]
        self.unseen_at_b += [n for n in other.unseen_at_b if n not in self.unseen_at_b]

    def part(self) -> CheckResult:
        """An empty result of the same check and subject, for one object's part of it."""
        return CheckResult(self.check, self.subject)

    @property
    def status(self) -> str:
        return {True: "pass", False: "FAIL", None: "not proven"}[self.passed]

    def as_json(self) -> dict:
        return {
            "check": self.check,
            "subject": self.subject,
            "status": self.status,
            "evidence": self.evidence,
            "details": self.details,
            "allowed": self.allowed,
            "normalised": self.normalised,
            **({"respelt": self.respelt} if self.respelt else {}),
            **({"own_annotations": self.own_annotations} if self.own_annotations else {}),
            **({"pruned": self.pruned} if self.pruned else {}),
            **({"unseen_at_b": self.unseen_at_b} if self.unseen_at_b else {}),
            "counts": self.counts,
            **({"coverage": self.coverage} if self.coverage else {}),
            "objects": [title for title, _ in self.objects],
        }

    def explain(self) -> str:
        """The failure message a pytest report shows."""
        lines = [f"{self.check} [{self.subject}]: {self.evidence}", *self.details[:20]]
        if len(self.details) > 20:
            lines.append(f"... and {len(self.details) - 20} more (see the gate report)")
        import yaml

        from crdharness.gate.shown import as_shown

        for title, obj in self.objects[:3]:
            lines += [f"--- {title}", yaml.safe_dump(as_shown(obj), sort_keys=False).rstrip()]
        return "\n".join(lines)


class RoundTripFailure(Exception):
    """Raised inside a hypothesis run so it shrinks the object to a minimal one. One class
    per check: hypothesis shrinks a failure only to examples failing the same way."""

    check = ""

    def __init__(self, evidence: str, details: list[str], shown: list, paths=frozenset()):
        super().__init__(evidence)
        self.evidence, self.details, self.shown = evidence, details, shown
        self.paths: frozenset[str] = frozenset(paths)  # what differed (round trips)
        self.lost: frozenset[str] = frozenset()  # of those, what read back absent (lost whole)
        self.at_b: frozenset[str] = frozenset()  # of those, what differed already at B
        self.body: dict = {}  # the generated body that failed (set by the search)
        self.written_as = ""  # the body as written at A (``same_write.key``)
        self.refused: RefusedWrite | None = None  # the write refused (a 4xx), where one was
        # The body as written at A, kept compressed (``same_write.note``; a ``Packed``).
        self.written_body: Any = None
        # A write, read or re-create the server refused after data was already lost (the
        # failure is the loss: ``Steps.or_else``), or a re-create refused beside a loss.
        self.refusal: NotConvertible | None = None
        self.at = 0.0  # when it was found (time.monotonic)

    def untraced(self) -> RoundTripFailure:
        """This failure without the frames it was raised through: it is kept to the end of
        the run (results, ``same_write``), and its traceback would keep every frame's
        objects alive with it (a drawn search's: hypothesis's whole engine)."""
        for failure in (self, self.refusal):
            if failure is not None:
                failure.__traceback__ = None
                failure.__context__ = failure.__cause__ = None
        return self

    @property
    def size(self) -> int:
        """How big the failing object is (the search keeps the smallest): its generated body,
        not the object as sent, whose generated name grows with the count of objects."""
        return len(repr(self.body or (self.shown[0][1] if self.shown else "")))


class NotConvertible(RoundTripFailure):
    check = "convertibility"
    answer: Answer | None = None  # the server's answer, where it failed the step


class DataChanged(RoundTripFailure):
    check = "round-trip"
