"""Kubernetes upgrades and rollbacks with custom resources already in etcd.

Each test has a control plane of its own, started at the older of two adjacent supported
minors (``upgrade_pair``: the session's version and its neighbour), whose kube-apiserver is
replaced in place on the same etcd data — what an operator's one-minor upgrade does. Objects
go through the reference conversion webhook (v1beta1 ``hostPort`` <-> v1 ``host``/``port``).
"""

import pytest

from crdharness.scenarios.transcript import Transcript
from crdharness.scenarios.versioned import crontab_manifest, version, webhook_conversion
from e2e.series import STEPS, short, snapshot, without_api_version

SERVED = ("v1beta1", "v1")


def own_namespace(cluster, name="upgrade"):
    cluster.core.create_namespace({"metadata": {"name": name}})
    return name


def reads(crd, namespace, names):
    """Every object read at every served version, and each version's LIST."""
    seen = {(v, n): crd.get_object(v, namespace, n) for v in SERVED for n in names}
    for v in SERVED:
        listed = {o["metadata"]["name"]: o for o in crd.list_objects(v, namespace)}
        assert sorted(listed) == sorted(names), f"LIST at {v}"
        for n in names:
            assert listed[n] == seen[(v, n)], f"{n}: LIST at {v} differs from its GET"
    return seen


def stored_bytes(crd, namespace, names):
    return {n: crd.stored(n, namespace) for n in names}


@pytest.mark.behaviour("SV-03", "SV-08")
def test_objects_written_before_an_upgrade_read_the_same_after_it(
    upgradable_cluster, upgrade_pair, webhook_crd, conversion_webhook
):
    older, newer = upgrade_pair
    cluster = upgradable_cluster
    namespace = own_namespace(cluster)
    crd = webhook_crd(conversion_webhook, on=cluster)
    names = ["via-v1beta1", "via-v1"]
    with Transcript(
        f"upgrade-read-{older.minor}-to-{newer.minor}",
        f"Objects written under Kubernetes {older.minor}, read under {newer.minor}",
    ) as transcript:
        transcript.step("Before the upgrade")
        transcript.observe("Kubernetes", cluster.server_version())
        crd.create_object("v1beta1", namespace, names[0], hostPort="alpha:1")
        crd.create_object("v1", namespace, names[1], host="beta", port="2")
        transcript.action("POST one object via v1beta1 and one via v1 (storage v1beta1)")
        before = reads(crd, namespace, names)
        etcd_before = stored_bytes(crd, namespace, names)
        assert {crd.stored_version_of(n, namespace) for n in names} == {"v1beta1"}

        transcript.step("Upgrade kube-apiserver on the same etcd")
        took = cluster.switch_kubernetes(newer)
        transcript.action(f"stopped {older.git_version}, started {newer.git_version}")
        transcript.observe("Kubernetes", cluster.server_version())
        transcript.observe("API unavailable for", f"{took:.1f}s")
        assert cluster.server_version() == newer.git_version

        transcript.step("Read everything at every served version")
        after = reads(crd, namespace, names)
        for key, obj in before.items():
            assert after[key] == obj, f"{key} read differently after the upgrade"
        transcript.observe("objects identical to the reads before", len(after))
        assert stored_bytes(crd, namespace, names) == etcd_before, "a read rewrote etcd"
        transcript.observe("etcd bytes", "untouched")
        assert crd.read()["status"]["storedVersions"] == ["v1beta1"]

        transcript.step("Write one object under the new version")
        crd.patch_object("v1", namespace, names[0], {"port": "11"})
        transcript.action(f"PATCH {names[0]} via v1 (port 11)")
        written, untouched = stored_bytes(crd, namespace, names).values()
        transcript.observe(f"etcd {names[0]} mod_revision", written.mod_revision)
        assert written.mod_revision > etcd_before[names[0]].mod_revision
        assert written.json["hostPort"] == "alpha:11"
        assert untouched == etcd_before[names[1]]


@pytest.mark.behaviour("SV-02", "SV-07")
def test_a_storage_change_made_after_an_upgrade_survives_a_rollback(
    upgradable_cluster, upgrade_pair, webhook_crd, conversion_webhook
):
    older, newer = upgrade_pair
    cluster = upgradable_cluster
    namespace = own_namespace(cluster)
    crd = webhook_crd(conversion_webhook, on=cluster)
    with Transcript(
        f"upgrade-rollback-{older.minor}-{newer.minor}",
        f"Storage version changed under {newer.minor}, then rolled back to {older.minor}",
    ) as transcript:
        transcript.step("Under the older version")
        transcript.observe("Kubernetes", cluster.server_version())
        crd.create_object("v1beta1", namespace, "old", hostPort="alpha:1")

        transcript.step("Upgrade, then make v1 the storage version and write")
        cluster.switch_kubernetes(newer)
        transcript.observe("Kubernetes", cluster.server_version())
        crd.set_storage("v1")
        crd.create_object("v1", namespace, "new", host="beta", port="2")
        transcript.observe("status.storedVersions", crd.stored_versions())
        under_newer = reads(crd, namespace, ["old", "new"])
        assert crd.stored_version_of("new", namespace) == "v1"

        transcript.step("Roll back kube-apiserver on the same etcd")
        cluster.switch_kubernetes(older)
        transcript.observe("Kubernetes", cluster.server_version())
        assert cluster.server_version() == older.git_version
        assert reads(crd, namespace, ["old", "new"]) == under_newer
        transcript.observe("objects read as under the newer version", 2)
        assert crd.storage_version() == "v1"
        assert crd.stored_versions() == ["v1beta1", "v1"]
        assert [crd.stored_version_of(n, namespace) for n in ("old", "new")] == ["v1beta1", "v1"]

        transcript.step("Write under the rolled-back version")
        crd.patch_object("v1beta1", namespace, "old", {"hostPort": "gamma:3"})
        assert crd.stored_version_of("old", namespace) == "v1"
        assert crd.get_object("v1", namespace, "old")["host"] == "gamma"
        crd.assert_storage_invariant()


@pytest.mark.behaviour("HS-1", "HS-2", "HS-3", "HS-4", "HS-5", "HS-6")
def test_documented_series_of_events_with_an_upgrade_in_the_middle(
    upgradable_cluster, upgrade_pair, make_crd, group, conversion_webhook
):
    older, newer = upgrade_pair
    cluster = upgradable_cluster
    namespace = own_namespace(cluster)
    webhook = conversion_webhook
    manifest = crontab_manifest(
        group,
        [version("v1beta1", storage=True)],
        webhook_conversion(webhook),
        plural="passthroughs",
        kind="Passthrough",
    )

    def step(title, documented=""):
        transcript.step(title, documented)
        transcript.observe("Kubernetes", cluster.server_version())

    with Transcript(
        f"hypothetical-series-upgrade-{older.minor}-{newer.minor}",
        f"Hypothetical series of events, Kubernetes {older.minor} upgraded to {newer.minor} "
        "after step 2",
    ) as transcript:
        step("Setup", "a CRD with only v1beta1, served and stored")
        crd = make_crd(manifest, on=cluster)

        step("Step 1", STEPS[1])
        crd.create_object("v1beta1", namespace, "first", host="a", port="1")
        snapshot(transcript, crd, namespace, ["first"])
        assert crd.stored_version_of("first", namespace) == "v1beta1"
        revision = crd.stored("first", namespace).mod_revision

        step("Step 2", STEPS[2])
        crd.add_version(version("v1"), storage=True)
        snapshot(transcript, crd, namespace, ["first"])
        assert crd.stored_versions() == ["v1beta1", "v1"]

        transcript.step("Upgrade", "(not in the documentation) kube-apiserver replaced in place")
        cluster.switch_kubernetes(newer)
        transcript.action(f"stopped {older.git_version}, started {newer.git_version}, same etcd")
        transcript.observe("Kubernetes", cluster.server_version())
        assert cluster.server_version() == newer.git_version
        snapshot(transcript, crd, namespace, ["first"])
        assert crd.stored("first", namespace).mod_revision == revision

        step("Step 3", STEPS[3])
        at_beta = crd.get_object("v1beta1", namespace, "first")
        at_v1 = crd.get_object("v1", namespace, "first")
        assert [short(o["apiVersion"]) for o in (at_beta, at_v1)] == ["v1beta1", "v1"]
        assert without_api_version(at_beta) == without_api_version(at_v1)
        assert crd.stored("first", namespace).mod_revision == revision

        step("Step 4", STEPS[4])
        crd.create_object("v1beta1", namespace, "second", host="b", port="2")
        snapshot(transcript, crd, namespace, ["first", "second"])
        assert crd.stored_version_of("second", namespace) == "v1"
        assert crd.stored_version_of("first", namespace) == "v1beta1"

        step("Step 5", STEPS[5])
        crd.patch_object("v1", namespace, "first", {"port": "11"})
        snapshot(transcript, crd, namespace, ["first", "second"])
        assert crd.stored_version_of("first", namespace) == "v1"
        assert crd.stored_versions() == ["v1beta1", "v1"]
