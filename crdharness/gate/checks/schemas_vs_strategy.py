"""Check *schemas-vs-strategy*: a CRD whose served versions' schemas differ but whose
conversion strategy is ``None`` (only apiVersion changes) loses or invalidates the fields
that differ. Differences are grouped by subtree; those real objects lost in this run's round
trips come first.
"""

from __future__ import annotations

import itertools

from crdharness.gate import diff
from crdharness.gate.evidence import schemas
from crdharness.gate.run.context import GateContext


def check(ctx: GateContext, name: str) -> None:
    result = ctx.result("schemas-vs-strategy", name)
    strategy = ctx.candidate.strategy(name)
    if ctx.webhook is not None and ctx.config.webhook and name in ctx.config.webhook.convert:
        strategy = "Webhook"
    served = [v for v in ctx.candidate.versions(name) if v.get("served")]
    if strategy != "None" or len(served) < 2:
        result.evidence = f"strategy {strategy}" + (
            "" if strategy != "None" else " with one served version"
        )
        return
    grouped = []
    for a, b in itertools.permutations([v["name"] for v in served], 2):
        grouped += schemas.grouped_differences(ctx.candidate, name, a, b)
    # The subtrees real objects lost in this run's round trips first: the data at stake.
    lost = ctx.lost_paths.get(name, set())

    def at_stake(path: str) -> bool:
        return any(diff.at_or_under(p, path) for p in lost)

    grouped.sort(key=lambda item: not at_stake(item[0]))
    problems = [
        ("data lost in the round trips: " if at_stake(path) else "") + text
        for path, text in grouped
    ]
    if problems:
        stake = sorted({path for path, _ in grouped if at_stake(path)})
        result.fail(
            f"strategy None but the served versions' schemas differ ({len(problems)} "
            "subtrees): with None only apiVersion changes, so these fields are lost or "
            "invalid" + (f"; real objects lost {', '.join(stake)}" if stake else ""),
            *problems,
        )
    else:
        result.evidence = "strategy None and the served versions share one schema"
