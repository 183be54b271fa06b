"""Check *webhook-conduct*: judge each ConversionReview answer the recording proxy kept
(within kube-apiserver's limit, the right uid and review version, every object back at the
desired version, no metadata kube-apiserver refuses: ``returned_metadata``) and report the
webhook's latency, against the user's budget if the gate file sets one.

A CRD's conversion webhook has no ``timeoutSeconds`` (admission webhooks do): kube-apiserver
gives each conversion call a fixed 30 s (``defaultRequestTimeout`` in
``k8s.io/apiserver/pkg/util/webhook/webhook.go``) and fails the request after that.
"""

from __future__ import annotations

import re
import statistics

from crdharness.gate.checks import returned_metadata
from crdharness.gate.given import manifests
from crdharness.gate.results import Debt, Form
from crdharness.gate.run.context import GateContext

SERVER_LIMIT = 30.0  # seconds kube-apiserver waits for a conversion webhook's answer


def run(ctx: GateContext) -> None:
    result = ctx.result("webhook-conduct", "webhook")
    if ctx.webhook is None:
        result.evidence = "no conversion webhook in this history"
        return
    if ctx.webhook.proxy is None:
        result.passed = None
        result.evidence = (
            "not proven: the API server calls the webhook through its Service here, "
            "without the gate's recording proxy (run the gate on --cluster=local for this)"
        )
        return
    exchanges = [e for e in ctx.webhook.proxy.exchanges if e.kind == "ConversionReview"]
    problems: list[str] = []
    restoring = 0  # answers whose metadata the server puts back (Go's creationTimestamp: null)
    example = ""
    for e in exchanges:
        restored: list[str] = []
        problems += conduct_problems(e, restored)
        if restored:
            restoring += 1
            example = example or restored[0]
    latencies = sorted(e.seconds for e in exchanges)
    result.counts = {"reviews": len(exchanges)}
    if latencies:
        p50 = statistics.median(latencies) * 1000
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
        result.counts |= {"p50_ms": round(p50, 2), "p99_ms": round(p99, 2)}
        latency = f"p50 {p50:.1f} ms, p99 {p99:.1f} ms"
        budget = ctx.config.webhook.latency_budget_ms if ctx.config.webhook else None
        if budget is not None and p99 > budget:
            problems.append(
                f"p99 latency {p99:.1f} ms is over the budget of {budget:g} ms "
                "(webhook.latency_budget_ms)"
            )
    else:
        latency = "no review seen"
    problems, owed = _debt(ctx, problems)
    if problems:
        shown = folded(problems)
        result.fail(f"{len(problems)} misbehaving answers of {len(exchanges)}: {shown[0]}", *shown)
    elif owed:
        result.evidence = (
            f"release {owed[0].release}'s debt, not a finding: {len(owed)} "
            f"kind{'s' if len(owed) > 1 else ''} of misbehaving answers its own webhook gave "
            f"too (listed apart); {len(exchanges)} reviews; {latency}"
        )
    elif not exchanges:  # nothing seen is no pass, where something was to be converted
        if _converting(ctx):
            result.passed = None
            result.evidence = "not proven: the webhook answered no conversion review"
        else:
            result.evidence = (
                "no review: no CRD judged converts between two served versions through it"
                + ("; the unchanged CRDs are listed only" if ctx.unchanged else "")
            )
    else:
        result.evidence = f"{len(exchanges)} reviews answered correctly; {latency}"
        if restoring:
            result.evidence += f"; metadata the server restores: {restoring} answers"
    result.details.insert(0, f"latency per review (through the proxy): {latency}")
    if restoring:
        result.counts["metadata_restored"] = restoring
        result.details.insert(
            1,
            f"metadata the server restores: {restoring} answers (e.g. {example}): "
            "kube-apiserver copies back every metadata field but labels and annotations",
        )


_BYTES = re.compile(r"\b(\d+) bytes\b")
_ALIKE = re.compile(r" \((?:and \d+ more reviews alike)?(?:, )?(?:\d+ to \d+ bytes)?\)$")


def kind(problem: str) -> str:
    """What a problem is, whatever review it was: without the review's uid, its object count
    and the byte count of what the webhook answered (an object growing by the gate's own
    writes answers a few bytes more each time), but with the version it was asked for; a
    ``folded`` line is of the kind of the problems it folds."""
    problem = _ALIKE.sub("", problem) if problem.endswith(("alike)", "bytes)")) else problem
    return _BYTES.sub("N bytes", re.sub(r"review \S+ \(\d+ objects", "review (objects", problem))


def folded(problems: list[str]) -> list[str]:
    """One line per kind of misconduct (``kind``): one object answered wrongly 220 times is
    one line with the count, and the range of the byte counts where they differ."""
    kinds: dict[str, list[str]] = {}
    for problem in problems:
        kinds.setdefault(kind(problem), []).append(problem)
    lines = []
    for same in kinds.values():
        sizes = sorted({int(n) for p in same for n in _BYTES.findall(p)})
        alike = [f"and {len(same) - 1} more reviews alike"] if len(same) > 1 else []
        alike += [f"{sizes[0]} to {sizes[-1]} bytes"] if len(sizes) > 1 else []
        lines.append(same[0] + (f" ({', '.join(alike)})" if alike else ""))
    return lines


def _debt(ctx: GateContext, problems: list[str]) -> tuple[list[str], list[Debt]]:
    """``problems`` without the kinds of misconduct (``kind``) the release before the
    candidate already shows through its own webhook (``crds[i].webhook``), on the same kind of
    review: that release's debt (added to the run's, listed apart; still failing with
    ``debt: fail``). A release that runs the candidate's webhook has none of its own: what
    that webhook does is the candidate's."""
    previous = len(ctx.releases) - 2
    own = ctx.release_webhooks.get(previous)
    if previous < 0 or own is None or own.proxy is None or not problems:
        return problems, []
    theirs = {
        kind(p)
        for e in own.proxy.exchanges
        if e.kind == "ConversionReview"
        for p in conduct_problems(e)
    }
    owed = [p for p in problems if kind(p) in theirs]
    debts = [
        Debt(previous + 1, "webhook-conduct", "webhook", Form(), line, ctx.config.fail_debt)
        for line in folded(owed)
    ]
    ctx.debt += debts
    if ctx.config.fail_debt:
        return problems, debts
    return [p for p in problems if kind(p) not in theirs], debts


def conduct_problems(e, restored: list[str] | None = None) -> list[str]:
    """What is wrong with exchange ``e``'s answer; the metadata changes kube-apiserver
    undoes (not misconduct) are added to ``restored``."""
    request = (e.request or {}).get("request") or {}
    uid = request.get("uid")
    count = len(request.get("objects") or [])
    where = f"review {uid} ({count} objects to {request.get('desiredAPIVersion')})"
    if e.error:
        return [f"{where}: {e.error}"]
    if e.status != 200:
        return [f"{where}: HTTP {e.status}"]
    answer = e.answer if isinstance(e.answer, dict) else None
    if answer is None or not isinstance(answer.get("response"), dict):
        return [f"{where}: the answer is not a ConversionReview with a response: {e.answer_text!r}"]
    problems = []
    if e.seconds > SERVER_LIMIT:
        problems.append(
            f"{where}: took {e.seconds:.1f} s; kube-apiserver gives up after {SERVER_LIMIT:g} s "
            "and fails the request"
        )
    if answer.get("apiVersion") != (e.request or {}).get("apiVersion"):
        problems.append(
            f"{where}: answered as {answer.get('apiVersion')}, "
            f"asked as {e.request.get('apiVersion')}"
        )
    response = answer["response"]
    if response.get("uid") != uid:
        problems.append(f"{where}: answered uid {response.get('uid')}")
    status = (response.get("result") or {}).get("status")
    if status != "Success":
        return problems  # a refusal is judged by convertibility, not here
    sent = request.get("objects") or []
    got = response.get("convertedObjects") or []
    if len(got) != len(sent):
        problems.append(f"{where}: {len(sent)} objects sent, {len(got)} returned")
        return problems
    for before, after in zip(sent, got, strict=True):
        if not isinstance(after, dict):
            problems.append(f"{where}: an object came back as {type(after).__name__}")
            continue
        if after.get("apiVersion") != request.get("desiredAPIVersion"):
            problems.append(f"{where}: an object came back at {after.get('apiVersion')}")
        # Judged as kube-apiserver judges it (returned_metadata): what it refuses fails the
        # request; what it restores from the object sent no client ever sees.
        problems += [
            f"{where}: kube-apiserver refuses the object it returned: {why}"
            for why in returned_metadata.refusals(before, after)
        ]
        if restored is not None:
            restored += returned_metadata.restored(before, after)
    return problems


def _converting(ctx: GateContext) -> bool:
    """Whether a CRD the run judges converts through this (the top-level) webhook between
    two served versions under some release that runs it (then it must have been asked)."""
    return any(
        len(release.served(name)) > 1
        and manifests.uses_webhook(release.subset([name]), ctx.config.webhook)
        for release in ctx.releases
        if release.webhook is None or release is ctx.candidate
        for name in release.crds
        if not ctx.listed_only(name)
    )
