"""The gate's verdict on the terminal, after pytest's own lines: the operator's answer, the
table of checks, each failing check's block (``terminal``), what was refused, changed or owed,
the verdict and where report.md is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from crdharness.gate.reporting import report, terminal
from crdharness.gate.results import CheckResult
from crdharness.gate.run.context import GateContext


@dataclass
class Shown:
    """What the summary names beside the results: the Kubernetes it ran on, the operator's
    answer (``--from-cluster``), notes, the changes between releases, the report's directory."""

    kubernetes: str
    answer: list[str]
    notes: list[str]
    found: list
    directory: Path


def write(
    write_line: Callable[[str], None],
    ctx: GateContext,
    results: list[CheckResult],
    gate_report: report.Report,
    shown_here: Shown,
    verbose: bool,
) -> None:
    kubernetes, answer, notes = shown_here.kubernetes, shown_here.answer, shown_here.notes
    found, directory = shown_here.found, shown_here.directory
    for line in answer:  # the operator's answer first
        write_line(line)
    if answer:
        write_line("")
    width = None if verbose else report.TERMINAL_EVIDENCE
    for line in report.table(results, kubernetes, width):
        write_line(line)
    if not verbose:  # with -v, pytest's own failure sections show everything
        shown: dict[terminal.Shape, str] = {}
        for result in (r for r in report.ordered(results) if r.passed is False):
            block = terminal.failure_block(result, shown)
            if len(block) > 1:  # a whole block stands apart; a repeat is one line
                write_line("")
            for line in block:
                write_line(line)
        write_line("")
    if ctx.refused:
        refused = ", ".join(f"{why}: {n}" for why, n in sorted(ctx.refused.items()))
        write_line(f"objects refused before any check (not findings): {refused}")
    for line in ctx.screening.few_accepted():  # fewer than half: the evidence is thin there
        write_line(f"few generated objects accepted: {line}")
    if found:
        write_line(
            f"what changed between releases: {len(found)} changes, "
            f"{report.changes_summary(found)} (the table is in report.md)"
        )
    if ctx.pair_changes:
        write_line(
            f"paths that differ between served versions: {len(ctx.pair_changes)}, "
            f"{report.changes_summary(ctx.pair_changes)} (the table is in report.md)"
        )
    if ctx.hazards:
        write_line(f"hazards of earlier releases (not findings): {len(ctx.hazards)}, see report.md")
    if ctx.debt:
        owed = "failing, `debt: fail`" if any(d.fails for d in ctx.debt) else "not findings"
        write_line(
            f"debt of release {ctx.debt[0].release} ({owed}): {len(ctx.debt)}, see report.md"
        )
    for note in notes:
        write_line(f"note: {note}")
    write_line(f"verdict: {gate_report.verdict}")
    written = "report.json, objects/" if (directory / "objects").is_dir() else "report.json"
    write_line(f"report: {directory}/report.md (and {written})")
