"""The gate file parser: good files load; every bad one is refused in one line that names
the file, the line and the key."""

import json
from pathlib import Path

import pytest

from crdharness.gate.given.config import GateConfigError, WebhookBuild, fill_placeholders
from crdharness.gate.given.gate_file import load


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "crd.yaml").write_text("kind: CustomResourceDefinition\n")
    path = tmp_path / "gate.yaml"
    path.write_text(text)
    return path


def test_a_full_file_loads(tmp_path):
    (tmp_path / "ca.crt").write_text("x")
    config = load(
        write(
            tmp_path,
            """
crds: [crd.yaml, [crd.yaml, crd.yaml]]
webhook:
  command: go run ./cmd --cert-dir={cert_dir} --port={port}
  env: {KUBECONFIG: "{kubeconfig}"}
  convert: [crontabs.example.com]
  path: /convert
generate: 7
seed: 3
allow:
- {path: spec.legacy, between: [v1, v2], reason: dropped in v2 on purpose}
- {path: status.phase, reason: our controller sets it on its next pass}
accept_not_proven:
- {check: upgrade, subject: release 1->2, reason: our webhooks refuse what it cannot build}
kubernetes: [1.37, "1.36"]
policy: {require_deprecation_before_removal: false}
""",
        )
    )
    assert [len(r) for r in config.crds] == [1, 2]
    assert config.webhook.command == [
        "go",
        "run",
        "./cmd",
        "--cert-dir={cert_dir}",
        "--port={port}",
    ]
    assert config.webhook.form == "command"
    assert config.generate == 7 and config.seed == 3
    assert config.kubernetes == ["1.37", "1.36"]  # a YAML float is read as the version string
    assert config.allow[0].covers("spec.legacy.inner", "v2", "v1")
    assert not config.allow[0].covers("spec.legacyx", "v1", "v2")
    assert not config.allow[0].covers("spec.legacy", "v1", "v3")
    assert config.require_deprecation_before_removal is False
    # Without `between`, an allowance covers every pair and every upgrade.
    assert config.allow[1].covers("status.phase", "v9", "v1")
    assert config.allow[1].covers_upgrade("status.phase", "v1")
    assert not config.allow[0].covers_upgrade("spec.legacy", "v3")
    assert config.accept_not_proven[0].covers("upgrade", "release 1->2")
    assert not config.accept_not_proven[0].covers("upgrade", "release 2->3")


def test_each_release_may_say_what_migration_its_upgrade_ships(tmp_path):
    config = load(
        write(
            tmp_path,
            """
crds:
  - crd.yaml
  - {path: crd.yaml, migrate: storage-version-migration}
  - {path: [crd.yaml, crd.yaml], migrate: rewrite}
  - path: crd.yaml
    migrate: {command: "./bin/migrate --kubeconfig={kubeconfig}"}
timeout: 600
strict: true
webhook: {command: x, latency_budget_ms: 25}
expect: [{at: crd.yaml, reads_at: crd.yaml}]
shrink_seconds: 5
min_objects: 3
concurrency: 2
""",
        )
    )
    assert [len(r) for r in config.crds] == [1, 1, 2, 1]
    assert {i: m.kind for i, m in config.migrations.items()} == {
        1: "storage-version-migration",
        2: "rewrite",
        3: "command",
    }
    assert config.migrations[3].command == ("./bin/migrate", "--kubeconfig={kubeconfig}")
    assert config.timeout == 600.0 and config.strict is True
    assert config.debt == "list" and config.fail_debt  # strict: the previous release's too
    assert config.webhook.latency_budget_ms == 25.0
    assert config.expect[0].subject == "crd.yaml = crd.yaml"
    assert config.shrink_seconds == 5.0 and config.min_objects == 3
    assert config.concurrency == 2


def test_a_webhook_built_by_the_gate_names_its_binary(tmp_path):
    (tmp_path / "cmd" / "manager").mkdir(parents=True)
    config = load(
        write(
            tmp_path,
            """
crds: [crd.yaml]
webhook:
  build: {go: cmd/manager, flags: [-tags=gate, -trimpath]}
  command: "{binary} --cert-dir={cert_dir} --port={port}"
  env: {MANAGER: "{binary}"}
""",
        )
    )
    assert config.webhook.build == WebhookBuild(
        tmp_path / "cmd" / "manager", ("-tags=gate", "-trimpath")
    )
    assert config.webhook.command == ["{binary}", "--cert-dir={cert_dir}", "--port={port}"]
    assert config.webhook.form == "command"
    bare = load(write(tmp_path, "crds: [crd.yaml]\nwebhook: {build: {go: cmd}, command: x}\n"))
    assert bare.webhook.build == WebhookBuild(tmp_path / "cmd")
    plain = load(write(tmp_path, "crds: [crd.yaml]\nwebhook: {command: go run ./cmd}\n"))
    assert plain.webhook.build is None
    made = load(
        write(
            tmp_path,
            "crds: [crd.yaml]\nwebhook:\n  build: {command: 'make manager OUT={binary}'}\n"
            "  command: '{binary}'\n",
        )
    )
    assert made.webhook.build == WebhookBuild(command=("make", "manager", "OUT={binary}"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "the gate file is empty"),
        ("crds: [crd.yaml]\n  bad: : indent", "not valid YAML"),
        ("generate: 3\n", "crds: missing"),
        ("crds: []\n", "crds: must be a non-empty list"),
        ("crds: [missing.yaml]\n", "missing.yaml does not exist"),
        (
            "crds: [crd.yaml]\ncrd: [x]\n",
            ":2: crd: unknown key (known: accept_not_proven, admission, allow, concurrency, crds",
        ),
        ("crds: [crd.yaml]\nwebhook:\n  comand: x\n", ":3: webhook.comand: unknown key"),
        (
            "crds: [crd.yaml]\nwebhook: {port: 1}\n",
            "webhook: needs exactly one of command, image, url",
        ),
        (
            "crds: [crd.yaml]\nwebhook: {command: x, url: 'https://h'}\n",
            "exactly one of command, image, url (found command, url)",
        ),
        ("crds: [crd.yaml]\nwebhook: {url: 'http://h'}\n", "webhook.url: must start with https://"),
        ("crds: [crd.yaml]\nwebhook: {url: 'https://h'}\n", "webhook.ca: missing"),
        ("crds: [crd.yaml]\nwebhook: {command: 'run --p={prot}'}\n", "unknown placeholder {prot}"),
        ("crds: [crd.yaml]\nwebhook: {command: 'a \"b'}\n", "webhook.command: cannot split"),
        (
            "crds: [crd.yaml]\nwebhook: {command: x, path: convert}\n",
            "webhook.path: must start with /",
        ),
        (
            "crds: [crd.yaml]\nwebhook: {command: '{binary} --port={port}'}\n",
            "webhook.command[0]: {binary} needs webhook.build",
        ),
        (
            "crds: [crd.yaml]\nwebhook: {command: x, env: {B: '{binary}'}}\n",
            "webhook.env.B: {binary} needs webhook.build",
        ),
        (
            "crds: [crd.yaml]\nwebhook: {image: x, build: {go: .}}\n",
            "webhook.build: needs webhook.command",
        ),
        ("crds: [crd.yaml]\nwebhook: {command: x, build: ./cmd}\n", "webhook.build: must be a"),
        (
            "crds: [crd.yaml]\nwebhook: {command: x, build: {}}\n",
            "webhook.build: needs exactly one of go, command",
        ),
        (
            "crds: [crd.yaml]\nwebhook: {command: x, build: {go: nope}}\n",
            "nope does not exist",
        ),
        (
            "crds: [crd.yaml]\nwebhook: {command: x, build: {go: crd.yaml}}\n",
            "crd.yaml is not a directory",
        ),
        (
            "crds: [crd.yaml]\nwebhook: {command: x, build: {go: ., flags: [-o, bin/x]}}\n",
            "webhook.build.flags: -o is the gate's ({binary})",
        ),
        (
            "crds: [crd.yaml]\nwebhook: {command: x, build: {go: ., tags: [a]}}\n",
            "webhook.build.tags: unknown key (known: command, flags, go)",
        ),
        (
            "crds: [crd.yaml]\nwebhook: {command: x, build: {go: ., command: make}}\n",
            "webhook.build: needs exactly one of go, command",
        ),
        (
            "crds: [crd.yaml]\nwebhook: {command: x, build: {command: make manager}}\n",
            "webhook.build.command: must write {binary}",
        ),
        (
            "crds: [crd.yaml]\nwebhook: {command: x, build: {command: 'make {port}'}}\n",
            "webhook.build.command[1]: unknown placeholder {port} (known: {binary}",
        ),
        (
            "crds: [crd.yaml]\nwebhook: {command: x, build: {command: m, flags: [-a]}}\n",
            "webhook.build.flags: only with go",
        ),
        ("crds: [crd.yaml]\ngenerate: many\n", ":2: generate: must be a int, not 'many'"),
        ("crds: [crd.yaml]\ngenerate: -1\n", "generate: must be 0 or more"),
        ("crds: [crd.yaml]\nallow: [{path: a, between: [v1]}]\n", "allow[0].reason: missing"),
        (
            "crds: [crd.yaml]\nallow: [{path: a, between: [v1, v1], reason: r}]\n",
            "allow[0].between: must name two different versions",
        ),
        ("crds: [crd.yaml]\nallow: [{path: a, between: [v1, v2], reason: ' '}]\n", "must say why"),
        ("crds: [crd.yaml]\npolicy: {strict: true}\n", "policy.strict: unknown key"),
        (
            "crds: [crd.yaml]\naccept_not_proven: [{check: upgrades, reason: r}]\n",
            "accept_not_proven[0].check: unknown check (known: install, upgrade,",
        ),
        (
            "crds: [crd.yaml]\naccept_not_proven: [{check: upgrade}]\n",
            "accept_not_proven[0].reason: missing",
        ),
        ("- crd.yaml\n", "(top): must be a mapping"),
        ("crds: [{migrate: rewrite}]\n", "crds[0].path: missing"),
        ("crds: [{path: crd.yaml, migrate: magic}]\n", "crds[0].migrate: must be storage-ver"),
        ("crds: [{path: crd.yaml, migrate: {cmd: x}}]\n", "crds[0].migrate.cmd: unknown key"),
        ("crds: [{path: crd.yaml, migrate: {command: '{kubecfg}'}}]\n", "unknown placeholder"),
        ("crds: [crd.yaml]\ntimeout: 0\n", "timeout: must be more than 0"),
        ("crds: [crd.yaml]\nconcurrency: 0\n", "concurrency: must be 1 or more"),
        ("crds: [crd.yaml]\nstrict: sure\n", "strict: must be a bool"),
        ("crds: [crd.yaml]\ndebt: ignore\n", ":2: debt: one of list, fail"),
        ("crds: [crd.yaml]\nexpect: [{at: crd.yaml}]\n", "expect[0].reads_at: missing"),
        ("crds: [crd.yaml]\nexpect: [{at: crd.yaml, reads_at: no.yaml}]\n", "no.yaml does not"),
        ("crds: [crd.yaml]\nfrom_cluster: {context: x}\n", "from_cluster.kubeconfig: missing"),
        ("crds: [crd.yaml]\nfrom_cluster: {kubeconfig: no.yaml}\n", "no.yaml does not exist"),
        (
            "crds: [crd.yaml]\nfrom_cluster: {kubeconfig: crd.yaml, max_objects: 0}\n",
            "from_cluster.max_objects: must be 1 or more",
        ),
    ],
)
def test_a_bad_file_is_refused_in_one_line(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(GateConfigError) as raised:
        load(path)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert expected in message


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(GateConfigError, match=r"cannot read the gate file"):
        load(tmp_path / "nope.yaml")


def test_placeholders_are_filled_and_braces_escape():
    values = {"port": "9443", "cert_dir": "/c"}
    assert fill_placeholders("--port={port} --dir={cert_dir}", values) == "--port=9443 --dir=/c"
    assert fill_placeholders("${{HOME}}/x", values) == "${HOME}/x"
    with pytest.raises(GateConfigError, match="unknown placeholder"):
        fill_placeholders("{port!r}", values)


def test_the_command_runs_pytest_once_per_kubernetes_version(tmp_path, monkeypatch):
    from crdharness import cli
    from crdharness.gate import cli as gate_cli

    path = write(tmp_path, "crds: [crd.yaml]\nkubernetes: ['1.36', '1.37']\n")
    runs = []
    verdicts = iter(["PASS", "NOT PROVEN"])

    def run_pytest(argv, plugins=()):
        runs.append(argv)
        report = Path(next(a for a in argv if a.startswith("--gate-artifacts=")).split("=")[1])
        report.mkdir(parents=True)
        (report / "report.json").write_text(json.dumps({"verdict": next(verdicts)}))
        return 0

    monkeypatch.setattr(gate_cli.pytest, "main", run_pytest)
    # The worst verdict of the runs is the exit status: 2, "not proven" on 1.37.
    assert (
        cli.main(["gate", str(path), "--artifacts", str(tmp_path / "out"), "--", "-k", "install"])
        == 2
    )
    assert [[a for a in argv if a.startswith("--k8s-version")] for argv in runs] == [
        ["--k8s-version=1.36"],
        ["--k8s-version=1.37"],
    ]
    assert f"--gate-artifacts={tmp_path / 'out' / 'k8s-1.36'}" in runs[0]
    assert runs[1][-2:] == ["-k", "install"]


def test_the_command_answers_a_bad_file_in_one_line(tmp_path, capsys):
    from crdharness import cli

    path = write(tmp_path, "crds: [crd.yaml]\nwebhook: {comand: x}\n")
    assert cli.main(["gate", str(path)]) == 3  # could not run: neither a finding nor undecided
    err = capsys.readouterr().err.strip()
    assert (
        err
        == f"crdharness: error: {path}:2: webhook.comand: unknown key (known: "
        + err.split("(known: ")[1]
    )


def test_the_command_refuses_xdist_workers_in_one_line(tmp_path, capsys):
    from crdharness import cli

    path = write(tmp_path, "crds: [crd.yaml]\n")
    assert cli.main(["gate", str(path), "--", "-n", "2"]) == 3
    assert "drop -n" in capsys.readouterr().err


def test_from_cluster_names_the_source_and_what_to_read(tmp_path):
    config = load(
        write(
            tmp_path,
            "crds: [crd.yaml]\nfrom_cluster:\n  kubeconfig: crd.yaml\n  context: prod\n"
            "  namespaces: [team-a, team-b]\n  max_objects: 50\n",
        )
    )
    assert config.from_cluster is not None
    assert config.from_cluster.kubeconfig == tmp_path / "crd.yaml"
    assert config.from_cluster.context == "prod"
    assert config.from_cluster.namespaces == ["team-a", "team-b"]
    assert config.from_cluster.max_objects == 50 and not config.from_cluster.show_values


def test_debt_fail_makes_the_previous_releases_debt_fail(tmp_path):
    assert not load(write(tmp_path, "crds: [crd.yaml]\n")).fail_debt
    assert load(write(tmp_path, "crds: [crd.yaml]\ndebt: list\n")).fail_debt is False
    assert load(write(tmp_path, "crds: [crd.yaml]\ndebt: fail\n")).fail_debt is True


def test_a_release_may_name_its_own_webhook(tmp_path):
    config = load(
        write(
            tmp_path,
            """
crds:
  - path: crd.yaml
    webhook:
      command: "old-webhook --port={port}"
      path: /old
      convert: [a.example.com]
  - path: crd.yaml
    migrate: rewrite
  - crd.yaml
webhook: {command: "new-webhook --port={port}"}
""",
        )
    )
    # Release 1 runs its own; release 2 (naming none) and the candidate the top-level one.
    assert set(config.release_webhooks) == {0}
    own = config.release_webhooks[0]
    assert own.command == ["old-webhook", "--port={port}"]
    assert own.path == "/old" and own.convert == ["a.example.com"]
    assert config.webhook is not None and config.webhook.command == ["new-webhook", "--port={port}"]
    assert set(config.migrations) == {1}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "crds: [{path: crd.yaml, webhook: {comand: x}}, crd.yaml]\n",
            ":1: crds[0].webhook.comand: unknown key (known: args, build, ca,",
        ),
        (
            "crds: [{path: crd.yaml, webhook: {port: 1}}, crd.yaml]\n",
            "crds[0].webhook: needs exactly one of command, image, url",
        ),
        (
            "crds: [{path: crd.yaml, webhook: {command: '{binary}'}}, crd.yaml]\n",
            "crds[0].webhook.command[0]: {binary} needs crds[0].webhook.build",
        ),
        (
            "crds: [{path: crd.yaml, webhook: {command: x, build: {}}}, crd.yaml]\n",
            "crds[0].webhook.build: needs exactly one of go, command",
        ),
        (
            "crds: [{path: crd.yaml, webhook: {url: 'http://h'}}, crd.yaml]\n",
            "crds[0].webhook.url: must start with https://",
        ),
        (
            "crds: [crd.yaml, {path: crd.yaml, webhook: {command: x}}]\n",
            "crds[1].webhook: the candidate's webhook is the top-level `webhook:`",
        ),
        (
            "crds: [{path: crd.yaml, webhook: x}, crd.yaml]\n",
            "crds[0].webhook: must be a mapping",
        ),
    ],
)
def test_a_bad_release_webhook_is_refused_in_one_line(tmp_path, text, expected):
    with pytest.raises(GateConfigError) as raised:
        load(write(tmp_path, text))
    message = str(raised.value)
    assert "\n" not in message
    assert expected in message, message


def test_a_run_has_no_time_bound_unless_the_file_gives_one(tmp_path):
    # How long a run takes is the machine's (a loaded CI runner), never the release's.
    assert load(write(tmp_path, "crds: [crd.yaml]\n")).timeout is None
    assert load(write(tmp_path, "crds: [crd.yaml]\ntimeout: 90\n")).timeout == 90.0
