"""The documentation's "hypothetical series of events": its steps, as the page words them,
and what a transcript shows after each (``test_hs_series`` walks it on one control plane,
``test_control_plane_upgrade`` across a Kubernetes upgrade)."""

STEPS = {
    1: "The storage version is v1beta1. You create an object. It is stored at version v1beta1",
    2: "You add version v1 to your CustomResourceDefinition and designate it as the storage "
    "version. Here the schemas for v1 and v1beta1 are identical, which is typically the case "
    "when promoting an API to stable in the Kubernetes ecosystem.",
    3: "You read your object at version v1beta1, then you read the object again at version v1. "
    "Both returned objects are identical except for the apiVersion field.",
    4: "You create a new object. It is stored at version v1. You now have two objects, one of "
    "which is at v1beta1, and the other of which is at v1.",
    5: "You update the first object. It is now stored at version v1 since that is the current "
    "storage version.",
}


def snapshot(transcript, crd, namespace, names, webhook=None):
    """Record what a person would want to see after a step, and check the invariant (HS-6)."""
    transcript.observe("served versions", sorted(crd.served()))
    transcript.observe("storage version", crd.storage_version())
    transcript.observe("status.storedVersions", crd.stored_versions())
    for name in names:
        stored = crd.stored(name, namespace)
        at = stored.api_version.split("/", 1)[1]
        transcript.observe(f"etcd {name}", f"stored at {at} (mod_revision {stored.mod_revision})")
    if webhook is not None:
        for name in names:
            calls = webhook.reviews_for(name)
            summary = sorted(
                {f"{c['objects'][0]['apiVersion']}->{c['desiredAPIVersion']}" for c in calls}
            )
            transcript.observe(f"webhook reviews for {name}", f"{len(calls)} {summary}")
    crd.assert_storage_invariant()


def short(api_version: str) -> str:
    return api_version.split("/", 1)[1]


def without_api_version(obj):
    return {k: v for k, v in obj.items() if k != "apiVersion"}
