"""The gate as a pytest plugin: each planned check is one test of ``test_gate.py``.

Loaded by ``python -m crdharness gate`` together with ``crdharness.pytest_plugin`` (which
brings the cluster, ``--cluster``, ``--keep-cluster`` and the failure bundle).
"""

from __future__ import annotations

import contextlib
import math
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from crdharness.errors import HarnessError
from crdharness.gate.checks import expectations
from crdharness.gate.evidence import unchanged
from crdharness.gate.evidence.local_validation import LocalValidator
from crdharness.gate.given import cluster_source, gate_file, manifests
from crdharness.gate.given.config import GateConfig
from crdharness.gate.given.manifests import Release
from crdharness.gate.redaction import Redaction
from crdharness.gate.reporting import operator, report, stored, summary
from crdharness.gate.run import collector, floor, plan, preflight, shards
from crdharness.gate.webhook import launch
from crdharness.gate.webhook.user_webhook import UserWebhook
from crdharness.progress import to_stderr
from crdharness.pytest_support import harness_work, live

if TYPE_CHECKING:
    from crdharness.gate.phases.runner import GateRun


@dataclass
class GateSetup:
    config: GateConfig
    releases: list[Release]
    samples: dict[str, list[dict]]
    admission: list[dict]
    checks: list[plan.PlannedCheck]
    kubernetes_path: list  # crdharness.binaries.versions.Release, oldest first; empty: no upgrade
    source: cluster_source.Source | None = None  # --from-cluster
    unchanged: dict[str, str] = field(default_factory=dict)  # CRD -> why (evidence.unchanged)
    shard: dict | None = None  # --shard: which share of the CRDs (``shards.meta``)
    not_installed: dict[str, str] = field(default_factory=dict)  # CRD -> group (run.floor)


SETUP = pytest.StashKey[GateSetup]()
RUN: pytest.StashKey[GateRun] = pytest.StashKey()
NOT_STARTED = pytest.StashKey[str]()  # why the gate could not start, when it could not


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("crdharness-gate", "CRD upgrade gate")
    group.addoption("--gate-config", default=None, help="the gate file (see README)")
    group.addoption("--gate-artifacts", default="artifacts/gate", help="where the report goes")
    group.addoption("--gate-full", action="store_true", help="judge unchanged CRDs again too")
    group.addoption("--gate-shard", default=None, help="K/N: gate the K-th of N shares of the CRDs")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--gate-config")
    if not path:
        return
    source = next(
        (p for p in config.pluginmanager.get_plugins() if isinstance(p, cluster_source.Source)),
        None,
    )
    try:
        parsed = gate_file.load(path)
        read = next(
            (p for p in config.pluginmanager.get_plugins() if isinstance(p, manifests.ReadHistory)),
            None,
        )
        releases = (
            read.releases
            if read is not None
            else manifests.load_history(parsed.crds, parsed.root, parsed.release_webhooks)
        )
        samples = manifests.samples_by_crd(parsed.samples, releases)
        shard = None
        if config.getoption("--gate-shard"):  # a CI matrix job's share of the CRDs
            shard = shards.meta(parsed, releases, shards.parse(config.getoption("--gate-shard")))
            parsed.expect = shards.expectations_of(parsed.expect, releases, shard["crds"])
            releases = shards.restrict(releases, shard["crds"])
            samples = {n: s for n, s in samples.items() if n in shard["crds"]}
        collector.settle()  # the releases, loaded: kept to the end, never scanned again
        if source is not None and parsed.release_webhooks:
            first = min(parsed.release_webhooks)
            raise HarnessError(
                f"crds[{first}].webhook: from a cluster, the earlier releases are the "
                "cluster's own: a release's own webhook is for a history of releases only"
            )
        if source is not None:  # the cluster, then the candidate (with what it ships)
            releases = source.releases(releases)
            shipped = parsed.migrations.get(len(parsed.crds) - 1)
            parsed.migrations = {1: shipped} if shipped else {}
            samples = {}  # the cluster's objects are replayed by the history
        upgrade = plan.kubernetes_path(parsed.kubernetes, config.getoption("--k8s-version"))
        parsed.full = parsed.full or bool(config.getoption("--gate-full"))
        # From a cluster, the earlier release is the cluster's own: everything is judged.
        same = {} if source is not None else unchanged.crds(releases, parsed.webhook)
        planned = plan.plan(parsed, releases, upgrade, same)
        if shard is not None:
            planned = shards.planned_here(planned, releases)
        setup = GateSetup(
            parsed,
            releases,
            samples,
            manifests.admission_configurations(parsed.admission),
            plan.about_a_cluster(planned) if source is not None else planned,
            upgrade,
            source,
            same,
            shard,
        )
        setup.not_installed = floor.not_installed(
            parsed,
            releases,
            same,
            from_cluster=source is not None,
            kubernetes_upgrade=bool(upgrade),
        )
        for expectation in parsed.expect:  # a bad expect file fails here, in one line
            expectations.load(expectation)
        preflight.check(parsed, releases, setup.admission)
    except HarnessError as exc:
        raise pytest.UsageError(f"crdharness gate: {exc}") from None
    config.stash[SETUP] = setup


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "gate_check" not in metafunc.fixturenames:
        return
    setup = metafunc.config.stash.get(SETUP, None)
    if setup is None:
        raise pytest.UsageError("crdharness gate: --gate-config is required")
    metafunc.parametrize(
        "gate_check", setup.checks, ids=[f"{c.check}:{c.subject}" for c in setup.checks]
    )


@pytest.fixture(scope="session")
def gate_run(cluster, request: pytest.FixtureRequest, tmp_path_factory):
    from crdharness.gate.phases.runner import GateRun
    from crdharness.gate.run.context import GateContext

    setup = request.config.stash[SETUP]
    webhook = None
    validator = None
    own: dict[int, UserWebhook] = {}  # release index -> its own webhook, once ready
    try:
        with harness_work(request.config, "crdharness gate"):
            started = time.perf_counter()
            if launch.needs_top_level(setup.config, setup.releases, setup.admission):
                directory = tmp_path_factory.mktemp("gate-webhook")
                webhook = launch.start_top_level(setup.config, setup.releases, cluster, directory)
            launch.start_releases(
                setup.config, setup.releases, cluster, tmp_path_factory.mktemp, own
            )
            webhook_seconds = round(time.perf_counter() - started, 2)
            _apply_admission(setup, cluster, webhook)
        ctx = GateContext(
            cluster,
            setup.config,
            setup.releases,
            setup.samples,
            live(request.config, to_stderr),  # progress shows while the checks run
            webhook,
            setup.kubernetes_path,
            setup.checks,
            own,
        )
        ctx.unchanged = setup.unchanged
        ctx.not_installed = dict(setup.not_installed)
        if setup.source is not None:
            ctx.source = setup.source.capture
            ctx.redaction = Redaction(setup.source.show_values, setup.source.secrets())
        ready = cluster.processes.start_to_ready_seconds if cluster.processes else None
        if ready is not None:
            ctx.timings["control plane ready"] = round(ready, 2)
        ctx.timings["webhook ready"] = webhook_seconds
        validator = _local_validator(ctx)
        run = GateRun(ctx)
        request.config.stash[RUN] = run
        with _bounded(run):
            yield run
    finally:
        if validator is not None:
            validator.stop()
        _stop_all([w for w in (webhook, *own.values()) if w is not None])


def _local_validator(ctx) -> LocalValidator | None:
    """The run's local validator, started; None (and why, once) when it cannot be built:
    every generated object is then sent as drawn, and the API server alone judges it."""
    validator = LocalValidator(report=ctx.report)
    try:
        validator.start()
    except (HarnessError, OSError) as exc:
        validator.stop()
        ctx.screening.off = f"generated objects not judged locally first: {exc}"
        ctx.report(f"gate: {ctx.screening.off}")
        return None
    ctx.screening.validator = validator
    return validator


def _stop_all(webhooks: list) -> None:
    """Stop every webhook the run started, each even when stopping another one failed."""
    with contextlib.ExitStack() as stack:
        for webhook in webhooks:
            stack.callback(webhook.stop)


@contextlib.contextmanager
def _bounded(run):
    """Interrupt whatever a phase is waiting on when the run's ``timeout:`` passes: that
    phase turns its undecided checks into failures that say so, and later phases do not start
    (``GateContext.check_deadline``). Between phases the alarm only lets the deadline pass."""

    def expire(signum, frame):
        if run.running_phase is not None:
            run.ctx.check_deadline(f"the {run.running_phase} phase could finish")

    if math.isinf(run.ctx.deadline):  # no `timeout:`: nothing to interrupt
        yield
        return
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(run.ctx.deadline - time.monotonic(), 0.01))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _apply_admission(setup: GateSetup, cluster, webhook) -> None:
    if not setup.admission:
        return
    if webhook is None:
        raise HarnessError("admission: needs a webhook: section (the process that serves it)")
    for configuration in setup.admission:
        pointed = manifests.point_admission(configuration, webhook.reach, setup.config.webhook)
        kind = "validating" if configuration["kind"].startswith("Validating") else "mutating"
        answer = cluster.http.post(
            f"/apis/admissionregistration.k8s.io/v1/{kind}webhookconfigurations", json=pointed
        )
        if answer.status_code >= 300:
            raise HarnessError(
                f"admission: the API server refused {configuration['metadata'].get('name')}: "
                f"{answer.json().get('message', answer.text)}"
            )


def _not_replayed(source: cluster_source.Source | None) -> dict[str, dict[str, int]]:
    """What ``--max-objects`` left out of the replay, per CRD (report.json)."""
    if source is None:
        return {}
    cap = source.capture.max_objects or 0
    return {
        crd: {"replayed": replayed, "held": held, "max_objects": cap}
        for crd, (replayed, held) in source.capture.truncated.items()
    }


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    run = config.stash.get(RUN, None)
    if run is None:
        _report_not_started(terminalreporter, config)
        return
    ctx = run.ctx
    notes = []
    if len(ctx.config.kubernetes) > 1 and not ctx.kubernetes_path:
        notes.append(
            "kubernetes-upgrade runs in the gate's run on the oldest listed version; this run "
            "gated its version on its own"
        )
    if ctx.cluster.etcd is None:
        notes.append(
            f"stored bytes not proven: {ctx.cluster.etcd_unavailable} (checks that need etcd "
            "say 'not proven')"
        )
    kubernetes = ctx.cluster.kubernetes or "(existing cluster)"
    if ctx.kubernetes_path and "kubernetes-upgrade" in {r.check for r in ctx.results.values()}:
        later = ", ".join(r.kubernetes for r in ctx.kubernetes_path[1:])
        kubernetes = f"{ctx.kubernetes_path[0].kubernetes}, then upgraded in place to {later}"
    deciding = time.perf_counter()
    results = run.decide_all()
    setup = config.stash[SETUP]
    previous_not_evaluated = ctx.previous_not_evaluated
    if setup.shard is not None:  # what a phase touched of releases it holds nothing of
        skipped = shards.nothing_of(setup.releases)
        results = [r for r in results if r.subject not in skipped]
        if len(ctx.releases) > 1 and not ctx.releases[-2].crds:
            previous_not_evaluated = ""  # none of its CRDs: no debt of it to know here
    found = [c for t in sorted(ctx.changes) for c in ctx.changes[t]]
    hazards = list(ctx.hazards.values())
    refused_examples = dict(ctx.refused_examples)
    answer: list[str] = []
    objects_to_fix: dict[str, str] = {}
    if ctx.redaction is not None and setup.source is not None:
        for change in [*found, *ctx.pair_changes]:
            change.evidence = ctx.redaction.text(change.evidence)
        hazards = [ctx.redaction.text(h) for h in hazards]
        refused_examples = {k: ctx.redaction.text(v) for k, v in refused_examples.items()}
        answer = [
            ctx.redaction.text(line)
            for line in operator.answer(
                setup.source.capture,
                ctx.candidate,
                results,
                ctx.object_findings,
                setup.source.untouched(),
                ctx.cluster.kubernetes or "",
                ctx.writes_refused,
            )
        ]
        fixes = operator.fix_list(ctx.object_findings, ctx.writes_refused)
        objects_to_fix = {k: ctx.redaction.text(v) for k, v in fixes.items()}
    ctx.timings["reporting: decisions gathered"] = round(time.perf_counter() - deciding, 2)
    gate_report = report.Report(
        results,
        kubernetes,
        refused=dict(ctx.refused),
        notes=notes,
        timings=ctx.timings,
        refused_examples=refused_examples,
        stored_after=ctx.stored_after,
        changes=found,
        ignored={t: dict(c) for t, c in ctx.ignored_documentation.items() if c},
        pair_changes=ctx.pair_changes,
        hazards=hazards,
        debt=ctx.debt,
        debt_note="; ".join(filter(None, [previous_not_evaluated, *ctx.debt_unknowable])),
        accepted=ctx.config.accept_not_proven,
        answer=answer,
        objects_to_fix=objects_to_fix,
        not_replayed=_not_replayed(setup.source),
        objects_made=ctx.screening.as_json(),
        not_judged_locally=ctx.screening.off,
    )
    if setup.shard is not None:  # the whole report as data, for gate-merge
        gate_report.shard = {**setup.shard, "data": stored.as_data(gate_report)}
    directory = report.write(Path(config.getoption("--gate-artifacts")), gate_report)
    terminalreporter.section("crdharness upgrade gate")
    summary.write(
        terminalreporter.write_line,
        ctx,
        results,
        gate_report,
        summary.Shown(kubernetes, answer, notes, found, directory),
        verbose=config.getoption("verbose") > 0,
    )


def _report_not_started(terminalreporter, config: pytest.Config) -> None:
    """The cluster, the binaries or the webhook could not start: "not run" once (report.md,
    report.json), never a FAIL per check; the CLI prints the cause in one line, exit 3."""
    setup = config.stash.get(SETUP, None)
    cause = config.stash.get(NOT_STARTED, None)
    if setup is None or cause is None:
        return
    planned = [f"{c.check} [{c.subject}]" for c in setup.checks]
    directory = report.write_not_run(
        Path(config.getoption("--gate-artifacts")), cause, planned, setup.shard
    )
    terminalreporter.write_line(f"report: {directory}/report.md (not run)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A check whose setup failed before the gate's run existed: the gate could not start.
    The cause is kept and the session stops there: the other checks would fail the same."""
    outcome = yield
    made: pytest.TestReport = outcome.get_result()
    config = item.config
    if call.when != "setup" or not made.failed or config.stash.get(RUN, None) is not None:
        return
    if SETUP not in config.stash or NOT_STARTED in config.stash:
        return
    crash = getattr(made.longrepr, "reprcrash", None)
    cause = crash.message if crash is not None else str(made.longrepr).strip().splitlines()[-1]
    cause = cause.removeprefix("Failed: ").removeprefix("crdharness gate: ")
    config.stash[NOT_STARTED] = cause.removeprefix("crdharness: ").strip()
    item.session.shouldstop = "the gate could not start"
