"""One gate run: the phases, run once each when a check needs them, and every planned
check's decision.

The phases (``history``, ``candidate``, ``conduct``, ``kubernetes``) are functions of a
``GateContext``; ``subjects`` says which phase decides which check and what a phase needs first.
Every planned check ends with a decision: a phase that raises (the gate's own failure, a
timeout) turns each check it had not decided into a failure that says why, and a check the run
never reached says so ("not proven"); none is left showing pass without evidence.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from crdharness.gate import subjects
from crdharness.gate.checks import conduct
from crdharness.gate.phases import candidate, history, kubernetes_upgrade
from crdharness.gate.results import CheckResult
from crdharness.gate.run import collector
from crdharness.gate.run.context import GateContext, GateTimeout
from crdharness.gate.run.own_failures import cause_of, where_raised
from crdharness.gate.run.plan import PlannedCheck

Phase = Callable[[GateContext], None]
PHASES: dict[str, Phase] = {
    "history": history.run,
    "candidate": candidate.run,
    "conduct": conduct.run,
    "kubernetes": kubernetes_upgrade.run,
}


class GateRun:
    def __init__(self, ctx: GateContext, phases: dict[str, Phase] | None = None):
        self.ctx = ctx
        self.phases = phases or PHASES
        self.done: set[str] = set()  # phases started (each runs once)
        self.running_phase: str | None = None  # the innermost phase under way
        self.phase_errors: dict[str, str] = {}  # phase -> why it could not finish

    def run(self, phase: str) -> None:
        """Run ``phase`` (after the phases it needs), once; its failure becomes its checks'."""
        if phase in self.done:
            return
        for needed in subjects.NEEDS[phase]:
            self.run(needed)
        self.done.add(phase)
        started = time.perf_counter()
        outer, self.running_phase = self.running_phase, phase
        try:
            self.ctx.check_deadline(f"the {phase} phase")
            self.phases[phase](self.ctx)
        except (Exception, GateTimeout) as exc:  # the gate's own failure becomes the checks'
            self.phase_errors[phase] = cause_of(exc)
            self._fail_undecided(phase, exc)
        finally:
            self.running_phase = outer
            self.ctx.timings[phase] = round(time.perf_counter() - started, 2)
            collector.phase_done()

    def _fail_undecided(self, phase: str, exc: BaseException) -> None:
        """After ``phase`` raised: every check of it not decided, or under way, is "not
        proven" with the cause (the gate's own failure is never the release's finding)."""
        cause = cause_of(exc)
        where = where_raised(exc)
        for planned in self.ctx.planned:
            if planned.phase != phase:
                continue
            result = self.ctx.result(planned.check, planned.subject)
            in_progress = planned.key in self.ctx.in_progress
            if result.passed is False or (_decided(result) and not in_progress):
                continue
            result.passed = True
            result.evidence = ""
            result.not_finished(cause, where)

    def decision(self, planned: PlannedCheck) -> CheckResult:
        """The result of a planned check, as it may be shown (``redaction``); one the run
        never reached says why."""
        result = self._decision(planned)
        if self.ctx.redaction is not None:
            self.ctx.redaction.result(result)
        return result

    def _decision(self, planned: PlannedCheck) -> CheckResult:
        result = self.ctx.results.get(planned.key)
        if result is not None and _decided(result):
            return result
        result = self.ctx.result(planned.check, planned.subject)
        result.passed = None
        if planned.phase not in self.done:
            result.evidence = "not proven: not run (deselected)"
        elif planned.phase == "history" and self.ctx.refused_crds:
            result.evidence = (
                f"not proven: not reached ({', '.join(sorted(self.ctx.refused_crds))} could "
                "not be installed: see install)"
            )
        else:
            result.evidence = "not proven: the run did not decide it"
        return result

    def decide_all(self) -> list[CheckResult]:
        """Every planned check's result (in plan order), then any other result."""
        planned = [self.decision(p) for p in self.ctx.planned]
        keys = {p.key for p in self.ctx.planned}
        others = [r for key, r in self.ctx.results.items() if key not in keys]
        if self.ctx.redaction is not None:
            for result in others:
                self.ctx.redaction.result(result)
        return planned + others


def _decided(result: CheckResult) -> bool:
    return result.passed is not True or bool(result.evidence)
