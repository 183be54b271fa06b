"""Part of check *install*: whether an applied CRD serves, and whose doing it is when not.

Right after a CRD is created or changed the API server answers a LIST with 429 "storage is
(re)initializing" while it builds its cache of the resource: it reads, and converts, every
stored object, which takes as long as the machine takes. That is waited out with no deadline of
its own (the run's ``timeout:`` bounds the run). The 429 stops being transient when it names a
stored object its conversion fails on ("failed to read one or more … StorageError: corrupt
object, … Key: /registry/<group>/<plural>/<name>") and a GET of that very object fails too:
while that object is stored, the cache is never built and the resource never serves.

Such an object was stored before the release was applied (nothing writes during an install).
A release that changes nothing of the CRD (the same schemas, converted by the same running
webhook or by none) cannot be what makes it unreadable: "not proven", never its finding.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass

import requests
from kubernetes import client

from crdharness.gate.api import Resource, call
from crdharness.gate.evidence import unchanged
from crdharness.gate.given.manifests import Release
from crdharness.gate.run.context import GateContext
from crdharness.polling import wait_for
from crdharness.scenarios import crds

# The stored object a 429 names: /registry/<group>/<plural>/[<namespace>/]<name>.
STORED_KEY = re.compile(
    r"Key: (?:/registry)?/(?P<group>[^/,\s]+)/(?P<plural>[^/,\s]+)/"
    r"(?:(?P<namespace>[^/,\s]+)/)?(?P<name>[^/,\s]+),"
)


@dataclass(frozen=True)
class Blocked:
    """A stored object that keeps a resource from serving at ``version``."""

    version: str
    namespace: str | None
    name: str
    said: str  # the API server's 429
    read: str  # a GET of that object at ``version``: its status and message

    @property
    def label(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def wait_settled(ctx: GateContext, manifest: dict) -> Blocked | None:
    """Wait until the CRD is Established, discovery lists it at exactly its served versions
    (as ``crds.wait_settled``; WaitTimeout past a minute), and a LIST answers at each served
    version, or a stored object is found that keeps it from ever answering (returned)."""
    api_client = ctx.cluster.api_client
    spec = manifest["spec"]
    served = {v["name"] for v in spec["versions"] if v.get("served")}
    unserved = {v["name"] for v in spec["versions"]} - served
    crds.wait_established(client.ApiextensionsV1Api(api_client), manifest["metadata"]["name"])
    crds.wait_resource_discovery(
        api_client, spec["group"], spec["names"]["plural"], served, unserved
    )
    resource = Resource.of(manifest)
    for version in sorted(served):
        outcome = wait_for(
            functools.partial(_answered, ctx, resource, version),
            math.inf,  # how long a cache takes to build is the machine's: the run's timeout
            f"LIST of {resource.plural}.{resource.group} at {version} to answer",
            interval=0.1,
            retry=(requests.RequestException,),
        )
        if isinstance(outcome, Blocked):
            return outcome
    return None


def _answered(ctx: GateContext, resource: Resource, version: str) -> Blocked | bool:
    """True once a LIST at ``version`` answers anything but 404 (not routed yet) or 429 (the
    cache still building); the object that keeps it from answering, once known; else False."""
    listed = call(ctx.cluster, "GET", resource.path(version, None))
    if listed.status not in (404, 429):
        return True  # an answer: also an error a test provoked on purpose
    found = STORED_KEY.search(listed.message) if listed.status == 429 else None
    if found is None:
        return False  # still building (or not routed yet)
    namespace, name = found["namespace"], found["name"]
    got = call(ctx.cluster, "GET", resource.path(version, namespace, name))
    if got.ok or got.status < 500:
        return False  # the object reads now: the cache's next attempt can too
    return Blocked(version, namespace, name, listed.message, f"{got.status} {got.message}")


def same_conversion(ctx: GateContext, release: Release, name: str) -> bool:
    """Whether ``release`` changes nothing of ``name`` from the release before it that could
    make a stored object unreadable: the same schemas (documentation aside) converted by the
    same running webhook, or by none."""
    if release.index == 0:
        return False
    previous = ctx.releases[release.index - 1]
    if name not in previous.crds:
        return False
    old, new = previous.crds[name], release.crds[name]
    if _text(unchanged.stripped(old)) != _text(unchanged.stripped(new)):
        return False
    pointed_old = ctx.pointed(old, previous)["spec"].get("conversion")
    pointed_new = ctx.pointed(new, release)["spec"].get("conversion")
    return _text(pointed_old) == _text(pointed_new)


def _text(value) -> str:
    return json.dumps(value, sort_keys=True)
