"""The plugin alone is enough: the example project's tests (examples/plugin), copied out of
this repository so that none of its conftest files apply, pass with ``-p crdharness.pytest_plugin``
and nothing else."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e]

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "plugin"


def test_example_project_passes_with_only_the_plugin(tmp_path, request):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project)
    (project / "pytest.ini").write_text("[pytest]\n")  # its own rootdir: no conftest of ours
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "crdharness.pytest_plugin",
        "-p",
        "no:cacheprovider",
        "-v",
        "--strict-markers",
    ]
    k8s_version = request.config.getoption("--k8s-version")
    if k8s_version:
        command += ["--k8s-version", k8s_version]
    done = subprocess.run(
        command,
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTEST_ADDOPTS": ""},
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "3 passed" in output, output
    for test in (
        "test_written_at_the_old_version_read_at_the_new",
        "test_the_deprecated_version_warns",
        "test_every_version_validates_with_its_own_schema",
    ):
        assert f"{test} PASSED" in output, output


FAILING_TEST = """
import pytest

@pytest.mark.behaviour("SV-03")
def test_inner():
    assert False, "failing on purpose"
"""


def test_a_failure_names_its_behaviours_with_their_claims(tmp_path):
    from crdharness.reports.coverage import catalogue
    from tests.inner_session import run_inner_pytest

    claim = next(b.summary for b in catalogue() if b.id == "SV-03")
    done = run_inner_pytest(tmp_path, FAILING_TEST)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "behaviours this test covers" in done.stdout, done.stdout
    assert f"SV-03: {claim}" in done.stdout, done.stdout
