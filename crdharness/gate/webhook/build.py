"""The user's webhook built before it starts (``webhook.build``).

The gate's user never builds by hand: ``go build`` of the named main package (or the
project's own build command), into the run's own directory, and ``command`` names the result
``{binary}``. How long a build takes is the machine's business, so it runs ``untimed`` and
before the webhook's ``ready_timeout`` starts; Go's own build cache (``GOCACHE``) makes every
later build a link. ``go`` never downloads another toolchain (``GOTOOLCHAIN=local``): a module
that needs a newer Go says so.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

from crdharness.errors import HarnessError
from crdharness.gate.given.config import WebhookBuild, fill_placeholders
from crdharness.kubeconfig import CALLER_CLUSTER_VARIABLES
from crdharness.progress import to_stderr
from crdharness.untimed import untimed

OUTPUT_LINES = 20  # lines of go's own output shown when the build fails


def build(spec: WebhookBuild, binary: Path, log: Path, workdir: Path) -> Path:
    """``go build -o binary`` in ``spec.go`` (or ``spec.command`` in ``workdir``), its output
    written to ``log`` (the webhook's own, which the failure bundle keeps); a failure is a
    ``HarnessError`` (the gate could not run) whose first line says why and what to do,
    followed by the build's last lines."""
    # A build has no business with any cluster: the caller's is not handed on.
    withheld = ("KUBECONFIG", *CALLER_CLUSTER_VARIABLES)
    env = {k: v for k, v in os.environ.items() if k not in withheld} | {"GOTOOLCHAIN": "local"}
    if spec.go is not None:
        go = shutil.which("go")
        if go is None:
            raise HarnessError(
                "webhook.build: the Go toolchain is missing (no `go` on PATH): install Go, or "
                "build the webhook yourself and name its binary in webhook.command instead of "
                "{binary}"
            )
        argv = [go, "build", "-o", str(binary), *spec.flags, "."]
        shown, workdir = shlex.join(["go", "build", *spec.flags, "."]), spec.go
    else:
        argv = [fill_placeholders(word, {"binary": str(binary)}) for word in spec.command]
        shown = shlex.join(spec.command)
    to_stderr(f"gate: building the webhook: {shown} (in {workdir})")
    with untimed(f"the webhook's build ({shown})"):
        try:
            done = subprocess.run(
                argv, cwd=workdir, env=env, capture_output=True, text=True, check=False
            )
        except OSError as exc:
            raise HarnessError(
                f"webhook.build.command: cannot start {argv[0]!r}: {exc.strerror}"
            ) from None
    output = (done.stdout + done.stderr).strip()
    with log.open("a") as out:
        out.write(f"$ {shlex.join(argv)}  (in {workdir})\n{output}\n")
    tail = "\n".join(f"    {line}" for line in output.splitlines()[-OUTPUT_LINES:])
    if done.returncode != 0:
        raise HarnessError(
            f"webhook.build: `{shown}` in {workdir} failed (exit {done.returncode}): fix the "
            f"build (its output below)\n{tail}"
        )
    if not os.access(binary, os.X_OK):
        raise HarnessError(
            f"webhook.build: `{shown}` in {workdir} wrote no program at {{binary}} "
            f"({binary}): write the webhook there\n{tail}"
        )
    return binary
