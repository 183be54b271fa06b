"""nox sessions: `nox -s e2e` is the main job, `nox -s tests` runs every test.

Arguments after `--` go to pytest, e.g. `nox -s e2e -- --k8s-version 1.36 -k crontab`.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nox

sys.path.insert(0, str(Path(__file__).parent))
from crdharness.binaries.versions import SUPPORTED  # stdlib-only: importable before install

nox.options.sessions = ["e2e"]
nox.options.reuse_venv = "yes"  # a second run starts fast; `nox -R` skips installs too
nox.options.error_on_missing_interpreters = True

ROOT = Path(__file__).parent
ARTIFACTS = ROOT / "artifacts"
SUPPORTED_MINORS = [release.minor for release in SUPPORTED]


def _k8s_version(session: nox.Session) -> list[str]:
    """The --k8s-version among the pytest arguments, to build the same binaries first."""
    args = list(session.posargs)
    for i, arg in enumerate(args):
        if arg == "--k8s-version" and i + 1 < len(args):
            return ["--k8s-version", args[i + 1]]
        if arg.startswith("--k8s-version="):
            return ["--k8s-version", arg.split("=", 1)[1]]
    return []


def _backend(session: nox.Session) -> str:
    args = list(session.posargs)
    for i, arg in enumerate(args):
        if arg.startswith("--cluster="):
            return arg.split("=", 1)[1]
        if arg == "--cluster" and i + 1 < len(args):
            return args[i + 1]
    return "local"


# The e2e suite's default parallelism. Its tests mostly wait on the API server (it sleeps 2 s
# before the first create in a CRD made less than 2 s ago), so more workers than cores pay
# off; they share one control plane (see crdharness.backends.sharing). Measured in `nox -s bench`.
E2E_WORKERS = "6"


# The harness's own tests in parallel: most start control planes of their own (a gate run
# each) and wait on them, so three workers keep two cores busy. worksteal: a worker that runs
# out takes queued tests from a busy one (plain `load` left one worker with a tail of slow
# gate runs, 15 minutes alone in a trial run).
TESTS_WORKERS = "3"


def _parallel(session: nox.Session, workers: str = E2E_WORKERS, dist: str = "load") -> list[str]:
    """``-n workers --dist dist`` unless the arguments choose (``-n 0`` runs serially)."""
    args = list(session.posargs)
    chosen = any(
        a in ("-n", "--numprocesses", "no:xdist") or a.startswith(("-n", "--numprocesses="))
        for a in args
    )
    return [] if chosen else ["-n", workers, "--dist", dist]


def _install(session: nox.Session) -> None:
    session.install("-e", ".[test]")
    # Python caches compiled modules unless PYTHONDONTWRITEBYTECODE is set, as it is on some
    # CI machines and container images; then every xdist worker, webhook and guardian compiles
    # the harness and rewrites the tests again (~0.6 s of CPU each, ~2 s of a parallel run's
    # start). The caches go to __pycache__ directories, which git ignores.
    session.env["PYTHONDONTWRITEBYTECODE"] = ""


def _prepare_binaries(session: nox.Session, for_e2e: bool = True) -> None:
    # Builds (minutes, the first time) print their progress here, before pytest starts. The
    # e2e suite also needs kube-controller-manager and the neighbouring minor's kube-apiserver
    # (for the upgrade and rollback scenarios).
    extra = ["--controller-manager", "--upgrade-pair"] if for_e2e else []
    session.run("python", "-m", "crdharness", "binaries", *_k8s_version(session), *extra)


def _prepare_first_binaries(session: nox.Session) -> None:
    # Only the session's own version, before pytest starts: the suite's plugin builds what a
    # few tests need (kube-controller-manager, the neighbouring minor) in the background and
    # runs those tests last (crdharness.pytest_plugin.builds), so the first test runs minutes
    # sooner on a fresh machine.
    _prepare_binaries(session, for_e2e=False)


def _pytest(session: nox.Session, name: str, *args: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    session.run(
        "python",
        "-m",
        "pytest",
        *args,
        f"--junitxml={ARTIFACTS / f'junit-{name}.xml'}",
        *session.posargs,
    )


@nox.session
def e2e(session: nox.Session) -> None:
    """The main job: the end-to-end suite against a cluster (local by default)."""
    _install(session)
    if _backend(session) == "local":  # kind and existing clusters bring their own servers
        _prepare_first_binaries(session)
    _pytest(session, "e2e", "e2e", *_parallel(session))


@nox.session
def tests(session: nox.Session) -> None:
    """Every test: the harness's unit tests, its teardown guarantees, the webhook and its
    image, and the e2e suite with the webhook as a process and as a container."""
    _install(session)
    _prepare_binaries(session)
    session.run("python", "-m", "crdharness", "image")
    _pytest(session, "tests", "tests", *_parallel(session, TESTS_WORKERS, "worksteal"))
    # The e2e suite as `nox -s e2e` runs it (in parallel), with each form of the webhook.
    _pytest(session, "e2e", "e2e", *_parallel(session))
    # ... the second time only the tests the webhook's form can change (the rest ran above).
    _pytest(
        session,
        "e2e-container",
        "e2e",
        "--webhook=container",
        "--webhook-tests-only",
        *_parallel(session),
    )


@nox.session
def gate(session: nox.Session) -> None:
    """The upgrade gate on your own CRDs and webhook:
    `nox -s gate -- path/to/gate.yaml [--cluster=...] [-- pytest arguments]`."""
    if not session.posargs:
        session.error("name the gate file: nox -s gate -- path/to/gate.yaml")
    _install(session)
    if _backend(session) == "local":
        _prepare_binaries(session, for_e2e=False)
    session.run("python", "-m", "crdharness", "gate", *session.posargs)


@nox.session
def image(session: nox.Session) -> None:
    """Build the webhook image (and, where no registry answers, a local Debian base)."""
    _install(session)
    session.run("python", "-m", "crdharness", "image")


@nox.session
def unit(session: nox.Session) -> None:
    """Unit tests only: no cluster, no binaries, a few seconds."""
    _install(session)
    _pytest(session, "unit", "tests", "-m", "not e2e and not container")


@nox.session
@nox.parametrize("k8s", SUPPORTED_MINORS)
def e2e_matrix(session: nox.Session, k8s: str) -> None:
    """The e2e suite on each supported Kubernetes version."""
    _install(session)
    session.env["CRDHARNESS_K8S_VERSION"] = k8s
    _prepare_first_binaries(session)
    _pytest(session, f"e2e-{k8s}", "e2e", *_parallel(session))


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint and formatting), mypy (crdharness/ and webhook_image/, the protocols
    against their implementations; configured in pyproject.toml) and actionlint (the GitHub
    workflow, built with Go)."""
    session.install("-e", ".[test,lint]")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")
    session.run(
        "go",
        "run",
        "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12",
        ".github/workflows/e2e.yml",
        external=True,
    )


@nox.session
def bench_webhook(session: nox.Session) -> None:
    """Webhook throughput (objects/s) for reviews of 1, 100 and 1000 objects; writes
    artifacts/bench/webhook.json."""
    _install(session)
    session.run("python", "-m", "benchmarks.webhook_throughput", *session.posargs)


@nox.session
def bench_gate(session: nox.Session) -> None:
    """The upgrade gate: the 2-version CronTab with 100 generated objects per version (median
    of 3 runs), and a failing 3-version run against its passing twin; writes
    artifacts/bench/gate.json."""
    _install(session)
    _prepare_binaries(session, for_e2e=False)
    session.run("python", "-m", "benchmarks.gate", *session.posargs)


@nox.session
def bench_gate_many(session: nox.Session) -> None:
    """The gate on generated releases of N = 10, 100 and 1,000 CRDs of our own (a known share
    documentation-only, a few real breaks planted): seconds per CRD, where the time goes, peak
    memory per kind of process; `-- --counts 10` for a quick run, `-- --shards 2` to also run
    and merge shards; writes artifacts/bench/gate_many.json."""
    _install(session)
    _prepare_binaries(session, for_e2e=False)
    session.run("python", "-m", "benchmarks.gate_many", *session.posargs)


@nox.session
def bench_from_cluster(session: nox.Session) -> None:
    """``gate --from-cluster`` on a second local control plane holding 1,000 and 10,000
    objects (every 50th refused by the candidate): wall time, objects per second, and whether
    exactly the refused ones were named, and the peak memory of the gate's process tree (its
    Python, kube-apiserver, etcd); writes artifacts/bench/from_cluster.json."""
    _install(session)
    _prepare_binaries(session, for_e2e=False)
    session.run("python", "-m", "benchmarks.from_cluster", *session.posargs)
    session.run("python", "-m", "benchmarks.report")


@nox.session
def bench_first_run(session: nox.Session) -> None:
    """First contact: `nox -s e2e` from empty binary and Go caches, time to the first passing
    test and to the end, then a later run; `-- --up-front` builds everything first (as before
    the background build); `-- --load` keeps every core busy beside the run (a busy laptop or
    CI runner). Writes artifacts/bench/first_run*.json."""
    _install(session)
    session.run("python", "-m", "benchmarks.first_run", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: control-plane start-to-ready and peak memory, webhook throughput (and side by
    side with agnhost), LIST and migration scaling, whole-suite wall time serial and parallel.
    Figures go to artifacts/bench/ (JSON, PNG); artifacts/bench/results.md gathers them."""
    _install(session)
    session.install("matplotlib>=3.7,<4")
    _prepare_binaries(session)
    session.run("python", "-m", "benchmarks.control_plane")
    session.run("python", "-m", "benchmarks.webhook_throughput", "--clients", "1", "4")
    session.run("python", "-m", "benchmarks.agnhost_compare")
    if shutil.which("wrk"):
        session.run("python", "-m", "benchmarks.agnhost_compare", "--generator", "wrk")
    else:
        session.warn("wrk is not installed (apt-get install wrk): the wrk comparison is left out")
    session.run("python", "-m", "benchmarks.scaling")
    session.run("python", "-m", "benchmarks.scaling", "--no-watch-cache")
    session.run("python", "-m", "benchmarks.suite")
    session.run("python", "-m", "benchmarks.gate")
    session.run("python", "-m", "benchmarks.migration")
    session.run("python", "-m", "benchmarks.report")


@nox.session
def sabotage(session: nox.Session) -> None:
    """Check the suite itself: each deliberate fault must make some test fail.
    Writes artifacts/sabotage.md."""
    _install(session)
    _prepare_binaries(session)
    session.run("python", "-m", "crdharness", "sabotage", *session.posargs)


@nox.session
def coverage(session: nox.Session) -> None:
    """Which catalogue behaviours the tests cover, and why the others are not."""
    _install(session)
    session.run("python", "-m", "crdharness", "coverage", *session.posargs)


@nox.session
def reliability(session: nox.Session) -> None:
    """The whole e2e suite 20 times back to back (`-- --runs N`); after each run, nothing may
    be left behind. Writes artifacts/bench/reliability-repeat.json."""
    _reliability(session, "repeat")


@nox.session
def interrupts(session: nox.Session) -> None:
    """SIGINT, SIGTERM and SIGKILL to the test process at random moments; afterwards nothing
    may be left running and the next run must pass."""
    _reliability(session, "interrupt")


def _reliability(session: nox.Session, mode: str) -> None:
    _install(session)
    _prepare_binaries(session)
    # As `nox -s e2e` runs the suite: in parallel, unless pytest arguments follow `--`.
    suite_args = [] if "--" in session.posargs else ["--", "-n", E2E_WORKERS]
    session.run("python", "-m", "benchmarks.reliability", mode, *session.posargs, *suite_args)
    session.run("python", "-m", "benchmarks.report")


@nox.session
def webhook_soak(session: nox.Session) -> None:
    """The webhook under concurrent load with malformed requests mixed in (`-- --seconds N`):
    no crash, no hang, nothing lost, memory stable. Writes artifacts/bench/webhook-soak.json."""
    _install(session)
    session.run("python", "-m", "benchmarks.webhook_soak", *session.posargs)
    session.run("python", "-m", "benchmarks.report")
