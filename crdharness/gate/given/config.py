"""What a gate file says, as the gate's phases read it: the release history, the webhook,
samples, expectations and the settings (``gate_file`` reads and validates the YAML). The
schema is documented in README.md ("Gate your own CRDs").
"""

from __future__ import annotations

import fnmatch
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from crdharness.errors import HarnessError
from crdharness.gate.diff import at_or_under, schema_path

PLACEHOLDERS = ("tls_cert", "tls_key", "cert_dir", "port", "kubeconfig", "ca", "python")
# A webhook's command and env may also name the binary its `build:` made.
WEBHOOK_PLACEHOLDERS = (*PLACEHOLDERS, "binary")


class GateConfigError(HarnessError):
    """A gate file that cannot be used; the message is one line: file:line: key: problem."""


@dataclass(frozen=True)
class Allowance:
    """A field path that may differ after a round trip between two versions (``between``),
    or, without ``between``, anywhere: round trips and upgrades (a value a new default fills
    in, a write a new rule refuses for objects the project never lets exist)."""

    path: str
    between: tuple[str, str] | None
    reason: str

    def covers(self, path: str, a: str, b: str) -> bool:
        if self.between is not None and {a, b} != set(self.between):
            return False
        return self.names(path)

    def names(self, path: str) -> bool:
        """Whether ``path`` (``spec.routes[3].regex``) is this entry's path or under it,
        the entry written concretely or as report.md prints paths (``spec.routes[].regex``)."""
        return at_or_under(path, self.path) or at_or_under(schema_path(path), self.path)

    def covers_upgrade(self, path: str, version: str) -> bool:
        """Whether it excuses an upgrade's finding at ``path`` of an object written at
        ``version``."""
        if self.between is not None and version not in self.between:
            return False
        return self.names(path)


@dataclass(frozen=True)
class Acceptance:
    """A check the project accepts as "not proven" (the exit status then ignores it)."""

    check: str
    subject: str | None  # None: every subject of ``check``
    reason: str

    def covers(self, check: str, subject: str) -> bool:
        return check == self.check and self.subject in (None, subject)


MIGRATION_KINDS = ("storage-version-migration", "rewrite", "command")
# `debt:` what a failure the release before the candidate already has does (``checks.debt``):
# listed apart, not a finding; or a finding as any other.
DEBT_CHOICES = ("list", "fail")


@dataclass(frozen=True)
class Migration:
    """What a release's upgrade ships to move stored objects to its storage version. Real
    clusters migrate nothing on their own: without one, ``status.storedVersions`` keeps every
    version objects were ever stored at."""

    kind: str  # one of MIGRATION_KINDS
    command: tuple[str, ...] = ()  # kind "command": the project's own tool ({kubeconfig})

    def describe(self) -> str:
        if self.kind == "command":
            return f"the project's command `{shlex.join(self.command)}`"
        if self.kind == "rewrite":
            return "a rewrite of every object (as kube-storage-version-migrator does)"
        return "Kubernetes' StorageVersionMigration (kube-controller-manager)"


@dataclass(frozen=True)
class Expectation:
    """One object as the user writes it at one version (``at``) and as it must read at
    another (``reads_at``): checked both ways through the real API server and webhook."""

    at: Path
    reads_at: Path

    @property
    def subject(self) -> str:
        return f"{self.at.name} = {self.reads_at.name}"


@dataclass(frozen=True)
class WebhookBuild:
    """``webhook.build``: how the gate builds the webhook before it starts it (outside
    ``ready_timeout`` and every other time limit: a build's length is the machine's), the
    result named ``{binary}`` in ``command``. Exactly one of ``go`` (Go's build cache makes a
    rebuild a link) and ``command`` (the project's own, writing ``{binary}``)."""

    go: Path | None = None  # the Go main package's directory (inside its module)
    flags: tuple[str, ...] = ()  # with go: more `go build` arguments, e.g. ("-tags=gate",)
    command: tuple[str, ...] = ()  # run in the webhook's workdir; {binary}: where to write


@dataclass
class WebhookSpec:
    """How to run (or reach) the user's webhook. Exactly one of command, image, url."""

    command: list[str] | None = None
    build: WebhookBuild | None = None  # command: what to build first, named {binary}
    image: str | None = None
    url: str | None = None
    ca: Path | None = None  # with url: the CA that signed the webhook's certificate
    workdir: Path | None = None  # command: where it runs
    env: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)  # image: arguments to the container
    port: int = 9443  # image: the port the container listens on
    cert_dir: str = "/tmp/k8s-webhook-server/serving-certs"  # image: where it reads tls.*
    ready_timeout: float = 120.0
    # CRDs that use the webhook although their manifests have no conversion stanza (the
    # usual kustomize patch adds it at deploy time, Crossplane at install), and what that
    # stanza would say: names, or patterns (``*.aws.example.com``, ``*``) naming every
    # multi-version CRD they match.
    convert: list[str] = field(default_factory=list)
    path: str = "/convert"
    review_versions: list[str] = field(default_factory=lambda: ["v1"])
    latency_budget_ms: float | None = None  # a finding when the p99 of reviews exceeds it

    @property
    def form(self) -> str:
        return "command" if self.command else "image" if self.image else "url"

    def converts(self, crd: dict) -> bool:
        """Whether ``convert`` names ``crd``: by its name, or by a pattern when it serves
        more than one version (a single-version CRD has nothing to convert)."""
        name = crd["metadata"]["name"]
        several = len(crd["spec"].get("versions") or []) > 1
        return any(
            name == given or (several and fnmatch.fnmatchcase(name, given))
            for given in self.convert
        )


@dataclass
class FromCluster:
    """``from_cluster:`` (or ``--from-cluster``): the gate starts from what a running cluster
    holds instead of the history's earlier releases (``given.cluster_source``)."""

    kubeconfig: Path
    context: str | None = None
    namespaces: list[str] = field(default_factory=list)  # empty: all
    max_objects: int | None = None  # per CRD; None: every object the cluster holds
    show_values: bool = False  # the report shows the objects' values (never Secret-like ones)


@dataclass
class GateConfig:
    source: Path
    crds: list[list[Path]]  # release history, oldest first; each entry one or more paths
    webhook: WebhookSpec | None = None  # the candidate's, and every release's naming none
    # release index -> the webhook that release runs under, where it names its own
    release_webhooks: dict[int, WebhookSpec] = field(default_factory=dict)
    admission: list[Path] = field(default_factory=list)
    samples: list[Path] = field(default_factory=list)
    generate: int = 20
    seed: int = 0
    allow: list[Allowance] = field(default_factory=list)
    kubernetes: list[str] = field(default_factory=list)
    require_deprecation_before_removal: bool = True
    upgrade_objects: int = 3  # generated objects per served version for the upgrade check
    migrations: dict[int, Migration] = field(default_factory=dict)  # release index -> shipped
    # seconds the whole run may take; none unless the gate file says so: how long a run takes
    # is the machine's (a loaded CI runner), never the release's, so no bound by default
    timeout: float | None = None
    strict: bool = False  # an empty or zero value read back absent (or the reverse) is a finding
    debt: str = "list"  # one of DEBT_CHOICES; `strict` makes it "fail"
    min_objects: int = 10  # fewer compared per version pair: round trips are "not proven"
    shrink_seconds: float = 20.0  # time a version pair's search may spend shrinking a failure
    concurrency: int = 16  # objects whose requests are in flight at once (per CRD and version)
    expect: list[Expectation] = field(default_factory=list)
    accept_not_proven: list[Acceptance] = field(default_factory=list)
    from_cluster: FromCluster | None = None
    full: bool = False  # `--full`: unchanged CRDs judged again (``evidence.unchanged``)

    @property
    def root(self) -> Path:
        return self.source.parent

    @property
    def fail_debt(self) -> bool:
        """Whether the previous release's debt fails the candidate's checks as before."""
        return self.debt == "fail" or self.strict


def fill_placeholders(text: str, values: dict[str, str]) -> str:
    """Replace ``{name}`` with ``values[name]``; ``{{`` and ``}}`` stand for braces (as in
    str.format, so shell snippets such as ``${HOME}`` need ``${{HOME}}``)."""
    import string

    out = []
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise GateConfigError(f"bad placeholder in {text!r}: {exc}") from None
    for literal, name, spec, conversion in parsed:
        out.append(literal)
        if name is None:
            continue
        if name not in values or spec or conversion:
            raise GateConfigError(
                f"unknown placeholder {{{name}}} (known: "
                + ", ".join(f"{{{p}}}" for p in values)
                + "; write {{ and }} for literal braces)"
            )
        out.append(str(values[name]))
    return "".join(out)
