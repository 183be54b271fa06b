"""Order of a run: slow tests first, fed to xdist workers one at a time."""

import os
import subprocess

from tests.inner_session import inner_pytest

TESTS = """
import os

import pytest

def test_quick():
    pass

def test_with_controllers(controllers):
    pass

@pytest.mark.slow
def test_marked_slow():
    pass

def test_scheduling(request):
    assert request.config.option.maxschedchunk == int(os.environ["EXPECTED_CHUNK"])

def test_with_own_control_plane(own_control_plane):
    pass
"""


def collected(tmp_path, *extra: str) -> list[str]:
    done = subprocess.run(
        inner_pytest(tmp_path, TESTS, "--collect-only", *extra),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [line.split("::")[1] for line in done.stdout.splitlines() if "::" in line]


def test_slow_tests_come_first_each_group_in_its_own_order(tmp_path):
    assert collected(tmp_path) == [
        "test_with_controllers",
        "test_marked_slow",
        "test_with_own_control_plane",
        "test_quick",
        "test_scheduling",
    ]


def scheduling_test_passes(tmp_path, expected_chunk: int, *extra: str) -> bool:
    done = subprocess.run(
        inner_pytest(tmp_path, TESTS, "-k", "test_scheduling", *extra),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "EXPECTED_CHUNK": str(expected_chunk)},
    )
    return done.returncode == 0


def test_xdist_hands_out_one_test_at_a_time_unless_told_otherwise(tmp_path):
    assert scheduling_test_passes(tmp_path, 1)
    assert scheduling_test_passes(tmp_path, 3, "--maxschedchunk", "3")
    assert not scheduling_test_passes(tmp_path, 3)  # the check itself can fail
