"""An old object's writes are tried a second time only where a second try could answer
otherwise (``upgrade_writes.settled``): kube-apiserver's own validation refuses the same
content the same way every time, while a 429, a timeout or a webhook may not. On upjet's
CRDs the second tries were ~6 % of a gate run's requests, every one refused again alike."""

from pathlib import Path

import pytest

from crdharness.gate.checks.upgrade_objects import Written
from crdharness.gate.checks.upgrade_writes import RECREATE, TYPED_PATCH, Refusal, settled
from crdharness.scenarios import crds

VALIDATION = 'Widget.example.com "w" is invalid: spec.size: Invalid value: 9: must be <= 5'


def _refusal(status: int, message: str) -> Refusal:
    return Refusal(RECREATE, "v1", status, message)


def test_only_the_servers_own_judgement_of_the_content_is_settled():
    assert settled([_refusal(422, VALIDATION)], webhooks=False)
    assert settled([_refusal(500, f"{TYPED_PATCH} (/w; example.com/v1): errors: ...")], False)
    # What a second try may answer otherwise: tried again.
    assert not settled([_refusal(429, "storage is (re)initializing")], False)
    assert not settled([_refusal(504, "Timeout: request did not complete")], False)
    assert not settled([_refusal(500, "conversion webhook for example.com failed")], False)
    denied = 'admission webhook "check.example.com" denied the request: no'
    assert not settled([_refusal(422, denied)], False)
    # One refusal that may pass next time: the whole set is tried again.
    assert not settled([_refusal(422, VALIDATION), _refusal(429, "busy")], False)
    # A webhook takes part in the writes (conversion or admission): its answers may vary.
    assert not settled([_refusal(422, VALIDATION)], webhooks=True)


def _widgets(group: str, maximum: int | None = None) -> dict:
    size: dict = {"type": "integer"}
    if maximum is not None:
        size["maximum"] = maximum
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"size": size}},
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
        },
    }
    entry = crds.version("v1", schema)
    entry["subresources"] = {"status": {}}
    return crds.manifest(group, "Widget", [entry])


@pytest.mark.e2e
@pytest.mark.parametrize("admission", [False, True], ids=["no-webhook", "admission-webhook"])
def test_a_refusal_of_the_servers_own_validation_is_not_written_twice(
    cluster, make_crd, namespace, group, admission
):
    from crdharness.gate.api import apply_crd, call
    from crdharness.gate.checks import upgrade_rewrites
    from crdharness.gate.given.config import GateConfig
    from crdharness.gate.given.manifests import Release
    from crdharness.gate.run.context import GateContext
    from crdharness.polling import wait_for

    crd = make_crd(_widgets(group))
    crd.create_object("v1", namespace, "w", spec={"size": 9})
    # The release the object is written again under refuses its size (ratcheting lets the
    # updates of the unchanged value pass; the re-create is refused by validation).
    tightened = _widgets(group, maximum=5)
    assert apply_crd(cluster, tightened).ok
    collection = crd.path("v1", namespace)
    body = {"apiVersion": f"{group}/v1", "kind": "Widget", "spec": {"size": 9}}

    def refused_now() -> bool:
        again = {**body, "metadata": {"name": "probe"}}
        return call(cluster, "POST", f"{collection}?dryRun=All", again).status == 422

    wait_for(refused_now, 60, "the tightened schema to refuse a size of 9")

    name = tightened["metadata"]["name"]
    admission_files = [Path("admission.yaml")] if admission else []
    config = GateConfig(Path("gate.yaml"), crds=[], admission=admission_files)
    ctx = GateContext(cluster, config, [Release(0, "r1", {name: tightened})], {}, print)
    obj = Written(name, "v1", "w", namespace)
    sent: list[tuple[str, str]] = []
    original = cluster.http.exchange

    def exchange(method, path, *args, **kwargs):
        sent.append((method, path))
        return original(method, path, *args, **kwargs)

    cluster.http.exchange = exchange
    try:
        found = list(upgrade_rewrites._written_again(ctx, ctx.releases[0], obj))
    finally:
        del cluster.http.exchange  # the method again
    assert [(v, [(r.write, r.status) for r in refused]) for v, refused, _ in found] == [
        ("v1", [(RECREATE, 422)])
    ], found
    # The last write's answer stands for the read after the writes at that version
    # (``upgrade_writes.rewrite``): it is what a GET there answers now.
    (_, _, now), read = found[0], call(cluster, "GET", f"{collection}/w")
    assert now is not None and read.ok
    assert now == read.body, (now, read.body)
    recreates = [url for method, url in sent if method == "POST" and "dryRun=All" in url]
    # Without a webhook, one re-create: its refusal is the schema's, the same every time.
    # With one taking part, the writes are all made twice, as before.
    assert len(recreates) == (2 if admission else 1), sent
