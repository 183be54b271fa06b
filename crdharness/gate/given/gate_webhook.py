"""A gate file's ``webhook:``: the top-level one (the candidate's, and every release's that
names none) and a history entry's own (``crds[i].webhook``), read with the same keys and
checks; every problem names its key (``crds[0].webhook.comand: unknown key``)."""

from __future__ import annotations

import shlex

import yaml

from crdharness.gate.given.config import (
    WEBHOOK_PLACEHOLDERS,
    GateConfigError,
    WebhookBuild,
    WebhookSpec,
    fill_placeholders,
)
from crdharness.gate.given.yaml_reader import Reader

WEBHOOK_KEYS = {
    "command",
    "build",
    "image",
    "url",
    "ca",
    "workdir",
    "env",
    "args",
    "port",
    "cert_dir",
    "ready_timeout",
    "convert",
    "path",
    "review_versions",
    "latency_budget_ms",
}


BUILD_KEYS = {"go", "flags", "command"}


def webhook(reader: Reader, node, key: str = "webhook") -> WebhookSpec:
    """A ``webhook:`` mapping (the top-level one, or a release's own at ``key``)."""
    keys = reader.mapping(node, key, WEBHOOK_KEYS)
    forms = [k for k in ("command", "image", "url") if k in keys]
    if len(forms) != 1:
        problem = "needs exactly one of command, image, url" + (
            f" (found {', '.join(forms)})" if forms else ""
        )
        raise reader.fail(node, key, problem)
    spec = WebhookSpec()
    if "command" in keys:
        spec.command = words(reader, keys["command"], f"{key}.command")
    if "build" in keys:
        if "command" not in keys:
            raise reader.fail(keys["build"], f"{key}.build", f"needs {key}.command ({{binary}})")
        spec.build = _build(reader, keys["build"], f"{key}.build")
    for i, word in enumerate(spec.command or []):
        _check_webhook_placeholders(reader, keys["command"], f"{key}.command[{i}]", word, spec, key)
    if "image" in keys:
        spec.image = reader.scalar(keys["image"], f"{key}.image", str)
    if "url" in keys:
        spec.url = reader.scalar(keys["url"], f"{key}.url", str)
        if not spec.url.startswith("https://"):
            raise reader.fail(keys["url"], f"{key}.url", "must start with https://")
        if "ca" not in keys:
            raise reader.fail(node, f"{key}.ca", "missing: a url needs the CA of its certificate")
    if "ca" in keys:
        spec.ca = reader.path(keys["ca"], f"{key}.ca")
    if "workdir" in keys:
        spec.workdir = reader.path(keys["workdir"], f"{key}.workdir")
    if "env" in keys:
        env = reader.mapping(keys["env"], f"{key}.env", AnyKey())
        spec.env = {k: reader.scalar(v, f"{key}.env.{k}", str) for k, v in env.items()}
        for k, v in spec.env.items():
            _check_webhook_placeholders(reader, env[k], f"{key}.env.{k}", v, spec, key)
    if "args" in keys:
        spec.args = reader.strings(keys["args"], f"{key}.args")
    if "port" in keys:
        spec.port = reader.scalar(keys["port"], f"{key}.port", int)
    if "cert_dir" in keys:
        spec.cert_dir = reader.scalar(keys["cert_dir"], f"{key}.cert_dir", str)
    if "ready_timeout" in keys:
        spec.ready_timeout = reader.scalar(keys["ready_timeout"], f"{key}.ready_timeout", float)
    if "convert" in keys:
        spec.convert = reader.strings(keys["convert"], f"{key}.convert")
    if "path" in keys:
        spec.path = reader.scalar(keys["path"], f"{key}.path", str)
        if not spec.path.startswith("/"):
            raise reader.fail(keys["path"], f"{key}.path", "must start with /")
    if "latency_budget_ms" in keys:
        spec.latency_budget_ms = reader.scalar(
            keys["latency_budget_ms"], f"{key}.latency_budget_ms", float
        )
    if "review_versions" in keys:
        spec.review_versions = reader.strings(keys["review_versions"], f"{key}.review_versions")
    return spec


class AnyKey(set):
    """``known`` for mappings whose keys are free (environment variables)."""

    def __contains__(self, item) -> bool:
        return True


def _check_webhook_placeholders(
    reader: Reader, node, key: str, text: str, spec: WebhookSpec, where: str
) -> None:
    """A webhook's placeholders: those of every command, and ``{binary}`` with ``build``."""
    values = dict.fromkeys(WEBHOOK_PLACEHOLDERS, "")
    try:
        filled = fill_placeholders(text, {**values, "binary": "\0"})
    except GateConfigError as exc:
        raise reader.fail(node, key, str(exc)) from None
    if "\0" in filled and spec.build is None:
        raise reader.fail(node, key, f"{{binary}} needs {where}.build (what the gate builds first)")


def words(reader: Reader, node, key: str) -> list[str]:
    """A command: a list of words, or a string split as a shell would (never run by one)."""
    if isinstance(node, yaml.ScalarNode):
        try:
            split = shlex.split(reader.scalar(node, key, str))
        except ValueError as exc:
            raise reader.fail(node, key, f"cannot split: {exc}") from None
    else:
        split = reader.strings(node, key)
    if not split:
        raise reader.fail(node, key, "is empty")
    return split


def _build(reader: Reader, node, key: str) -> WebhookBuild:
    """``{go: DIR, flags: [...]}`` (the webhook's Go main package) or ``{command: ...}``
    (which writes ``{binary}``): built before the webhook starts."""
    keys = reader.mapping(node, key, BUILD_KEYS)
    if ("go" in keys) == ("command" in keys):
        raise reader.fail(node, key, "needs exactly one of go, command")
    if "command" in keys:
        if "flags" in keys:
            raise reader.fail(keys["flags"], f"{key}.flags", "only with go")
        split = words(reader, keys["command"], f"{key}.command")
        filled = []
        for i, word in enumerate(split):
            try:
                filled.append(fill_placeholders(word, {"binary": "\0"}))
            except GateConfigError as exc:
                raise reader.fail(keys["command"], f"{key}.command[{i}]", str(exc)) from None
        if not any("\0" in word for word in filled):
            raise reader.fail(keys["command"], f"{key}.command", "must write {binary}")
        return WebhookBuild(command=tuple(split))
    package = reader.path(keys["go"], f"{key}.go")
    if not package.is_dir():
        raise reader.fail(keys["go"], f"{key}.go", f"{package} is not a directory")
    flags = reader.strings(keys["flags"], f"{key}.flags") if "flags" in keys else []
    if any(flag in ("-o", "--o") or flag.startswith(("-o=", "--o=")) for flag in flags):
        raise reader.fail(keys["flags"], f"{key}.flags", "-o is the gate's ({binary})")
    return WebhookBuild(package, tuple(flags))
