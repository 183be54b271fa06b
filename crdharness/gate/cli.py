"""``python -m crdharness gate GATE.yaml [options] [-- pytest arguments]``.

Runs the checks as pytest tests (JUnit, ``-k``, ``--keep-cluster``, the failure bundle work
as usual), once per Kubernetes version the gate file lists. Exit status: 0 when every check
passed, non-zero otherwise.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from crdharness import paths
from crdharness.errors import HarnessError
from crdharness.gate import gate_file

HERE = Path(__file__).resolve().parent


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("gate_file", help="the gate file (YAML)")
    parser.add_argument("--cluster", default="local", help="local (default), kind or existing")
    parser.add_argument("--k8s-version", default=None, help="overrides the file's `kubernetes:`")
    parser.add_argument(
        "--artifacts",
        default="artifacts/gate",
        help="where everything the run writes goes (default: ./artifacts/gate)",
    )
    parser.add_argument("pytest_args", nargs="*", help="after --: passed on to pytest")


def run(args: argparse.Namespace) -> int:
    config = gate_file.load(args.gate_file)  # a bad file fails here, in one line
    if any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in args.pytest_args):
        # The checks share one scenario on one cluster (history, then candidate): split
        # over workers, each would replay it all and none would hold the whole report.
        raise HarnessError("the gate runs its checks in order on one cluster: drop -n")
    versions: list[str | None] = (
        [args.k8s_version] if args.k8s_version else [*config.kubernetes] or [None]
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
            f"--confcutdir={HERE}",
            f"--rootdir={Path.cwd()}",
            "-c",
            str(HERE / "pytest.ini"),
            f"--gate-config={config.source}",
            f"--gate-artifacts={artifacts}",
            f"--junitxml={artifacts / 'junit.xml'}",
            f"--cluster={args.cluster}",
            "--log-lines=0",  # kube-apiserver's log goes to the failure bundle, not the checks
            "-q",
            *([f"--k8s-version={version}"] if version else []),
            *args.pytest_args,
        ]
        code = pytest.main(argv)
        status = status or int(code)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="crdharness gate")
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except HarnessError as exc:
        print(f"crdharness gate: error: {exc}")
        return 2
