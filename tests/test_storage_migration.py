"""When the harness calls Kubernetes' own storage migration done: the e2e test (MG-07) reads
the CRD right after, so returning at "Succeeded" alone raced the migrator's CRD update."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from crdharness.binaries import versions
from crdharness.scenarios import storage_migration

SUCCEEDED = {"type": "Succeeded", "status": "True"}
RUNNING = {"type": "Running", "status": "True"}
COMPLETED = {"type": "Running", "status": "False", "reason": "MigrationCompleted"}


class Answers:
    """The API server's answers to the migration's GETs, in order (the last one repeats)."""

    def __init__(self, *conditions: list[dict]):
        self.states = [{"status": {"conditions": c}} for c in conditions]
        self.gets = 0

    def post(self, path, json):
        return SimpleNamespace(status_code=201, text="")

    def get(self, path):
        state = self.states[min(self.gets, len(self.states) - 1)]
        self.gets += 1
        return SimpleNamespace(json=lambda: state)


def migrate(minor: str, answers: Answers, nudge=None) -> dict:
    cluster = SimpleNamespace(http=answers)
    release = versions.resolve(minor)
    return storage_migration.migrate(
        cluster, release, "g.example.com", "things", "v1", 10, nudge=nudge
    )


def test_from_1_36_the_wait_lasts_until_the_migrator_has_updated_the_crd():
    answers = Answers([RUNNING], [RUNNING, SUCCEEDED], [SUCCEEDED, COMPLETED])
    done = migrate("1.37", answers)
    assert storage_migration.finished_with_crd(done)
    assert answers.gets == 3


def test_before_1_36_succeeded_is_the_end():
    answers = Answers([RUNNING], [RUNNING, SUCCEEDED], [SUCCEEDED, COMPLETED])
    done = migrate("1.35", answers)
    assert storage_migration.condition(done, "Succeeded")
    assert answers.gets == 2


def test_a_failed_migration_ends_the_wait_with_its_condition():
    failed = {"type": "Failed", "status": "True", "message": "no such resource"}
    with pytest.raises(AssertionError, match="no such resource"):
        migrate("1.37", Answers([failed]))


def test_the_nudge_comes_once_when_the_migrator_waits_for_the_garbage_collector():
    """A quiet resource's garbage-collector watch moves past the migration's resourceVersion
    only with a new event: the nudge is that event, sent once the version is taken."""
    nudges = []
    answers = Answers(
        [], [RUNNING], [RUNNING], [RUNNING], [RUNNING, SUCCEEDED], [SUCCEEDED, COMPLETED]
    )
    for taken in answers.states[2:]:
        taken["status"]["resourceVersion"] = "42"
    migrate("1.37", answers, nudge=lambda: nudges.append(answers.gets))
    assert nudges == [3], "nudged before the version was taken, or more than once"
