"""The local validator says what a real API server says: for every CRD the examples ship,
objects the gate draws (and some broken on purpose) are judged locally and created with a
server-side dry run on a real kube-apiserver; any difference in accept or refuse fails.
The API server is the judge here, never the validator."""

from __future__ import annotations

import copy
import json
import os
import random
from pathlib import Path

import pytest
import yaml

from crdharness.gate.api import call
from crdharness.gate.evidence import coverage_objects, objects, repair
from crdharness.gate.evidence.local_validation import LocalValidator
from crdharness.scenarios.versioned import unique_group

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
# random objects per version, beside the coverage objects and the broken ones
DRAWN = int(os.environ.get("CRDHARNESS_AGREE_DRAWN", "8"))
pytestmark = [pytest.mark.e2e, pytest.mark.slow]


# More CRD files or folders to hold it to (a real project's released CRDs, fetched outside
# the repository), separated by ":".
EXTRA = "CRDHARNESS_AGREE_EXTRA"


def example_crds() -> dict[str, dict]:
    """Every distinct CRD the examples ship (and ``$CRDHARNESS_AGREE_EXTRA`` names), by
    file and name."""
    found: dict[str, dict] = {}
    seen: set[str] = set()
    extra = [Path(p) for p in os.environ.get(EXTRA, "").split(":") if p]
    paths = [*EXAMPLES.rglob("*.yaml"), *(p for e in extra for p in [e, *e.rglob("*.yaml")])]
    for path in sorted(p for p in paths if p.is_file()):
        try:
            documents = list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError:
            continue  # a hostile manifest kept to be refused
        for doc in documents:
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            text = json.dumps(doc.get("spec"), sort_keys=True)
            if text not in seen:
                seen.add(text)
                where = path.relative_to(EXAMPLES) if path.is_relative_to(EXAMPLES) else path
                found[f"{where}:{doc['metadata']['name']}"] = doc
    return found


CRDS = example_crds()


def regrouped(crd: dict, group: str) -> dict:
    """``crd`` under a group of the test's own, without its conversion webhook (conversion
    plays no part in validating a create at the version sent)."""
    mine = copy.deepcopy(crd)
    mine["spec"]["group"] = group
    mine["metadata"] = {"name": f"{mine['spec']['names']['plural']}.{group}"}
    mine["spec"]["conversion"] = {"strategy": "None"}
    return mine


def broken(body: dict, rng: random.Random) -> dict:
    """``body`` with one of its values replaced by one of another kind, or dropped."""
    spoilt = copy.deepcopy(objects.intent(body))
    spots: list[tuple[dict | list, str | int]] = []

    def walk(value) -> None:
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in items:
            spots.append((value, key))
            if isinstance(child, (dict, list)):
                walk(child)

    walk(spoilt)
    if not spots:
        return {"spec": {"gate-broken": 1}}
    parent, key = rng.choice(spots)
    choice = rng.randrange(3)
    if choice == 0 and isinstance(parent, dict):
        del parent[key]  # type: ignore[arg-type]
    else:
        parent[key] = ["gate-broken", 10**12, {"x": 1}][choice]  # type: ignore[index]
    return spoilt


def server_accepts(cluster, manifest: dict, namespace: str) -> tuple[bool, str]:
    crd_plural = manifest["__plural__"]
    sent = {k: v for k, v in manifest.items() if k != "__plural__"}
    group, version = sent["apiVersion"].split("/")
    where = f"/namespaces/{namespace}" if "namespace" in sent["metadata"] else ""
    answer = call(cluster, "POST", f"/apis/{group}/{version}{where}/{crd_plural}?dryRun=All", sent)
    return answer.ok, answer.message


@pytest.fixture(scope="module")
def validator():
    with LocalValidator() as running:
        yield running


@pytest.mark.parametrize("key", sorted(CRDS), ids=[k.split("/")[-1] for k in sorted(CRDS)])
def test_the_local_validator_agrees_with_the_api_server(
    key, cluster, make_crd, namespace, validator
):
    crd = regrouped(CRDS[key], unique_group("agree"))
    make_crd(crd)
    rng = random.Random(key)
    disagreements: list[str] = []
    judged = 0
    for entry in crd["spec"]["versions"]:
        if not entry.get("served", True):
            continue
        version = entry["name"]
        drawn = objects.drawn_from(objects.bodies(entry), DRAWN, 0)
        drawn += coverage_objects.bodies(entry)
        # and what the gate sends: the drawn objects as its search repaired them
        fixed = [repair.repaired(validator, crd, entry, b)[0] for b in drawn[:DRAWN]]
        bodies = drawn + [b for b in fixed if b is not None]
        bodies += [broken(b, rng) for b in drawn[:DRAWN]]
        manifests = [
            objects.manifest(crd, version, f"agree-{i}", namespace, body)
            for i, body in enumerate(bodies)
        ]
        local = validator.validate(crd, version, copy.deepcopy(manifests))
        for manifest, errors in zip(manifests, local, strict=True):
            judged += 1
            accepted, message = server_accepts(
                cluster, {**manifest, "__plural__": crd["spec"]["names"]["plural"]}, namespace
            )
            if accepted != (not errors):
                disagreements.append(
                    f"{version}: server {'accepted' if accepted else 'refused: ' + message}; "
                    f"locally {[e.who for e in errors] or 'accepted'}; "
                    f"object {json.dumps(objects.intent(manifest))[:400]}"
                )
    assert judged > 0
    assert disagreements == [], "\n".join(disagreements[:5])
