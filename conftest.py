"""Top-level conftest: the harness's pytest plugin (options, `cluster` and `namespace`)."""

import os

pytest_plugins = ["crdharness.pytest_plugin"]


def pytest_sessionfinish(session, exitstatus):
    """In CI a skipped test is a failure: a missing prerequisite must not pass quietly."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if os.environ.get("CI") and skipped and session.exitstatus == 0:
        reporter.write_line(f"CI: {skipped} test(s) skipped; failing the run", red=True)
        session.exitstatus = 1
