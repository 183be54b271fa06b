"""Which collected tests run: ``--behaviour`` picks by catalogue ID, and tests that only the
local backend can run are deselected elsewhere, and said so."""

from __future__ import annotations

import pytest

from crdharness.pytest_plugin.reporting import behaviour_ids

LOCAL_ONLY = pytest.StashKey[int]()  # tests deselected: they need the local backend
NO_WEBHOOK = pytest.StashKey[int]()  # tests deselected by --webhook-tests-only
WEBHOOK_FIXTURES = ("conversion_webhook", "isolated_webhook")

LOCAL_ONLY_FIXTURES = (
    "exact_cluster",
    "isolated_webhook",
    "own_control_plane",
    "upgradable_cluster",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _deselect_local_only(config, items)
    _select_webhook_tests(config, items)
    _select_behaviours(config, items)


def _deselect_local_only(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that drive the webhook's fault modes or need a second API server without watch
    cache run on the local backend only; elsewhere they are deselected, and said so."""
    if config.getoption("--cluster") == "local":
        return
    local_only = [
        i for i in items if set(LOCAL_ONLY_FIXTURES) & set(getattr(i, "fixturenames", ()))
    ]
    if local_only:
        config.hook.pytest_deselected(items=local_only)
        items[:] = [i for i in items if i not in local_only]
        config.stash[LOCAL_ONLY] = len(local_only)


def _select_webhook_tests(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--webhook-tests-only``: keep the tests that start the reference webhook."""
    if not config.getoption("--webhook-tests-only"):
        return
    without = [i for i in items if not set(WEBHOOK_FIXTURES) & set(getattr(i, "fixturenames", ()))]
    if without:
        config.hook.pytest_deselected(items=without)
        items[:] = [i for i in items if i not in without]
        config.stash[NO_WEBHOOK] = len(without)


def pytest_report_collectionfinish(config: pytest.Config):
    lines = []
    count = config.stash.get(LOCAL_ONLY, 0)
    if count:
        lines.append(
            f"crdharness: {count} tests deselected: they need --cluster=local "
            "(webhook fault modes, an API server without watch cache)"
        )
    count = config.stash.get(NO_WEBHOOK, 0)
    if count:
        lines.append(
            f"crdharness: {count} tests deselected by --webhook-tests-only: they do not use "
            "the reference webhook"
        )
    return lines or None


def _select_behaviours(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--behaviour SV-03,HS``: keep the tests naming one of these IDs (or ID prefixes)."""
    wanted = config.getoption("--behaviour")
    if not wanted:
        return
    prefixes = [w.strip().upper() for w in wanted.split(",") if w.strip()]

    def matches(item: pytest.Item) -> bool:
        return any(i == p or i.startswith(p + "-") for i in behaviour_ids(item) for p in prefixes)

    kept = [item for item in items if matches(item)]
    config.hook.pytest_deselected(items=[item for item in items if not matches(item)])
    items[:] = kept
