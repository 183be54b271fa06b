"""The gate's verdict: a terminal table, and ``artifacts/gate/`` with Markdown, JSON and every
failing object as YAML (JUnit comes from pytest itself)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from crdharness.gate.checks import CHECKS
from crdharness.gate.results import CheckResult


def ordered(results: list[CheckResult]) -> list[CheckResult]:
    return sorted(results, key=lambda r: (list(CHECKS).index(r.check), r.subject))


def table(results: list[CheckResult], kubernetes: str) -> list[str]:
    rows = [(r.check, r.subject, r.status, r.evidence) for r in ordered(results)]
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


def write(
    directory: Path,
    results: list[CheckResult],
    kubernetes: str,
    refused: dict[str, int],
    notes: list[str],
    timings: dict[str, float] | None = None,
    refused_examples: dict[str, str] | None = None,
    stored_after: dict[int, dict[str, list[str]]] | None = None,
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    failing_dir = directory / "objects"
    results = ordered(results)
    for result in results:
        for i, (title, obj) in enumerate(result.objects):
            failing_dir.mkdir(exist_ok=True)
            stem = re.sub(r"[^A-Za-z0-9.-]+", "_", f"{result.check}-{result.subject}-{i}")
            (failing_dir / f"{stem}.yaml").write_text(
                f"# {result.check} [{result.subject}]: {title}\n"
                + yaml.safe_dump(obj, sort_keys=False)
            )
    failed = [r for r in results if r.passed is False]
    verdict = "FAIL" if failed else "PASS"
    (directory / "report.json").write_text(
        json.dumps(
            {
                "verdict": verdict,
                "kubernetes": kubernetes,
                "checks": [r.as_json() for r in results],
                "refused_objects": refused,
                "refused_examples": refused_examples or {},
                "notes": notes,
                "seconds": timings or {},
                "stored_versions_after_release": {
                    f"release {i + 1}": crds for i, crds in (stored_after or {}).items()
                },
            },
            indent=2,
        )
    )
    md = [f"# Upgrade gate: {verdict}", "", f"Kubernetes {kubernetes}", ""]
    md += ["| check | subject | result | evidence |", "| --- | --- | --- | --- |"]
    for r in results:
        evidence = r.evidence.replace("|", "\\|")
        md.append(f"| {r.check} | {r.subject} | {r.status} | {evidence} |")
    for r in results:
        if r.passed is False or r.allowed or r.normalised or (r.details and r.passed is None):
            md += ["", f"## {r.check} [{r.subject}]: {r.status}", "", r.evidence, ""]
            md += [f"- {line}" for line in r.details[:50]]
            if r.allowed:
                md += ["", "Allowed differences:", *[f"- {a}" for a in r.allowed]]
            if r.normalised:
                md += [
                    "",
                    "Normalised, not lost (an empty value read back absent, or the reverse; "
                    "`strict: true` makes these findings):",
                    *[f"- {n}" for n in r.normalised[:20]],
                ]
            for title, obj in r.objects:
                md += [
                    "",
                    f"{title}:",
                    "",
                    "```yaml",
                    yaml.safe_dump(obj, sort_keys=False).rstrip(),
                    "```",
                ]
    if stored_after:
        md += ["", "## status.storedVersions a cluster holds after each release", ""]
        md += ["| release | CRD | storedVersions |", "| --- | --- | --- |"]
        for i, crds in sorted(stored_after.items()):
            md += [f"| {i + 1} | {name} | {', '.join(v)} |" for name, v in crds.items()]
    if refused:
        md += ["", "## Objects refused before any check (not findings)", ""]
        for why, count in sorted(refused.items()):
            md.append(f"- {why}: {count}")
            example = (refused_examples or {}).get(why)
            if example:
                md.append(f"  - for example: {example}")
    if notes:
        md += ["", "## Notes", "", *[f"- {n}" for n in notes]]
    (directory / "report.md").write_text("\n".join(md) + "\n")
    return directory
