"""Why the user's webhook did not become ready, in words a user can act on.

A webhook that exits at start or never answers a review is the most common first failure of
a gate run: an unknown flag in ``command:``, a port of its own instead of ``{port}``, a path
that is not the CRD's, or client certificates demanded (controller-runtime's webhook server
can require them). The gate could not run: the message leads with the cause and a fix, then
the webhook's own last lines.
"""

from __future__ import annotations

from dataclasses import dataclass

LOG_LINES = 20  # lines of the webhook's own output shown with the cause

# (what the webhook printed, what to do): the first that matches its output is the hint.
PRINTED = (
    (
        ("flag provided but not defined", "unknown flag", "unknown shorthand flag"),
        "it does not take a flag `command:` gives it: check `command:` (the placeholders are "
        "{tls_cert}, {tls_key}, {cert_dir}, {port}, {ca}, {kubeconfig})",
    ),
    (
        ("client didn't provide a certificate", "certificate required"),
        "it demands client certificates, which neither the API server's conversion calls nor "
        "the gate present: start it without client-certificate verification for the gate",
    ),
    (
        ("address already in use",),
        "its port is taken: pass {port} in `command:` so the gate gives it a free one",
    ),
    (
        ("no such file or directory", "not found", "permission denied"),
        "its command did not start: check the program in `command:` (relative to the gate "
        "file) and that it is built (`build:` has the gate build it, named {binary})",
    ),
)


@dataclass
class ProbeSeen:
    """What the readiness probes saw last: an HTTP status, or an error reaching it."""

    status: int | None = None
    error: str | None = None


def hint(log: str, seen: ProbeSeen, path: str | None) -> str:
    """The likely cause and its fix, from the webhook's output and the probes' answers."""
    lowered = f"{log}\n{seen.error or ''}".lower()
    for needles, advice in PRINTED:
        if any(needle in lowered for needle in needles):
            return advice
    if seen.status == 404:
        return (
            f"it answers, but not at {path}: the CRD's conversion path (or the gate file's "
            "`path:`) must be where it serves conversion"
        )
    if seen.status is not None:
        return (
            f"it answered HTTP {seen.status} to an empty ConversionReview at {path}: it must "
            "answer 200 with the review's uid"
        )
    if seen.error and "refused" in seen.error.lower():
        return (
            "nothing listens on the port the gate gave it: pass {port} in `command:` and "
            "listen on it (not on a fixed port), or it started no webhook server at all (some "
            "programs serve webhooks only when a certificate exists at a fixed path: point "
            "that path at {cert_dir})"
        )
    if seen.error and "ssl" in seen.error.lower():
        return (
            "the TLS handshake failed: serve the certificate the gate made ({tls_cert}, "
            "{tls_key}, or the files in {cert_dir})"
        )
    return "see its output below; `ready_timeout:` allows a slower start"


def hopeless(seen: ProbeSeen) -> bool:
    """Whether waiting longer cannot help: it refuses every client without a certificate."""
    return bool(seen.error) and "certificate required" in (seen.error or "").lower()


def explain(what_happened: str, log: str, seen: ProbeSeen, path: str | None) -> str:
    """One line of cause and fix, then the webhook's last lines (indented)."""
    shown = "\n".join(f"    {line}" for line in log.splitlines()[-LOG_LINES:]) or "    (nothing)"
    return (
        f"{what_happened}; {hint(log, seen, path)}\n"
        f"  the webhook's last {LOG_LINES} lines of output:\n{shown}"
    )
