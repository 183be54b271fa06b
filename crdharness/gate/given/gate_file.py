"""The gate file: a small YAML file, read and validated before anything starts.

Every problem is reported as one line naming the file, the line and the key, e.g.
``gate.yaml:7: webhook.comand: unknown key (known: command, image, url, ...)``. The schema is
documented in README.md ("Gate your own CRDs"); this module is its single source of truth.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from crdharness.gate.given.config import (
    DEBT_CHOICES,
    MIGRATION_KINDS,
    PLACEHOLDERS,
    WEBHOOK_PLACEHOLDERS,
    Acceptance,
    Allowance,
    Expectation,
    FromCluster,
    GateConfig,
    GateConfigError,
    Migration,
    WebhookBuild,
    WebhookSpec,
    fill_placeholders,
)
from crdharness.gate.given.yaml_reader import Reader
from crdharness.gate.subjects import CHECKS

TOP_KEYS = {
    "crds",
    "webhook",
    "admission",
    "samples",
    "generate",
    "seed",
    "allow",
    "kubernetes",
    "policy",
    "upgrade_objects",
    "timeout",
    "strict",
    "debt",
    "min_objects",
    "shrink_seconds",
    "concurrency",
    "expect",
    "accept_not_proven",
    "from_cluster",
}


FROM_CLUSTER_KEYS = {"kubeconfig", "context", "namespaces", "max_objects", "show_values"}


RELEASE_KEYS = {"path", "migrate"}


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


ALLOW_KEYS = {"path", "between", "reason"}


ACCEPT_KEYS = {"check", "subject", "reason"}


POLICY_KEYS = {"require_deprecation_before_removal"}


def load(source: Path | str) -> GateConfig:
    """Read and validate a gate file; raise GateConfigError (one line) on any problem."""
    source = Path(source).resolve()
    reader = Reader(source)
    if reader.node is None:
        raise GateConfigError(f"{source}: the gate file is empty; it needs at least `crds:`")
    top = reader.mapping(reader.node, "", TOP_KEYS)
    if "crds" not in top:
        raise reader.fail(reader.node, "crds", "missing: list the CRD release history")
    crds, migrations = _history(reader, top["crds"])
    config = GateConfig(source=source, crds=crds, migrations=migrations)
    if "webhook" in top:
        config.webhook = _webhook(reader, top["webhook"])
    if "admission" in top:
        config.admission = [
            reader.path(n, f"admission[{i}]")
            for i, n in enumerate(_sequence(reader, top, "admission"))
        ]
    if "samples" in top:
        config.samples = [
            reader.path(n, f"samples[{i}]") for i, n in enumerate(_sequence(reader, top, "samples"))
        ]
    for name in ("generate", "seed", "upgrade_objects", "min_objects"):
        if name in top:
            setattr(config, name, reader.at_least(top[name], name, int, 0))
    if "timeout" in top:
        config.timeout = reader.scalar(top["timeout"], "timeout", float)
        if config.timeout <= 0:
            raise reader.fail(top["timeout"], "timeout", "must be more than 0 (seconds)")
    if "shrink_seconds" in top:
        config.shrink_seconds = reader.at_least(top["shrink_seconds"], "shrink_seconds", float, 0)
    if "concurrency" in top:
        config.concurrency = reader.at_least(top["concurrency"], "concurrency", int, 1)
    if "from_cluster" in top:
        config.from_cluster = _from_cluster(reader, top["from_cluster"])
    if "expect" in top:
        config.expect = []
        for i, node in enumerate(_sequence(reader, top, "expect")):
            keys = reader.mapping(node, f"expect[{i}]", {"at", "reads_at"})
            for required in ("at", "reads_at"):
                if required not in keys:
                    raise reader.fail(node, f"expect[{i}].{required}", "missing")
            config.expect.append(
                Expectation(
                    reader.path(keys["at"], f"expect[{i}].at"),
                    reader.path(keys["reads_at"], f"expect[{i}].reads_at"),
                )
            )
    if "strict" in top:
        config.strict = reader.scalar(top["strict"], "strict", bool)
    if "debt" in top:
        config.debt = reader.scalar(top["debt"], "debt", str)
        if config.debt not in DEBT_CHOICES:
            raise reader.fail(top["debt"], "debt", f"one of {', '.join(DEBT_CHOICES)}")
    if "allow" in top:
        config.allow = [
            _allowance(reader, n, f"allow[{i}]")
            for i, n in enumerate(_sequence(reader, top, "allow"))
        ]
    if "accept_not_proven" in top:
        config.accept_not_proven = [
            _acceptance(reader, n, f"accept_not_proven[{i}]")
            for i, n in enumerate(_sequence(reader, top, "accept_not_proven"))
        ]
    if "kubernetes" in top:
        config.kubernetes = reader.strings(top["kubernetes"], "kubernetes")
    if "policy" in top:
        policy = reader.mapping(top["policy"], "policy", POLICY_KEYS)
        if "require_deprecation_before_removal" in policy:
            config.require_deprecation_before_removal = reader.scalar(
                policy["require_deprecation_before_removal"],
                "policy.require_deprecation_before_removal",
                bool,
            )
    return config


def _sequence(reader: Reader, top: dict, key: str) -> list[yaml.Node]:
    node = top[key]
    if not isinstance(node, yaml.SequenceNode):
        raise reader.fail(node, key, "must be a list")
    return node.value


def _history(reader: Reader, node) -> tuple[list[list[Path]], dict[int, Migration]]:
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise reader.fail(node, "crds", "must be a non-empty list of releases, oldest first")
    history, migrations = [], {}
    for i, entry in enumerate(node.value):
        key = f"crds[{i}]"
        if isinstance(entry, yaml.MappingNode):  # {path: ..., migrate: ...}
            keys = reader.mapping(entry, key, RELEASE_KEYS)
            if "path" not in keys:
                raise reader.fail(entry, f"{key}.path", "missing: the release's CRD files")
            if "migrate" in keys:
                migrations[i] = _migration(reader, keys["migrate"], f"{key}.migrate")
            entry = keys["path"]
            key = f"{key}.path"
        if isinstance(entry, yaml.SequenceNode):  # one release made of several paths
            paths = [reader.path(p, f"{key}[{j}]") for j, p in enumerate(entry.value)]
        else:
            paths = [reader.path(entry, key)]
        if not paths:
            raise reader.fail(entry, key, "an empty release")
        history.append(paths)
    return history, migrations


def _migration(reader: Reader, node, key: str) -> Migration:
    """``storage-version-migration``, ``rewrite``, or ``{command: ...}``."""
    if isinstance(node, yaml.MappingNode):
        keys = reader.mapping(node, key, {"command"})
        if "command" not in keys:
            raise reader.fail(node, f"{key}.command", "missing")
        command = keys["command"]
        words = _words(reader, command, f"{key}.command")
        for j, word in enumerate(words):
            _check_placeholders(reader, command, f"{key}.command[{j}]", word)
        return Migration("command", tuple(words))
    kind = reader.scalar(node, key, str)
    if kind not in MIGRATION_KINDS[:2]:
        raise reader.fail(
            node, key, "must be storage-version-migration, rewrite, or {command: ...}"
        )
    return Migration(kind)


def _webhook(reader: Reader, node) -> WebhookSpec:
    keys = reader.mapping(node, "webhook", WEBHOOK_KEYS)
    forms = [k for k in ("command", "image", "url") if k in keys]
    if len(forms) != 1:
        problem = "needs exactly one of command, image, url" + (
            f" (found {', '.join(forms)})" if forms else ""
        )
        raise reader.fail(node, "webhook", problem)
    spec = WebhookSpec()
    if "command" in keys:
        spec.command = _words(reader, keys["command"], "webhook.command")
    if "build" in keys:
        if "command" not in keys:
            raise reader.fail(keys["build"], "webhook.build", "needs webhook.command ({binary})")
        spec.build = _build(reader, keys["build"])
    for i, word in enumerate(spec.command or []):
        _check_webhook_placeholders(reader, keys["command"], f"webhook.command[{i}]", word, spec)
    if "image" in keys:
        spec.image = reader.scalar(keys["image"], "webhook.image", str)
    if "url" in keys:
        spec.url = reader.scalar(keys["url"], "webhook.url", str)
        if not spec.url.startswith("https://"):
            raise reader.fail(keys["url"], "webhook.url", "must start with https://")
        if "ca" not in keys:
            raise reader.fail(node, "webhook.ca", "missing: a url needs the CA of its certificate")
    if "ca" in keys:
        spec.ca = reader.path(keys["ca"], "webhook.ca")
    if "workdir" in keys:
        spec.workdir = reader.path(keys["workdir"], "webhook.workdir")
    if "env" in keys:
        env = reader.mapping(keys["env"], "webhook.env", _AnyKey())
        spec.env = {k: reader.scalar(v, f"webhook.env.{k}", str) for k, v in env.items()}
        for k, v in spec.env.items():
            _check_webhook_placeholders(reader, env[k], f"webhook.env.{k}", v, spec)
    if "args" in keys:
        spec.args = reader.strings(keys["args"], "webhook.args")
    if "port" in keys:
        spec.port = reader.scalar(keys["port"], "webhook.port", int)
    if "cert_dir" in keys:
        spec.cert_dir = reader.scalar(keys["cert_dir"], "webhook.cert_dir", str)
    if "ready_timeout" in keys:
        spec.ready_timeout = reader.scalar(keys["ready_timeout"], "webhook.ready_timeout", float)
    if "convert" in keys:
        spec.convert = reader.strings(keys["convert"], "webhook.convert")
    if "path" in keys:
        spec.path = reader.scalar(keys["path"], "webhook.path", str)
        if not spec.path.startswith("/"):
            raise reader.fail(keys["path"], "webhook.path", "must start with /")
    if "latency_budget_ms" in keys:
        spec.latency_budget_ms = reader.scalar(
            keys["latency_budget_ms"], "webhook.latency_budget_ms", float
        )
    if "review_versions" in keys:
        spec.review_versions = reader.strings(keys["review_versions"], "webhook.review_versions")
    return spec


class _AnyKey(set):
    """``known`` for mappings whose keys are free (environment variables)."""

    def __contains__(self, item) -> bool:
        return True


def _check_placeholders(reader: Reader, node, key: str, text: str) -> None:
    try:
        fill_placeholders(text, dict.fromkeys(PLACEHOLDERS, ""))
    except GateConfigError as exc:
        raise reader.fail(node, key, str(exc)) from None


def _check_webhook_placeholders(
    reader: Reader, node, key: str, text: str, spec: WebhookSpec
) -> None:
    """A webhook's placeholders: those of every command, and ``{binary}`` with ``build``."""
    values = dict.fromkeys(WEBHOOK_PLACEHOLDERS, "")
    try:
        filled = fill_placeholders(text, {**values, "binary": "\0"})
    except GateConfigError as exc:
        raise reader.fail(node, key, str(exc)) from None
    if "\0" in filled and spec.build is None:
        raise reader.fail(node, key, "{binary} needs webhook.build (what the gate builds first)")


def _words(reader: Reader, node, key: str) -> list[str]:
    """A command: a list of words, or a string split as a shell would (never run by one)."""
    if isinstance(node, yaml.ScalarNode):
        try:
            words = shlex.split(reader.scalar(node, key, str))
        except ValueError as exc:
            raise reader.fail(node, key, f"cannot split: {exc}") from None
    else:
        words = reader.strings(node, key)
    if not words:
        raise reader.fail(node, key, "is empty")
    return words


def _build(reader: Reader, node) -> WebhookBuild:
    """``{go: DIR, flags: [...]}`` (the webhook's Go main package) or ``{command: ...}``
    (which writes ``{binary}``): built before the webhook starts."""
    keys = reader.mapping(node, "webhook.build", BUILD_KEYS)
    if ("go" in keys) == ("command" in keys):
        raise reader.fail(node, "webhook.build", "needs exactly one of go, command")
    if "command" in keys:
        if "flags" in keys:
            raise reader.fail(keys["flags"], "webhook.build.flags", "only with go")
        words = _words(reader, keys["command"], "webhook.build.command")
        filled = []
        for i, word in enumerate(words):
            try:
                filled.append(fill_placeholders(word, {"binary": "\0"}))
            except GateConfigError as exc:
                raise reader.fail(
                    keys["command"], f"webhook.build.command[{i}]", str(exc)
                ) from None
        if not any("\0" in word for word in filled):
            raise reader.fail(keys["command"], "webhook.build.command", "must write {binary}")
        return WebhookBuild(command=tuple(words))
    package = reader.path(keys["go"], "webhook.build.go")
    if not package.is_dir():
        raise reader.fail(keys["go"], "webhook.build.go", f"{package} is not a directory")
    flags = reader.strings(keys["flags"], "webhook.build.flags") if "flags" in keys else []
    if any(flag in ("-o", "--o") or flag.startswith(("-o=", "--o=")) for flag in flags):
        raise reader.fail(keys["flags"], "webhook.build.flags", "-o is the gate's ({binary})")
    return WebhookBuild(package, tuple(flags))


def _allowance(reader: Reader, node, key: str) -> Allowance:
    keys = reader.mapping(node, key, ALLOW_KEYS)
    for required in ("path", "reason"):
        if required not in keys:
            raise reader.fail(node, f"{key}.{required}", "missing")
    pair = None
    if "between" in keys:
        between = reader.strings(keys["between"], f"{key}.between")
        if len(between) != 2 or between[0] == between[1]:
            raise reader.fail(keys["between"], f"{key}.between", "must name two different versions")
        pair = (between[0], between[1])
    reason = reader.scalar(keys["reason"], f"{key}.reason", str).strip()
    if not reason:
        raise reader.fail(keys["reason"], f"{key}.reason", "must say why the difference is fine")
    path = reader.scalar(keys["path"], f"{key}.path", str)
    return Allowance(path=path, between=pair, reason=reason)


def _acceptance(reader: Reader, node, key: str) -> Acceptance:
    keys = reader.mapping(node, key, ACCEPT_KEYS)
    for required in ("check", "reason"):
        if required not in keys:
            raise reader.fail(node, f"{key}.{required}", "missing")
    check = reader.scalar(keys["check"], f"{key}.check", str)
    if check not in CHECKS:
        raise reader.fail(
            keys["check"], f"{key}.check", f"unknown check (known: {', '.join(CHECKS)})"
        )
    reason = reader.scalar(keys["reason"], f"{key}.reason", str).strip()
    if not reason:
        raise reader.fail(keys["reason"], f"{key}.reason", "must say why it may stay unproven")
    subject = reader.scalar(keys["subject"], f"{key}.subject", str) if "subject" in keys else None
    return Acceptance(check=check, subject=subject, reason=reason)


def _from_cluster(reader: Reader, node) -> FromCluster:
    keys = reader.mapping(node, "from_cluster", FROM_CLUSTER_KEYS)
    if "kubeconfig" not in keys:
        raise reader.fail(node, "from_cluster.kubeconfig", "missing: the source's kubeconfig")
    found = FromCluster(reader.path(keys["kubeconfig"], "from_cluster.kubeconfig"))
    if "context" in keys:
        found.context = reader.scalar(keys["context"], "from_cluster.context", str)
    if "namespaces" in keys:
        found.namespaces = reader.strings(keys["namespaces"], "from_cluster.namespaces")
    if "max_objects" in keys:
        key = "from_cluster.max_objects"
        found.max_objects = reader.at_least(keys["max_objects"], key, int, 1)
    if "show_values" in keys:
        found.show_values = reader.scalar(keys["show_values"], "from_cluster.show_values", bool)
    return found
