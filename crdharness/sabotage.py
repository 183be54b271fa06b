"""A check of the suite itself: break the system under test on purpose, expect a failure.

Each sabotage injects one deliberate fault — into the reference webhook (through
``CRDCONVERT_FAULTS``) or into the storage-migration procedure (``CRDHARNESS_SABOTAGE``) —
runs the tests that should notice, and counts it as detected only if pytest reports test
failures (exit status 1). A suite that passes against a broken system is worthless.

    python -m crdharness sabotage [NAME ...]     (nox -s sabotage)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from crdharness import paths

ROOT = paths.REPO
OUT = paths.ARTIFACTS / "sabotage.md"


@dataclass(frozen=True)
class Sabotage:
    name: str
    what: str
    env: dict
    tests: tuple[str, ...]


WEBHOOK_E2E = ("e2e/test_webhook_triggers.py", "e2e/test_crontab_webhook.py")
SABOTAGES = (
    Sabotage(
        "webhook-drops-labels",
        "the webhook drops metadata.labels",
        {"CRDCONVERT_FAULTS": "drop-labels"},
        WEBHOOK_E2E,
    ),
    Sabotage(
        "webhook-reorders",
        "the webhook reverses the order of the converted objects",
        {"CRDCONVERT_FAULTS": "reorder"},
        ("tests/test_webhook_conversion.py",),
    ),
    Sabotage(
        "webhook-stale-apiversion",
        "the webhook answers Success with the old apiVersion",
        {"CRDCONVERT_FAULTS": "stale-apiversion"},
        WEBHOOK_E2E,
    ),
    Sabotage(
        "webhook-renames",
        "the webhook changes metadata.name",
        {"CRDCONVERT_FAULTS": "mutate-name"},
        WEBHOOK_E2E,
    ),
    Sabotage(
        "webhook-wrong-uid",
        "the webhook answers with another response.uid",
        {"CRDCONVERT_FAULTS": "wrong-uid"},
        WEBHOOK_E2E,
    ),
    Sabotage(
        "webhook-fails",
        "the webhook fails every review without a message",
        {"CRDCONVERT_FAULTS": "fail-without-message"},
        WEBHOOK_E2E,
    ),
    Sabotage(
        "webhook-loses-fields",
        "the webhook's converter loses host, port and hostPort",
        {"CRDCONVERT_FAULTS": "lose-fields"},
        WEBHOOK_E2E,
    ),
    Sabotage(
        "webhook-other-review-version",
        "the webhook answers in the other review version",
        {"CRDCONVERT_FAULTS": "other-review-version"},
        WEBHOOK_E2E,
    ),
    Sabotage(
        "migrator-skips-one",
        "the storage migrator skips the last object",
        {"CRDHARNESS_SABOTAGE": "migrator-skips-one"},
        (
            "e2e/test_storage_versions.py::test_full_removal_workflow",
            "e2e/test_storage_versions.py::test_migrator_retries_conflicts",
        ),
    ),
    Sabotage(
        "migrator-no-retry",
        "the storage migrator gives up on a conflict",
        {"CRDHARNESS_SABOTAGE": "migrator-no-retry"},
        ("e2e/test_storage_versions.py::test_migrator_retries_conflicts",),
    ),
    Sabotage(
        "stored-versions-cleaned-first",
        "status.storedVersions is cleaned before the objects are migrated",
        {"CRDHARNESS_SABOTAGE": "clean-stored-versions-first"},
        (
            "e2e/test_storage_versions.py::test_full_removal_workflow",
            "e2e/test_workflow.py::test_clients_of_both_versions_work_throughout_a_migration",
        ),
    ),
)


def run(sabotage: Sabotage, extra: list[str]) -> tuple[bool, int, float]:
    env = {**os.environ, **sabotage.env}
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-x",
            "-p",
            "no:cacheprovider",
            *sabotage.tests,
            *extra,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    # 1 = tests failed: detected. 0 = the suite passed against a broken system. Anything else
    # (usage error, crash, interrupted) proves nothing either way.
    return result.returncode == 1, result.returncode, time.monotonic() - started


# Sabotages run side by side, each in its own pytest process with its own control plane:
# most of a run is waiting (control plane start, polls), so three share two cores well.
WORKERS = int(os.environ.get("CRDHARNESS_SABOTAGE_WORKERS", "3"))


def main(names: list[str], extra: list[str]) -> int:
    chosen = [s for s in SABOTAGES if not names or s.name in names]
    lines = ["| sabotage | what | detected | pytest exit | seconds |", "|---|---|---|---:|---:|"]
    undetected = []
    with ThreadPoolExecutor(max_workers=max(WORKERS, 1)) as pool:
        outcomes = pool.map(lambda sabotage: run(sabotage, extra), chosen)
        for sabotage, (detected, code, seconds) in zip(chosen, outcomes, strict=True):
            lines.append(
                f"| {sabotage.name} | {sabotage.what} | {'yes' if detected else 'NO'} | "
                f"{code} | {seconds:.0f} |"
            )
            print(lines[-1], flush=True)
            if not detected:
                undetected.append(sabotage.name)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n")
    print(f"written to {OUT}")
    if undetected:
        print(f"NOT DETECTED: {', '.join(undetected)}", file=sys.stderr)
        return 1
    return 0
