"""The gate's verdict: a terminal table, and ``artifacts/gate/`` with Markdown, JSON and every
failing object as YAML (JUnit comes from pytest itself)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from crdharness.gate.evidence.changes import Change
from crdharness.gate.given.config import Acceptance
from crdharness.gate.reporting import capped
from crdharness.gate.results import CheckResult, Debt
from crdharness.gate.shown import as_shown, brief, file_names, object_stem
from crdharness.gate.subjects import CHECKS

MD_OBJECTS = 6  # objects report.md shows per check (three before/after pairs); objects/ has all


def ordered(results: list[CheckResult]) -> list[CheckResult]:
    return sorted(results, key=lambda r: (list(CHECKS).index(r.check), r.subject))


TERMINAL_EVIDENCE = 160  # characters of evidence per table row in the terminal


def table(results: list[CheckResult], kubernetes: str, cut: int | None = None) -> list[str]:
    """The verdict table; ``cut`` shortens each evidence (the terminal's; report.md has all)."""
    rows = [(r.check, r.subject, r.status, _cut(r.evidence, cut)) for r in ordered(results)]
    width = [
        max([len(h)] + [len(row[i]) for row in rows])
        for i, h in enumerate(("check", "subject", "result"))
    ]
    lines = [f"Kubernetes {kubernetes}"]
    header = ("check", "subject", "result")
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, width, strict=True)) + "  evidence")
    for check, subject, status, evidence in rows:
        cells = (check.ljust(width[0]), subject.ljust(width[1]), status.ljust(width[2]))
        lines.append("  ".join(cells) + "  " + evidence)
    return lines


def _cut(text: str, width: int | None) -> str:
    return text if width is None or len(text) <= width else text[: width - 1] + "…"


@dataclass
class Report:
    """Everything one run reports."""

    results: list[CheckResult]
    kubernetes: str
    refused: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    refused_examples: dict[str, str] = field(default_factory=dict)
    stored_after: dict[int, dict[str, list[str]]] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)  # every transition's, in order
    ignored: dict[int, dict[str, int]] = field(default_factory=dict)  # transition -> doc keys
    pair_changes: list[Change] = field(default_factory=list)  # the candidate's version pairs
    hazards: list[str] = field(default_factory=list)  # writes a release itself refuses
    debt: list[Debt] = field(default_factory=list)  # the previous release's, not findings
    debt_note: str = ""  # why the previous release's debt could not be known
    accepted: list[Acceptance] = field(default_factory=list)  # `accept_not_proven`
    answer: list[str] = field(default_factory=list)  # --from-cluster: the operator's answer
    objects_to_fix: dict[str, str] = field(default_factory=dict)  # --from-cluster: every one
    # --from-cluster with --max-objects: crd -> {"replayed", "held", "max_objects"}
    not_replayed: dict[str, dict[str, int]] = field(default_factory=dict)
    # --shard: which share this is, and the whole report as data (``stored``), for
    # gate-merge; a merged report: the shards it was made of.
    shard: dict = field(default_factory=dict)
    # crd -> version -> generated, accepted, refused and by what (``run.screening``)
    objects_made: dict[str, dict[str, dict]] = field(default_factory=dict)
    not_judged_locally: str = ""  # why generated objects were not judged locally first

    def acceptance(self, result: CheckResult) -> Acceptance | None:
        if result.passed is not None:
            return None
        return next((a for a in self.accepted if a.covers(result.check, result.subject)), None)

    @property
    def verdict(self) -> str:
        """FAIL on any finding; NOT PROVEN when a check could not decide (and the gate file
        does not accept that); PASS otherwise."""
        if any(r.passed is False for r in self.results):
            return FAIL
        if any(r.passed is None and self.acceptance(r) is None for r in self.results):
            return NOT_PROVEN
        return PASS


PASS, FAIL, NOT_PROVEN, NOT_RUN = "PASS", "FAIL", "NOT PROVEN", "NOT RUN"


def write_not_run(
    directory: Path, cause: str, planned: list[str], shard: dict | None = None
) -> Path:
    """The gate could not start (no cluster, no webhook, no binaries): said once, with the
    checks that did not run, so a CI job that keeps the artifacts shows why. Not a finding:
    the CLI exits 3."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "report.json").write_text(
        json.dumps(
            {"verdict": NOT_RUN, "not_run": cause, "planned": planned}
            | ({"shard": shard} if shard else {}),
            indent=2,
        )
        + "\n"
    )
    checks = "".join(f"- {name}\n" for name in planned)
    (directory / "report.md").write_text(
        f"# Upgrade gate: {NOT_RUN}\n\nThe gate could not run: {cause}\n\n"
        f"Nothing was decided; these checks did not run:\n\n{checks}"
    )
    return directory


def write(directory: Path, run: Report) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    results = ordered(run.results)
    _write_objects(directory / "objects", results)
    verdict = run.verdict
    accepted = [(r, a) for r in results if (a := run.acceptance(r)) is not None]
    data = {
        "verdict": verdict,
        "answer": run.answer,
        "objects_to_fix": run.objects_to_fix,
        "objects_not_replayed": run.not_replayed,
        "kubernetes": run.kubernetes,
        "checks": [r.as_json() for r in results],
        "changes": [c.as_json() for c in run.changes],
        "documentation_ignored": {
            f"release {t}->{t + 1}": counts for t, counts in sorted(run.ignored.items())
        },
        "version_pair_differences": [c.as_json() for c in run.pair_changes],
        "hazards": run.hazards,
        "debt": [d.as_json() for d in run.debt],
        "debt_not_evaluated": run.debt_note,
        "accepted_not_proven": [
            {"check": r.check, "subject": r.subject, "reason": a.reason} for r, a in accepted
        ],
        "refused_objects": run.refused,
        "objects_made": run.objects_made,
        "objects_not_judged_locally": run.not_judged_locally,
        "refused_examples": run.refused_examples,
        "notes": run.notes,
        "seconds": run.timings,
        "stored_versions_after_release": {
            f"release {i + 1}": crds for i, crds in run.stored_after.items()
        },
        **({"shard": run.shard} if run.shard else {}),
    }
    # Written as it is encoded: a provider's report is tens of megabytes, and its text held
    # whole (twice, while joined) was the gate's peak.
    with (directory / "report.json").open("w") as out:
        json.dump(data, out, indent=2)
    md = [f"# Upgrade gate: {verdict}", ""]
    if run.answer:
        md += [run.answer[0], "", *run.answer[1:], ""]
    if len(run.objects_to_fix) > 1:
        md += [f"## Objects to fix ({len(run.objects_to_fix)})", ""]
        md += [f"- {label}: {line}" for label, line in run.objects_to_fix.items()] + [""]
    md += [f"Kubernetes {run.kubernetes}", ""]
    md += ["| check | subject | result | evidence |", "| --- | --- | --- | --- |"]
    for r in results:
        evidence = r.evidence.replace("|", "\\|")
        md.append(f"| {r.check} | {r.subject} | {r.status} | {evidence} |")
    if accepted:
        md += ["", "Accepted as not proven (`accept_not_proven`):", ""]
        md += [f"- {r.check} [{r.subject}]: {a.reason}" for r, a in accepted]
    md += _coverage_table(results)
    md += _changes_table(run.changes, run.ignored)
    if run.pair_changes:
        md += ["", "## Paths that differ between the candidate's served versions", ""]
        md += _rows(run.pair_changes)
    for r in results:
        if (
            r.passed is False
            or r.allowed
            or r.normalised
            or r.respelt
            or r.own_annotations
            or r.pruned
            or r.unseen_at_b
            or (r.details and r.passed is None)
        ):
            md += ["", f"## {r.check} [{r.subject}]: {r.status}", "", r.evidence, ""]
            md += [f"- {line}" for line in r.details[:50]]
            if r.allowed:
                md += ["", "Allowed differences:", *[f"- {a}" for a in r.allowed]]
            if r.normalised:
                md += [
                    "",
                    "Normalised, not lost (an empty value, or a zero value of a field whose "
                    "schema gives it no `default` or that zero as its `default`, read back "
                    "absent, or the reverse; "
                    "`strict: true` makes these findings):",
                    *[f"- {n}" for n in r.normalised[:20]],
                ]
            if r.respelt:
                md += [
                    "",
                    "Re-spelt by the webhook (the object reads the same at the other version "
                    "before and after; `strict: true` makes these findings):",
                    *[f"- {n}" for n in r.respelt[:20]],
                ]
            if r.own_annotations:
                md += [
                    "",
                    "The webhook's own annotations (added to objects written without them and "
                    "left there after the round trip: its bookkeeping, not a user's data; "
                    "`strict: true` makes these findings):",
                    *[f"- {n}" for n in r.own_annotations[:20]],
                ]
            if r.unseen_at_b:
                md += [
                    "",
                    "Held at the other version only in the webhook's annotations (the object "
                    "read there, created again there without them and read back, differs: a "
                    "client reading that version does not see this; `strict: true` makes "
                    "these findings):",
                    *[f"- {n}" for n in r.unseen_at_b[:30]],
                ]
            if r.pruned:
                md += [
                    "",
                    "Pruned by the gate's own request (not the webhook's; never findings):",
                    *[f"- {n}" for n in r.pruned[:20]],
                ]
            for title, obj in r.objects[:MD_OBJECTS]:
                md += [
                    "",
                    f"{title}:",
                    "",
                    "```yaml",
                    capped.block(yaml.safe_dump(brief(as_shown(obj)), sort_keys=False).rstrip()),
                    "```",
                ]
            if len(r.objects) > MD_OBJECTS:
                md += ["", f"… {len(r.objects) - MD_OBJECTS} more objects: see objects/"]
    if run.hazards:
        md += [
            "",
            "## Hazards of earlier releases (not findings of an upgrade)",
            "",
            "Writes a release refuses for objects it accepted itself: the same write under "
            "the next release is not blamed on the upgrade.",
            "",
            *[f"- {h}" for h in run.hazards],
        ]
    md += _debt(run.debt, run.debt_note)
    if run.stored_after:
        md += ["", "## status.storedVersions a cluster holds after each release", ""]
        md += ["| release | CRD | storedVersions |", "| --- | --- | --- |"]
        for i, crds in sorted(run.stored_after.items()):
            md += [f"| {i + 1} | {name} | {', '.join(v)} |" for name, v in crds.items()]
    if run.refused:
        md += ["", "## Objects refused before any check (not findings)", ""]
        for why, count in sorted(run.refused.items()):
            md.append(f"- {why}: {count}")
            example = run.refused_examples.get(why)
            if example:
                md.append(f"  - for example: {example}")
    if run.notes:
        md += ["", "## Notes", "", *[f"- {n}" for n in run.notes]]
    (directory / "report.md").write_text(capped.lines("\n".join(md)) + "\n")
    return directory


def _write_objects(directory: Path, results: list[CheckResult]) -> None:
    """Every failing object shown, one file each, named by the object (kind, namespace,
    name) and the check; the check, subject and title in its first line. An earlier run's
    files go first: named by object, they would otherwise stay beside this run's."""
    for earlier in directory.glob("*.yaml") if directory.is_dir() else []:
        earlier.unlink()
    shown = [(r, title, obj) for r in results for title, obj in r.objects]
    if not shown:
        if directory.is_dir() and not any(directory.iterdir()):
            directory.rmdir()
        return
    directory.mkdir(exist_ok=True)
    stems = [
        f"{object_stem(obj, f'{r.subject}-{i}')}.{r.check}" for i, (r, _, obj) in enumerate(shown)
    ]
    for (result, title, obj), name in zip(shown, file_names(stems), strict=True):
        (directory / name).write_text(
            f"# {result.check} [{result.subject}]: {title}\n"
            + yaml.safe_dump(as_shown(obj), sort_keys=False)
        )


def _debt(debts: list[Debt], note: str) -> list[str]:
    """The previous release's failures the candidate has in the same form: listed, never
    silently green; findings only with `debt: fail` (or `strict: true`)."""
    if not debts and not note:
        return []
    md = ["", "## Debt of earlier releases (not findings)", ""]
    if debts:
        failing = any(d.fails for d in debts)
        md += [
            f"Failures of the candidate's own checks that release {debts[0].release} already "
            "has in the same form (same check, CRD and version pair; every path at or under "
            "one it fails): "
            + (
                "they fail the candidate, as `debt: fail` (or `strict: true`) asks."
                if failing
                else "not blamed on the candidate; `debt: fail` makes them findings."
            ),
            "",
            *[f"- release {d.release}: {d.describe()}" for d in debts],
        ]
    if note:
        md += ["", note] if debts else [note]
    return md


def _coverage_table(results: list[CheckResult]) -> list[str]:
    """Schema path coverage per version pair: declared leaf paths of A's schema that an
    object holding data there took through the round trip, and why each other one did not."""
    rows = [r for r in results if r.coverage]
    if not rows:
        return []
    md = ["", "## Schema path coverage of the round trips", ""]
    md += ["| pair | exercised / declared | not held (why) |", "| --- | --- | --- |"]
    for r in rows:
        c = r.coverage
        missing = "; ".join(f"`{p}`: {why}" for p, why in c["uncovered"].items()) or "-"
        cells = [r.subject, f"{c['exercised']} / {c['declared']}", missing]
        md.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    return md


def _changes_table(found: list[Change], ignored: dict[int, dict[str, int]]) -> list[str]:
    """What changed, per transition: one row per change, each with its decision, and the
    documentation-only changes ignored, counted."""
    md: list[str] = []
    by_transition: dict[int, list[Change]] = {t: [] for t in ignored}
    for change in found:
        by_transition.setdefault(change.transition, []).append(change)
    for t, rows in sorted(by_transition.items()):
        md += ["", f"## What changed, release {t} -> {t + 1}", ""]
        if t in ignored:
            counts = ", ".join(f"{n} {key}" for key, n in sorted(ignored[t].items()))
            md += [f"{counts} changes ignored (documentation only).", ""]
        md += _rows(rows) if rows else []
    return md


def _rows(found: list[Change]) -> list[str]:
    md = ["| CRD | version | path | change | decision | evidence |"]
    md += ["| --- | --- | --- | --- | --- | --- |"]
    for c in found:
        row = c.as_json()
        cells = [
            c.crd,
            c.version or "-",
            c.path or "-",
            f"{c.kind}: {c.detail}",
            row["decision"],
            row["evidence"],
        ]
        md.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    return md


def changes_summary(found: list[Change]) -> str:
    """One line: how many changes each decision got."""
    counts: dict[str, int] = {}
    for change in found:
        decision = change.as_json()["decision"]
        counts[decision] = counts.get(decision, 0) + 1
    return ", ".join(f"{n} {d}" for d, n in sorted(counts.items()))
