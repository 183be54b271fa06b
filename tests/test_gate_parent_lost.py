"""A path whose object lost a parent of it whole (a webhook dropping a list item whose key
is empty) is not judged by that object: another one, with data on the way to the path (a
non-empty key), decides it; neither coverage nor the "paths that differ" table counts it as
held or proven lost from the dropped item alone (issue 43)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from crdharness.gate.checks import pair_differences
from crdharness.gate.checks.pair_record import PairRecord
from crdharness.gate.evidence import changes
from crdharness.gate.given.config import GateConfig
from crdharness.gate.results import DataChanged
from tests.gate_cli import gate_crdconvert, two_version_crd

ITEM = {
    "type": "object",
    "required": ["key"],
    "properties": {
        "key": {"type": "string"},
        "strategy": {"type": "string", "enum": ["Default", "Unicode"]},
    },
}
SPEC = {"type": "object", "properties": {"sources": {"type": "array", "items": ITEM}}}
ENTRY = {
    "name": "v1",
    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": SPEC}}},
}
PATH = "spec.sources[].strategy"


def change() -> changes.Change:
    return changes.Change(
        crd="stores.example.com",
        transition=0,
        version="v1->v2",
        path=PATH,
        kind=changes.ONE_VERSION,
        detail="at v1 only",
        parts=("spec", "sources", "[]", "strategy"),
        old=ITEM["properties"]["strategy"],
    )


def webhook(loses_strategy: bool, tried: list):
    """A round trip as the webhook makes it: an item with an empty key is dropped whole;
    otherwise ``strategy`` is lost (or kept)."""

    def attempt(body: dict, seen: PairRecord, refusals: list):
        tried.append(body)
        seen.counts["created"] += 1
        seen.counts["compared"] += 1
        items = body.get("spec", {}).get("sources") or []
        if any(item.get("key") == "" for item in items):
            return DataChanged(
                "v1->v2->v1 changed spec.sources", [], [], frozenset({"spec.sources[0]"})
            )
        if loses_strategy and any("strategy" in item for item in items):
            return DataChanged(
                "v1->v2->v1 changed spec.sources[0].strategy",
                [],
                [],
                frozenset({"spec.sources[0].strategy"}),
            )
        return None

    return attempt


def decide(loses_strategy: bool) -> tuple[changes.Change, object, list]:
    ctx = SimpleNamespace(
        config=GateConfig(Path("gate.yaml"), crds=[]), sample_bodies=lambda crd, version: []
    )
    seen = PairRecord()
    tried: list = []
    attempt = webhook(loses_strategy, tried)
    row = change()
    failure = pair_differences.round_trip_holding(
        ctx,  # type: ignore[arg-type]
        row,
        ENTRY,
        lambda body, refusals: attempt(body, seen, refusals),
        seen,
    )
    return row, failure, tried


def test_a_loss_behind_an_item_dropped_for_its_empty_key_is_found_with_a_key():
    row, failure, tried = decide(loses_strategy=True)
    assert tried[0]["spec"]["sources"][0]["key"] == ""  # the least object: dropped whole
    assert tried[-1]["spec"]["sources"][0]["key"] != ""  # then with data on the way
    assert row.decision == changes.PROVEN and "strategy" in row.evidence, row
    assert failure is not None and failure.paths == frozenset({"spec.sources[0].strategy"})


def test_a_path_the_webhook_keeps_whenever_the_key_is_set_is_cleared_not_proven_lost():
    row, failure, _ = decide(loses_strategy=False)
    assert row.decision == changes.CLEARED, row
    # The dropped item is still a finding of its own, not the path's.
    assert failure is not None and failure.paths == frozenset({"spec.sources[0]"})


SOURCE = {
    "type": "object",
    "required": ["key"],
    "properties": {
        "key": {"type": "string"},
        "strategy": {"type": "string", "enum": ["Default", "Unicode"]},
    },
}
SOURCES = {"type": "array", "items": SOURCE}
CRD = two_version_crd(
    "parentlost.example.com",
    "Store",
    {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"sources": SOURCES}}},
    },
)


@pytest.mark.e2e
@pytest.mark.slow
def test_a_field_lost_from_the_old_version_behind_items_dropped_for_empty_keys(tmp_path):
    # The webhook drops an item whose key is empty (both ways) and loses `strategy` on the
    # way to v2 only: the loss is named on the path itself, whatever the empty keys did.
    done, report = gate_crdconvert(
        tmp_path,
        CRD,
        "--fault drop-empty-key=spec.sources[].key",
        "--fault drop-field=v2:spec.sources[].strategy",
        generate=10,
    )
    assert done.returncode == 1, done.stdout[-3000:]
    pair = next(
        c for c in report["checks"] if c["check"] == "round-trip" and "v1->v2" in c["subject"]
    )
    assert pair["status"] == "FAIL" and "spec.sources[0].strategy" in json.dumps(pair), pair
    held = pair["coverage"]
    assert "spec.sources[].strategy" not in held.get("uncovered", {}), held
