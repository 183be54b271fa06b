"""The user's webhook built from its Go source before it starts (``webhook.build``).

The gate's user never builds by hand: ``go build`` of the named main package, into the run's
own directory, and ``command`` names the result ``{binary}``. How long a build takes is the
machine's business, so it runs ``untimed`` and before the webhook's ``ready_timeout`` starts;
Go's own build cache (``GOCACHE``) makes every later build a link. ``go`` never downloads
another toolchain (``GOTOOLCHAIN=local``): a module that needs a newer Go says so.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

from crdharness.errors import HarnessError
from crdharness.gate.given.config import WebhookBuild
from crdharness.progress import to_stderr
from crdharness.untimed import untimed

OUTPUT_LINES = 20  # lines of go's own output shown when the build fails


def build(spec: WebhookBuild, binary: Path, log: Path) -> Path:
    """``go build -o binary`` in ``spec.go``, its output written to ``log`` (the webhook's
    own, which the failure bundle keeps); a failure is a ``HarnessError`` (the gate could not
    run) whose first line says why and what to do, followed by go's last lines."""
    go = shutil.which("go")
    if go is None:
        raise HarnessError(
            "webhook.build: the Go toolchain is missing (no `go` on PATH): install Go, or build "
            "the webhook yourself and name its binary in webhook.command instead of {binary}"
        )
    argv = [go, "build", "-o", str(binary), *spec.flags, "."]
    shown = shlex.join(["go", "build", *spec.flags, "."])
    to_stderr(f"gate: building the webhook: {shown} (in {spec.go})")
    env = {**os.environ, "GOTOOLCHAIN": "local"}
    with untimed(f"the webhook's build ({spec.go})"):
        done = subprocess.run(
            argv, cwd=spec.go, env=env, capture_output=True, text=True, check=False
        )
    output = (done.stdout + done.stderr).strip()
    with log.open("a") as out:
        out.write(f"$ {shlex.join(argv)}  (in {spec.go})\n{output}\n")
    if done.returncode != 0:
        tail = "\n".join(f"    {line}" for line in output.splitlines()[-OUTPUT_LINES:])
        raise HarnessError(
            f"webhook.build: `{shown}` in {spec.go} failed (exit {done.returncode}): fix the "
            f"build (go's output below)\n{tail}"
        )
    return binary
