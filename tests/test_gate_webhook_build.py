"""``webhook.build``: the gate builds the user's webhook before starting it, untimed (a
build's length is the machine's), into ``{binary}``; a build that cannot run or fails says
why in its first line, with the build's own output after it."""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest

from crdharness import untimed
from crdharness.errors import HarnessError
from crdharness.gate.given.config import WebhookBuild
from crdharness.gate.webhook import build

HELLO = 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello from the webhook") }\n'


def go_module(tmp_path: Path, main_go: str = HELLO) -> Path:
    """A Go module of one main package, no dependencies (builds offline)."""
    module = tmp_path / "webhook"
    module.mkdir()
    (module / "go.mod").write_text("module example.com/webhook\n\ngo 1.22\n")
    (module / "main.go").write_text(main_go)
    return module


@pytest.fixture
def paused() -> list[str]:
    """What ``untimed`` paused the timers for during the test."""
    seen: list[str] = []

    @contextmanager
    def pauser(what: str):
        seen.append(what)
        yield

    untimed.register(pauser)
    yield seen
    untimed.unregister(pauser)


def test_the_go_main_package_is_built_untimed_into_binary(tmp_path, paused):
    module = go_module(tmp_path)
    binary = tmp_path / "bin" / "webhook"
    log = tmp_path / "webhook.log"
    assert build.build(WebhookBuild(module), binary, log, tmp_path) == binary
    ran = subprocess.run([binary], capture_output=True, text=True, check=True)
    assert ran.stdout == "hello from the webhook\n"
    assert paused == ["the webhook's build (go build .)"]
    assert log.read_text().startswith("$ ") and f"(in {module})" in log.read_text()


def test_a_go_build_that_fails_says_so_with_gos_own_lines(tmp_path, paused):
    module = go_module(tmp_path, "package main\n\nfunc main() { notDeclared() }\n")
    with pytest.raises(HarnessError) as raised:
        build.build(WebhookBuild(module), tmp_path / "webhook", tmp_path / "log", tmp_path)
    first, *rest = str(raised.value).splitlines()
    assert first.startswith(f"webhook.build: `go build .` in {module} failed (exit 1)")
    assert any("undefined: notDeclared" in line for line in rest), rest
    assert paused  # failing or not, the build was untimed


def test_no_go_on_path_is_one_line_naming_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HarnessError, match="the Go toolchain is missing") as raised:
        build.build(WebhookBuild(go_module(tmp_path)), tmp_path / "w", tmp_path / "log", tmp_path)
    assert "\n" not in str(raised.value)


def test_the_projects_own_command_runs_in_the_workdir_and_writes_binary(tmp_path, paused):
    script = "printf '#!/bin/sh\\necho built in %s\\n' \"$PWD\" > {binary} && chmod +x {binary}"
    spec = WebhookBuild(command=("sh", "-c", script))
    binary = build.build(spec, tmp_path / "webhook", tmp_path / "log", tmp_path)
    assert (
        subprocess.run([binary], capture_output=True, text=True).stdout == f"built in {tmp_path}\n"
    )
    assert len(paused) == 1


def test_a_command_that_writes_no_binary_or_cannot_start_is_refused(tmp_path):
    with pytest.raises(HarnessError, match=r"wrote no program at \{binary\}"):
        build.build(
            WebhookBuild(command=("true", "{binary}")), tmp_path / "w", tmp_path / "log", tmp_path
        )
    with pytest.raises(HarnessError, match=r"webhook\.build\.command: cannot start 'no-such-make'"):
        build.build(
            WebhookBuild(command=("no-such-make", "{binary}")),
            tmp_path / "w",
            tmp_path / "log",
            tmp_path,
        )
