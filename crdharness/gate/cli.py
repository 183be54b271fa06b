"""``python -m crdharness gate GATE.yaml [options] [-- pytest arguments]``.

Runs the checks as pytest tests (JUnit, ``-k``, ``--keep-cluster``, the failure bundle work
as usual), once per Kubernetes version the gate file lists.

Exit status: 0 when every planned check passed (or a gate file's ``accept_not_proven`` accepts
it undecided), 1 on any finding, 2 when some check could not decide ("not proven"), 3 when the
gate could not run to a report (a bad gate file or arguments, an interrupted run). Over several
Kubernetes versions the worst counts: 1, then 3, then 2.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import pytest

from crdharness import paths
from crdharness.errors import HarnessError
from crdharness.gate.given import cluster_source, gate_file, source_http
from crdharness.gate.given.config import FromCluster, GateConfig

HERE = Path(__file__).resolve().parent
PASSED, FAILED, NOT_PROVEN, NOT_RUN = 0, 1, 2, 3
BY_VERDICT = {"PASS": PASSED, "FAIL": FAILED, "NOT PROVEN": NOT_PROVEN}
SEVERITY = (PASSED, NOT_PROVEN, NOT_RUN, FAILED)  # least to most severe


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("gate_file", help="the gate file (YAML)")
    parser.add_argument("--cluster", default="local", help="local (default), kind or existing")
    parser.add_argument("--k8s-version", default=None, help="overrides the file's `kubernetes:`")
    parser.add_argument(
        "--artifacts",
        default="artifacts/gate",
        help="where everything the run writes goes (default: ./artifacts/gate)",
    )
    parser.add_argument(
        "--shard",
        metavar="K/N",
        default=None,
        help="gate only the K-th of N shares of the CRDs (an API group stays together; shares "
        "balanced by each CRD's versions and schema size), one CI matrix job each; "
        "`crdharness gate-merge DIR...` makes their reports one",
    )
    parser.add_argument(
        "--watch-cache",
        action="store_true",
        help="start the local kube-apiserver with its watch cache (default: without: every "
        "read and write the gate makes goes to etcd as with it, at about a quarter less "
        "kube-apiserver CPU, and the webhook sees no background conversions)",
    )
    parser.add_argument(
        "--annotations",
        choices=("github",),
        default=None,
        help="also print one CI annotation per finding, on the candidate CRD's line of the "
        "field it names (github: ::error workflow commands; paths relative to the working "
        "directory)",
    )
    source = parser.add_argument_group(
        "from a running cluster",
        "gate the upgrade of one cluster: its CRDs as installed (with status.storedVersions) "
        "and its objects, read with GET and LIST only, replayed on the local control plane "
        "(the same as `from_cluster:` in the gate file)",
    )
    source.add_argument("--from-cluster", metavar="KUBECONFIG", help="the cluster's kubeconfig")
    source.add_argument("--context", default=None, help="the kubeconfig context to read")
    source.add_argument(
        "--namespace",
        action="append",
        default=[],
        help="read objects in this namespace only (repeatable; default: all namespaces)",
    )
    source.add_argument(
        "--max-objects",
        type=int,
        default=None,
        help="at most this many objects replayed per CRD (default: every object; the "
        "answer's first line says how many a cap left out)",
    )
    source.add_argument(
        "--show-values",
        action="store_true",
        help="the report shows the objects' values (never those of Secret-like fields)",
    )
    source.add_argument(
        "--print-rbac",
        action="store_true",
        help="print the read-only ClusterRole the gate needs on the cluster, and exit",
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="judge the CRDs the release did not change (documentation only) again too, as "
        "`full: true` in the gate file does (default: each is listed, not judged again)",
    )
    parser.add_argument("pytest_args", nargs="*", help="after --: passed on to pytest")


def run(args: argparse.Namespace) -> int:
    config = gate_file.load(args.gate_file)  # a bad file fails here, in one line
    if any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in args.pytest_args):
        # The checks share one scenario on one cluster (history, then candidate): split
        # over workers, each would replay it all and none would hold the whole report.
        raise HarnessError("the gate runs its checks in order on one cluster: drop -n")
    if args.print_rbac:
        print(cluster_source.rbac(_candidate_crds(config)), end="")
        return PASSED
    wanted = _from_cluster(args, config.from_cluster)
    read = None
    if args.shard is not None:
        if wanted is not None:
            raise HarnessError("--shard splits a release history's CRDs: not with --from-cluster")
        read = _share_history(args, config)
        if read is None:
            return PASSED
    if wanted is None:
        return _run(args, config, read=read)
    # Everything of the source's that the run holds (credentials, the objects' replay, the
    # webhook's records) lives under here, and goes with it.
    with tempfile.TemporaryDirectory(prefix="crdharness-source-") as scratch:
        http = source_http.connect(wanted.kubeconfig, wanted.context, Path(scratch) / "credentials")
        try:
            source = _read_source(http, wanted, config)
            same = _source_minor(source.capture.kubernetes)
            if same and not args.k8s_version and not config.kubernetes and not _env_version():
                # Replayed on the source's own minor where the harness has it: validation
                # ratcheting and defaulting differ between minors.
                args.k8s_version = same
                print(
                    f"crdharness gate: replaying on Kubernetes {same}, the source cluster's "
                    "own minor",
                    flush=True,
                )
            return _run(args, config, source, Path(scratch))
        finally:
            http.close()


def _read_source(
    http: source_http.ReadOnlyHttp, wanted: FromCluster, config: GateConfig
) -> cluster_source.Source:
    """What the gate reads of the source cluster, or a HarnessError (exit 3) in one line."""
    kubernetes = source_http.reach(http)  # one GET of /version: can it be read at all?
    context = source_http.context_name(wanted.kubeconfig, wanted.context)
    crds = sorted(_candidate_crds(config))
    captured = cluster_source.capture(
        http, context, crds, wanted.namespaces, wanted.max_objects, kubernetes
    )
    if not captured.crds:
        raise HarnessError(
            f"--from-cluster: the cluster (context {context}, {captured.server}) has none of "
            f"{', '.join(crds)} installed: nothing of it to upgrade (is this the right context?)"
        )
    print(f"crdharness gate: read {captured.describe()} (GET and LIST only)", flush=True)
    return cluster_source.Source(captured, http, wanted.show_values)


def _source_minor(git_version: str) -> str | None:
    """The supported minor a source's ``/version`` names (None if the harness has none)."""
    from crdharness.binaries import versions

    minor = ".".join(git_version.removeprefix("v").split(".")[:2])
    return next((r.minor for r in versions.SUPPORTED if r.minor == minor), None)


def _env_version() -> str | None:
    from crdharness.binaries import versions

    return os.environ.get(versions.ENV_VAR)


def _candidate_crds(config: GateConfig) -> dict[str, dict]:
    from crdharness.gate.given import manifests

    return manifests.load_history(config.crds[-1:], config.root)[0].crds


def _from_cluster(args: argparse.Namespace, given: FromCluster | None) -> FromCluster | None:
    """The source cluster: the command line's, over the gate file's ``from_cluster:``."""
    if args.from_cluster:
        given = FromCluster(Path(args.from_cluster).resolve())
    elif given is None:
        if args.context or args.namespace or args.max_objects or args.show_values:
            raise HarnessError(
                "--context, --namespace, --max-objects, --show-values need "
                "--from-cluster (or `from_cluster:` in the gate file)"
            )
        return None
    if args.context:
        given.context = args.context
    if args.namespace:
        given.namespaces = list(args.namespace)
    if args.max_objects is not None:
        if args.max_objects < 1:
            raise HarnessError("--max-objects must be 1 or more")
        given.max_objects = args.max_objects
    given.show_values = given.show_values or args.show_values
    return given


def _hypothesis_home() -> None:
    """Hypothesis keeps its caches (the Unicode tables it builds once) in ``.hypothesis/``
    of the working directory: the gate's go to the harness's cache instead, reused by the
    next run and never left in the user's checkout. (Its example database is off: every
    search is derandomized.)"""
    from hypothesis.configuration import set_hypothesis_home_dir

    from crdharness.binaries import cache

    set_hypothesis_home_dir(cache.cache_root() / "hypothesis")


def _run(
    args: argparse.Namespace,
    config: GateConfig,
    source: cluster_source.Source | None = None,
    scratch: Path | None = None,
    read=None,
) -> int:
    versions: list[str | None] = (
        [args.k8s_version] if args.k8s_version else [*config.kubernetes] or [None]
    )
    # A source cluster's objects never leave the run: no object in the failure bundle, and
    # pytest's temporary files (the webhook's records) in the run's scratch directory.
    private = (
        ["--failure-bundle=logs", f"--basetemp={scratch / 'pytest'}"]
        if source is not None and scratch is not None
        else []
    )
    status = 0
    for version in versions:
        artifacts = Path(args.artifacts).resolve()  # of the working directory, as documented
        if len(versions) > 1:
            artifacts = artifacts / f"k8s-{version}"
        # The failure bundle and transcripts go there too, never into the harness's checkout.
        os.environ[paths.ARTIFACTS_ENV] = str(artifacts)
        argv = [
            str(HERE / "test_gate.py"),
            "-p",
            "crdharness.pytest_plugin",
            "-p",
            "crdharness.gate.pytest_gate",
            "-p",
            "no:cacheprovider",
            # No assertion rewriting: the gate's checks fail through pytest.fail, and pytest
            # would otherwise parse and rewrite every module of every installed pytest
            # plugin's package on import (hypothesis, the harness: some 5 s of CPU per run
            # where bytecode is not written, and in every fresh virtualenv).
            "--assert=plain",
            f"--confcutdir={HERE}",
            f"--rootdir={Path.cwd()}",
            "-c",
            str(HERE / "pytest.ini"),
            f"--gate-config={config.source}",
            f"--gate-artifacts={artifacts}",
            f"--junitxml={artifacts / 'junit.xml'}",
            f"--cluster={args.cluster}",
            *watch_cache_options(args),
            "--log-lines=0",  # kube-apiserver's log goes to the failure bundle, not the checks
            "-q",
            # One screen: the verdict table and a short block per failure (the plugin's);
            # -v brings back pytest's own failure sections.
            *([] if _verbose(args.pytest_args) else ["--tb=no", "-rN"]),
            *([f"--k8s-version={version}"] if version else []),
            *(["--gate-full"] if args.full else []),
            *([f"--gate-shard={args.shard}"] if args.shard else []),
            *private,
            *args.pytest_args,
        ]
        (artifacts / "report.json").unlink(missing_ok=True)  # a verdict of this run only
        _hypothesis_home()
        plugins: list = [source] if source is not None else []
        if read is not None and version == versions[0]:
            plugins.append(read)  # the first session only: it may change what it was given
        code = exit_status(int(pytest.main(argv, plugins=plugins)), artifacts / "report.json")
        status = max(status, code, key=SEVERITY.index)
        not_run = _not_run_cause(artifacts / "report.json")
        if not_run:
            first, _, rest = not_run.partition("\n")
            print(f"crdharness gate: could not run: {first}", flush=True)
            if rest:
                print(rest, flush=True)
        if args.annotations and (artifacts / "report.json").is_file():
            print_annotations(artifacts / "report.json", config.crds[-1])
    return status


def watch_cache_options(args: argparse.Namespace) -> list[str]:
    """The pytest options for the local kube-apiserver's watch cache: off unless asked for.
    The gate judges conversion, validation and storage, in none of which the cache takes
    part; without it kube-apiserver spends about a quarter less CPU (six upjet CRDs: the
    same report, 64 s -> 54 s) and the webhook sees no conversions but the gate's own."""
    return ["--no-watch-cache"] if args.cluster == "local" and not args.watch_cache else []


def _share_history(args: argparse.Namespace, config: GateConfig):
    """The history read (``manifests.ReadHistory``, for the session), or None for a share
    with no CRD (more shards than API groups): its report says so, and nothing starts. A
    bad ``--shard`` fails here, in one line."""
    from crdharness.gate.given import manifests
    from crdharness.gate.run import shards

    releases = manifests.load_history(config.crds, config.root, config.release_webhooks)
    meta = shards.meta(config, releases, shards.parse(args.shard))
    if meta["crds"]:
        return manifests.ReadHistory(releases)
    # Only here: pytest warns of modules (hypothesis) imported before it starts.
    from crdharness.gate.reporting import report, stored

    empty = report.Report([], "", accepted=config.accept_not_proven)
    empty.shard = {**meta, "data": stored.as_data(empty)}
    report.write(Path(args.artifacts).resolve(), empty)
    print(f"crdharness gate: shard {args.shard}: no CRD falls to this share: nothing to gate")
    return None


def merge_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directories", nargs="+", metavar="DIR", help="the shards' artifacts")
    parser.add_argument(
        "--artifacts",
        default="artifacts/gate",
        help="where the merged report goes (default: ./artifacts/gate)",
    )
    parser.add_argument(
        "--annotations",
        choices=("github",),
        default=None,
        help="also print one CI annotation per finding (as `gate --annotations`; reads the "
        "gate file the shards name)",
    )


def merge(args: argparse.Namespace) -> int:
    """``crdharness gate-merge DIR...``: the shards' reports made one, with one exit status."""
    from crdharness.gate.reporting import merge as merging

    shards = merging.load([Path(d) for d in args.directories])
    merged = merging.merge(shards)
    artifacts = Path(args.artifacts).resolve()
    status = merging.write(artifacts, merged, shards)
    for shard in shards:
        if shard.run is None:
            print(f"crdharness gate-merge: {shard.label} could not run: {shard.cause}")
    verdict = json.loads((artifacts / "report.json").read_text())["verdict"]
    print(f"crdharness gate-merge: {len(shards)} shards, verdict: {verdict}")
    print(f"report: {artifacts}/report.md")
    gate_file = next((Path(s.meta["gate_file"]) for s in shards if s.meta), None)
    if args.annotations and gate_file is not None and status != NOT_RUN:
        config = gate_file_for_merge(gate_file)
        print_annotations(artifacts / "report.json", config.crds[-1])
    return status


def gate_file_for_merge(path: Path) -> GateConfig:
    if not path.is_file():
        raise HarnessError(
            f"gate-merge --annotations: the shards' gate file {path} is not here: run the "
            "merge in the checkout the shards ran in"
        )
    return gate_file.load(str(path))


def print_annotations(report_file: Path, candidate: list[Path]) -> None:
    """One ``::error`` line per finding (GitHub turns them into annotations on the diff)."""
    import json

    from crdharness.gate.reporting import annotations

    report = json.loads(report_file.read_text())
    for annotation in annotations.from_report(report, candidate):
        print(annotation.github(Path.cwd()))


def _verbose(pytest_args: list[str]) -> bool:
    return any(a in ("-v", "-vv", "--verbose") or a.startswith("--tb") for a in pytest_args)


def _not_run_cause(report_file: Path) -> str | None:
    """Why the gate could not start, when its report says it did not run."""
    import json

    try:
        return json.loads(report_file.read_text()).get("not_run")
    except (OSError, ValueError):
        return None


def exit_status(pytest_code: int, report_file: Path) -> int:
    """The gate's exit status from its report's verdict; a run that ended without one (or
    that pytest stopped: usage error, interrupt) did not run."""
    if pytest_code not in (0, 1) or not report_file.is_file():
        return NOT_RUN
    import json

    try:
        verdict = json.loads(report_file.read_text()).get("verdict")
    except (OSError, ValueError):
        return NOT_RUN
    return BY_VERDICT.get(verdict, NOT_RUN)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="crdharness gate")
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except HarnessError as exc:
        print(f"crdharness gate: error: {exc}")
        return NOT_RUN
