"""The gate file: a small YAML file, read and validated before anything starts.

Every problem is reported as one line naming the file, the line and the key, e.g.
``gate.yaml:7: webhook.comand: unknown key (known: command, image, url, ...)``. The schema is
documented in README.md ("Gate your own CRDs"); this module is its single source of truth.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from crdharness.gate.given.config import (
    DEBT_CHOICES,
    MIGRATION_KINDS,
    PLACEHOLDERS,
    Acceptance,
    Allowance,
    Expectation,
    FromCluster,
    GateConfig,
    GateConfigError,
    Migration,
    WebhookSpec,
    fill_placeholders,
)
from crdharness.gate.given.gate_webhook import webhook, words
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
    "full",
    "debt",
    "min_objects",
    "shrink_seconds",
    "concurrency",
    "expect",
    "accept_not_proven",
    "from_cluster",
}


FROM_CLUSTER_KEYS = {"kubeconfig", "context", "namespaces", "max_objects", "show_values"}


RELEASE_KEYS = {"path", "migrate", "webhook"}


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
    crds, migrations, webhooks = _history(reader, top["crds"])
    config = GateConfig(source=source, crds=crds, migrations=migrations, release_webhooks=webhooks)
    if "webhook" in top:
        config.webhook = webhook(reader, top["webhook"])
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
    if "full" in top:
        config.full = reader.scalar(top["full"], "full", bool)
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


def _history(
    reader: Reader, node
) -> tuple[list[list[Path]], dict[int, Migration], dict[int, WebhookSpec]]:
    """The releases' paths, and by release index what its upgrade ships (``migrate``) and
    the webhook it runs under, where not the top-level one (``webhook``)."""
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise reader.fail(node, "crds", "must be a non-empty list of releases, oldest first")
    history, migrations, webhooks = [], {}, {}
    for i, entry in enumerate(node.value):
        key = f"crds[{i}]"
        if isinstance(entry, yaml.MappingNode):  # {path: ..., migrate: ...}
            keys = reader.mapping(entry, key, RELEASE_KEYS)
            if "path" not in keys:
                raise reader.fail(entry, f"{key}.path", "missing: the release's CRD files")
            if "migrate" in keys:
                migrations[i] = _migration(reader, keys["migrate"], f"{key}.migrate")
            if "webhook" in keys:
                if i == len(node.value) - 1:  # one place for the candidate's: no two
                    raise reader.fail(
                        keys["webhook"],
                        f"{key}.webhook",
                        "the candidate's webhook is the top-level `webhook:`; only an earlier "
                        "release may name its own",
                    )
                webhooks[i] = webhook(reader, keys["webhook"], f"{key}.webhook")
            entry = keys["path"]
            key = f"{key}.path"
        if isinstance(entry, yaml.SequenceNode):  # one release made of several paths
            paths = [reader.path(p, f"{key}[{j}]") for j, p in enumerate(entry.value)]
        else:
            paths = [reader.path(entry, key)]
        if not paths:
            raise reader.fail(entry, key, "an empty release")
        history.append(paths)
    return history, migrations, webhooks


def _migration(reader: Reader, node, key: str) -> Migration:
    """``storage-version-migration``, ``rewrite``, or ``{command: ...}``."""
    if isinstance(node, yaml.MappingNode):
        keys = reader.mapping(node, key, {"command"})
        if "command" not in keys:
            raise reader.fail(node, f"{key}.command", "missing")
        command = keys["command"]
        split = words(reader, command, f"{key}.command")
        for j, word in enumerate(split):
            _check_placeholders(reader, command, f"{key}.command[{j}]", word)
        return Migration("command", tuple(split))
    kind = reader.scalar(node, key, str)
    if kind not in MIGRATION_KINDS[:2]:
        raise reader.fail(
            node, key, "must be storage-version-migration, rewrite, or {command: ...}"
        )
    return Migration(kind)


def _check_placeholders(reader: Reader, node, key: str, text: str) -> None:
    try:
        fill_placeholders(text, dict.fromkeys(PLACEHOLDERS, ""))
    except GateConfigError as exc:
        raise reader.fail(node, key, str(exc)) from None


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
