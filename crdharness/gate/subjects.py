"""The gate's checks: the phase that decides each, in the order reports list them, and how
their subjects are spelt. The plan, the phases and the report all use this one table, so a
planned check and the result a phase writes always meet."""

from __future__ import annotations

# check -> the phase that decides it (report order)
CHECKS: dict[str, str] = {
    "install": "history",
    "upgrade": "history",
    "round-trip": "candidate",
    "expected-conversion": "candidate",
    "convertibility": "candidate",
    "schemas-vs-strategy": "candidate",
    "unchanged": "candidate",  # a CRD the release did not change: listed, not judged again
    "migration": "history",
    "deprecation": "history",
    "webhook-conduct": "conduct",
    "kubernetes-upgrade": "kubernetes",
}
# phase -> the phases whose work it needs first
NEEDS: dict[str, tuple[str, ...]] = {
    "history": (),
    "candidate": (),
    "conduct": (),
    "kubernetes": ("history", "candidate"),  # it carries their objects across the upgrade
}


def key(check: str, subject: str) -> str:
    """How a result, a planned check and a phase's work in progress name one check."""
    return f"{check}:{subject}"


def release(index: int) -> str:
    """The subject of release ``index`` (0-based): "release 1"."""
    return f"release {index + 1}"


def transition(index: int) -> str:
    """The subject of the upgrade to release ``index`` (0-based) from the one before it."""
    return f"release {index}->{index + 1}"


def pair(crd: str, a: str, b: str) -> str:
    """The subject of a version pair: "crontabs.example.com v1->v2"."""
    return f"{crd} {a}->{b}"


def of_pair(subject: str) -> tuple[str, str, str]:
    """A version pair's subject as (CRD, A, B): ``pair``'s inverse."""
    crd, _, versions = subject.rpartition(" ")
    a, _, b = versions.partition("->")
    return crd, a, b


def kubernetes_step(older_minor: str, newer_minor: str) -> str:
    """The subject of an in-place Kubernetes upgrade: "1.36->1.37"."""
    return f"{older_minor}->{newer_minor}"


def about_release(subject: str, index: int) -> bool:
    """Whether a history check's subject is release ``index``'s work."""
    return subject in (release(index), transition(index))
