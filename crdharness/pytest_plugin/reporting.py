"""What a run reports: on a failing test, the end of each control-plane log and the claims of
the behaviours it covers; after a failing session, the failure bundle; transcripts of the
documented scenarios; behaviour IDs as JUnit properties."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from crdharness.progress import to_stderr
from crdharness.pytest_plugin.options import STARTED
from crdharness.pytest_support import basetemp

BUNDLE = pytest.StashKey[Path]()  # where this session's failure bundle went


def write_failure_bundle(config: pytest.Config, cluster) -> None:
    from crdharness.reports import bundle

    temp = basetemp(config)  # webhook logs and review records
    objects = config.getoption("--failure-bundle") == "full"
    extra = [*temp.rglob("webhook-records.jsonl"), *temp.rglob("webhook.log")] if objects else []
    try:
        path = bundle.write(cluster, extra, objects=objects)
    except Exception as exc:
        to_stderr(f"could not write the failure bundle: {exc}")
        return
    config.stash[BUNDLE] = path
    to_stderr(f"failure bundle: {path}")


@functools.cache
def _claims() -> dict[str, str]:
    """Behaviour ID -> its one-line claim, from the catalogue (where this checkout has it)."""
    from crdharness.reports import coverage

    if not coverage.CATALOGUE.exists():
        return {}
    return {b.id: b.summary for b in coverage.catalogue()}


def behaviour_ids(item: pytest.Item) -> list[str]:
    return [i for mark in item.iter_markers("behaviour") for i in mark.args]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    """On a failing test, say which documented behaviours it proves (ID and claim); on a
    failing cluster test, attach the end of each control-plane log."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    ids = behaviour_ids(item)
    if ids:
        claims = _claims()
        lines = [f"{i}: {claims.get(i, '(not in the catalogue)')}" for i in ids]
        report.sections.append(("behaviours this test covers", "\n".join(lines)))
    running = getattr(item, "funcargs", {}).get("cluster")
    count = item.config.getoption("--log-lines")
    if running is None or count <= 0:
        return
    for name, path in running.logs.items():
        try:
            lines = path.read_text(errors="replace").splitlines()[-count:]
        except OSError:
            continue
        report.sections.append((f"{name} log (last {count} lines of {path})", "\n".join(lines)))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Show the transcripts of the documented scenarios that ran, and where they were saved;
    last, where the failure bundle is."""
    from crdharness.scenarios.transcript import written_since

    for path in written_since(config.stash[STARTED]):
        terminalreporter.section(f"transcript {path.stem}")
        terminalreporter.write_line(path.read_text())
        terminalreporter.write_line(f"(saved to {path})")
    bundle_path = config.stash.get(BUNDLE, None)
    if bundle_path is not None:
        terminalreporter.section("failure bundle")
        held = (
            "logs, CRDs, objects and stored versions"
            if config.getoption("--failure-bundle") == "full"
            else "logs, CRDs and the stored version of each object (no object's content)"
        )
        terminalreporter.write_line(f"{held}: {bundle_path}")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Behaviour IDs as JUnit properties, so CI reports can be read by behaviour."""
    for behaviour in behaviour_ids(item):
        item.user_properties.append(("behaviour", behaviour))
