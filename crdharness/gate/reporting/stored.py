"""A run's whole report as data (``report.json``'s ``shard.data`` of a ``--shard`` run) and
back: everything ``report.write`` draws on, so ``gate-merge`` rebuilds the report from the
shards' results, never from their text."""

from __future__ import annotations

from typing import Any

from crdharness.gate.evidence.changes import Change
from crdharness.gate.given.config import Acceptance
from crdharness.gate.reporting.report import Report
from crdharness.gate.results import CheckResult, Debt, Form


def as_data(run: Report) -> dict[str, Any]:
    return {
        "kubernetes": run.kubernetes,
        "results": [_result(r) for r in run.results],
        "refused": run.refused,
        "notes": run.notes,
        "timings": run.timings,
        "refused_examples": run.refused_examples,
        "stored_after": {str(i): crds for i, crds in run.stored_after.items()},
        "changes": [_change(c) for c in run.changes],
        "ignored": {str(t): counts for t, counts in run.ignored.items()},
        "pair_changes": [_change(c) for c in run.pair_changes],
        "hazards": run.hazards,
        "debt": [d.as_json() for d in run.debt],
        "debt_note": run.debt_note,
        "objects_made": run.objects_made,
        "not_judged_locally": run.not_judged_locally,
        "accepted": [
            {"check": a.check, "subject": a.subject, "reason": a.reason} for a in run.accepted
        ],
    }


def from_data(data: dict[str, Any]) -> Report:
    return Report(
        [_result_from(r) for r in data["results"]],
        data["kubernetes"],
        refused=dict(data["refused"]),
        notes=list(data["notes"]),
        timings=dict(data["timings"]),
        refused_examples=dict(data["refused_examples"]),
        stored_after={int(i): crds for i, crds in data["stored_after"].items()},
        changes=[_change_from(c) for c in data["changes"]],
        ignored={int(t): dict(counts) for t, counts in data["ignored"].items()},
        pair_changes=[_change_from(c) for c in data["pair_changes"]],
        hazards=list(data["hazards"]),
        debt=[
            Debt(
                d["release"],
                d["check"],
                d["subject"],
                Form(frozenset(d["paths"]), d["pair"]),
                d["evidence"],
                d["fails"],
                d.get("same_object", False),
            )
            for d in data["debt"]
        ],
        debt_note=data["debt_note"],
        objects_made=dict(data.get("objects_made") or {}),
        not_judged_locally=str(data.get("not_judged_locally") or ""),
        accepted=[Acceptance(a["check"], a["subject"], a["reason"]) for a in data["accepted"]],
    )


def _result(r: CheckResult) -> dict[str, Any]:
    return {
        "check": r.check,
        "subject": r.subject,
        "passed": r.passed,
        "evidence": r.evidence,
        "details": r.details,
        "objects": [[title, obj] for title, obj in r.objects],
        "allowed": r.allowed,
        "normalised": r.normalised,
        "respelt": r.respelt,
        "own_annotations": r.own_annotations,
        "pruned": r.pruned,
        "unseen_at_b": r.unseen_at_b,
        "counts": r.counts,
        "unexplained": r.unexplained,
        "failed": r.failed,
        "coverage": r.coverage,
    }


def _result_from(d: dict[str, Any]) -> CheckResult:
    return CheckResult(
        d["check"],
        d["subject"],
        d["passed"],
        d["evidence"],
        list(d["details"]),
        [(title, obj) for title, obj in d["objects"]],
        list(d["allowed"]),
        list(d["normalised"]),
        respelt=list(d.get("respelt", [])),
        own_annotations=list(d.get("own_annotations", [])),
        pruned=list(d["pruned"]),
        unseen_at_b=list(d.get("unseen_at_b", [])),
        counts=dict(d["counts"]),
        unexplained=d["unexplained"],
        failed=list(d["failed"]),
        coverage=dict(d["coverage"]),
    )


# A change as the report draws it (its schema nodes and parts are the run's own).
_CHANGE_FIELDS = ("crd", "transition", "version", "path", "kind", "detail", "decision", "evidence")


def _change(c: Change) -> dict[str, Any]:
    return {key: getattr(c, key) for key in _CHANGE_FIELDS}


def _change_from(d: dict[str, Any]) -> Change:
    return Change(**{key: d[key] for key in _CHANGE_FIELDS})
