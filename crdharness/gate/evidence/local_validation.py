"""Whether the API server would accept an object at creation, answered locally by the API
server's own validation code (``crdharness/gate/validator``, a small Go program built on first
use): the structural schema, its OpenAPI validation (``allOf``/``oneOf``/``anyOf``/``not``,
formats), list types, embedded resources, and the CEL rules (``x-kubernetes-validations``)
with Kubernetes' libraries and cost budget. Transition rules (``oldSelf``) are skipped as a
create skips them.

It only decides what is worth sending: the real API server stays the judge. One process
serves a whole gate run over JSON lines; it ends when its stdin closes, so a parent that dies
ends it too, and ``LocalValidator`` (a context manager) always stops it.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import orjson

from crdharness.binaries import validator as validator_build
from crdharness.errors import HarnessError
from crdharness.gate.api import encoded
from crdharness.processes import identity, kill_if_same
from crdharness.progress import Reporter, to_stderr

# Go's collector at its default (GOGC=100) took a third of the validator's CPU; collecting at
# four times its heap's growth: upjet shard 1/8 19 -> 12.5 CPU-s, peak 130 -> 270 MB; the whole
# release 204 -> 127 CPU-s, peak 0.8 -> 1.9 GB (kube-apiserver's is 7.9). A GOGC the caller
# set is kept (GOGC=100 for the old trade).
GOGC = "400"

CEL = "cel"  # the source of an error a CEL rule gave


@dataclass(frozen=True)
class FieldError:
    """One reason the API server would refuse an object."""

    field: str  # "spec.port"
    type: str  # the field error's type: FieldValueInvalid, FieldValueRequired, ...
    message: str  # the rule's message (or "failed rule: ..."), or the schema's words
    source: str  # schema, cel, list-type, embedded-resource
    rule: str = ""  # a CEL rule's text
    rule_at: str = ""  # the schema node the rule is on ("spec.stops[]", "spec.labels[*]")

    @property
    def who(self) -> str:
        """What refused, as a report names it: the rule's text, or the schema's check."""
        if self.source == CEL:
            return f"CEL rule at {self.field or '<root>'}: {self.rule}"
        return f"{self.source} at {self.field or '<root>'}: {self.message}"


class LocalValidator:
    """The validator process: ``load(crd)`` then ``validate(crd, version, objects)``."""

    def __init__(self, binary: Path | None = None, report: Reporter = to_stderr):
        self._binary = binary
        self._report = report
        self._process: subprocess.Popen | None = None
        self._identity: tuple[int, float] | None = None  # (pid, start time), to stop it
        self._stderr: tempfile._TemporaryFileWrapper | None = None
        self._loaded: dict[str, str] = {}  # CRD name -> its manifest's JSON, as loaded
        self._current: dict[str, dict] = {}  # CRD name -> the manifest last loaded for it
        # one conversation at a time: a load and the validation at it are not interleaved
        self._lock = threading.RLock()

    def __enter__(self) -> LocalValidator:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        binary = self._binary or validator_build.validator_binary(self._report)
        # kept open for the process's life (closed by stop), so no ``with``
        self._stderr = tempfile.NamedTemporaryFile(prefix="crdvalidate-", suffix=".log")  # noqa: SIM115
        self._process = subprocess.Popen(
            [str(binary)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            start_new_session=True,  # a Ctrl-C reaches the gate, which stops it
            env={**os.environ, "GOGC": os.environ.get("GOGC", GOGC)},
        )
        self._identity = identity(self._process.pid)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            try:
                if process.stdin:
                    process.stdin.close()  # its cue to end
                process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                if self._identity is not None:
                    kill_if_same(*self._identity)
            finally:
                if process.stdout:
                    process.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _ask(self, request: dict) -> dict:
        process = self._process
        if process is None or process.stdin is None or process.stdout is None:
            raise HarnessError("the local CRD validator is not running")
        with self._lock:
            try:
                process.stdin.write(encoded(request).decode() + "\n")
                process.stdin.flush()
                line = process.stdout.readline()
            except OSError:
                line = ""
        if not line:
            raise HarnessError(f"the local CRD validator stopped: {self._stderr_tail()}")
        answer = orjson.loads(line)
        if "error" in answer:
            raise HarnessError(f"the local CRD validator: {answer['error']}")
        return answer

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return "(no output)"
        text = Path(self._stderr.name).read_text(errors="replace").strip()
        return text.splitlines()[-1] if text else "(no output)"

    def load(self, crd: dict) -> str:
        """Load a whole CRD manifest (again only when it changed); its name."""
        name = str(crd["metadata"]["name"])
        if self._current.get(name) is crd:  # the same manifest as last time: no dump
            return name
        text = json.dumps(crd, sort_keys=True)
        if self._loaded.get(name) != text:
            self._ask({"op": "load", "crd": crd})
            self._loaded[name] = text
        self._current[name] = crd
        return name

    def validate(
        self, crd: dict, version: str, manifests: list[dict], keep_status: bool = False
    ) -> list[list[FieldError]]:
        """For each whole object (apiVersion, kind, metadata and its fields) of ``crd`` at
        ``version``: why the API server would refuse its creation (empty: it would accept).
        ``keep_status``: its status judged too, as its write through the status subresource
        after the create judges it (a CRD without that subresource judges it at creation)."""
        if not manifests:
            return []
        with self._lock:
            name = self.load(crd)
            answer = self._ask(
                {
                    "op": "validate",
                    "crd": name,
                    "version": version,
                    "objects": manifests,
                    "keep_status": keep_status,
                }
            )
        return [[FieldError(**error) for error in result["errors"]] for result in answer["results"]]
