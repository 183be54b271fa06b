"""Check *schemas-vs-strategy*: a CRD whose served versions' schemas differ but whose
conversion strategy is ``None`` (only apiVersion changes) loses or invalidates the fields
that differ. Differences are grouped by subtree; those real objects lost in this run's round
trips come first.
"""

from __future__ import annotations

import itertools

from crdharness.gate import diff
from crdharness.gate.evidence import schemas
from crdharness.gate.given.manifests import Release
from crdharness.gate.results import Form, Found
from crdharness.gate.run.context import GateContext


def strategy(ctx: GateContext, release: Release, name: str) -> str:
    """``name``'s conversion strategy under ``release``, as the gate runs it."""
    if (
        ctx.webhook is not None
        and ctx.config.webhook
        and ctx.config.webhook.converts(release.crds[name])
    ):
        return "Webhook"
    return release.strategy(name)


def differences(ctx: GateContext, release: Release, name: str) -> list[tuple[str, str, str]]:
    """(version pair, subtree path, what differs) for each subtree ``release``'s served
    versions of ``name`` differ in under strategy None; none under another strategy."""
    served = [v["name"] for v in release.versions(name) if v.get("served")]
    if strategy(ctx, release, name) != "None":
        return []
    return [
        (f"{a}->{b}", path, text)
        for a, b in itertools.permutations(served, 2)
        for path, text in schemas.grouped_differences(release, name, a, b)
    ]


def check(ctx: GateContext, name: str) -> None:
    result = ctx.result("schemas-vs-strategy", name)
    used = strategy(ctx, ctx.candidate, name)
    served = [v for v in ctx.candidate.versions(name) if v.get("served")]
    if used != "None" or len(served) < 2:
        result.evidence = f"strategy {used}" + (
            "" if used != "None" else " with one served version"
        )
        return
    grouped = differences(ctx, ctx.candidate, name)
    # The subtrees real objects lost in this run's round trips first: the data at stake.
    lost = ctx.lost_paths.get(name, set())

    def at_stake(path: str) -> bool:
        return any(diff.at_or_under(p, path) for p in lost)

    grouped.sort(key=lambda item: not at_stake(item[1]))
    problems = [
        (pair, path, ("data lost in the round trips: " if at_stake(path) else "") + text)
        for pair, path, text in grouped
    ]
    if problems:
        stake = sorted({path for _, path, _ in grouped if at_stake(path)})
        found = [
            Found(Form(frozenset({path}), pair), f"{HEADLINE}: {text}", [text])
            for pair, path, text in problems
        ]
        result.fail(
            f"{HEADLINE} ({len(problems)} subtrees): with None only apiVersion changes, so "
            "these fields are lost or invalid"
            + (f"; real objects lost {', '.join(stake)}" if stake else "")
            + (UNSTATED if "conversion" not in ctx.candidate.crds[name]["spec"] else ""),
            *(text for _, _, text in problems),
            found=found,
        )
    else:
        result.evidence = "strategy None and the served versions share one schema"


HEADLINE = "strategy None but the served versions' schemas differ"
# A manifest with no conversion stanza is strategy None as shipped; an installer may add one.
UNSTATED = (
    " (the manifest has no spec.conversion: if what installs it adds a webhook, as a kustomize"
    " patch or Crossplane's package manager does, give the gate that webhook with"
    " webhook.convert naming these CRDs, e.g. ['*'])"
)
