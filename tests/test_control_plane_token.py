"""The local control plane's admin kubeconfig authenticates with a static token, not a client
certificate: kube-apiserver verifies a certificate's chain on every request (~7 % of its CPU
under the gate's writes), a token file is a map look-up. Every client the harness makes (the
official client, the gate's own requests) must be that admin."""

import pytest
import yaml

REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
REVIEWS = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


@pytest.mark.e2e
def test_the_gates_requests_and_the_official_client_are_the_same_user(cluster):
    from crdharness.backends.controlplane.plane import ADMIN_GROUPS, ADMIN_USER
    from crdharness.cluster import CONTROL_PLANES

    answer = cluster.http.post(REVIEWS, json=REVIEW)
    assert answer.status_code == 201, answer.text
    gates = answer.json()["status"]["userInfo"]
    from kubernetes import client

    review = client.AuthenticationV1Api(cluster.api_client).create_self_subject_review(REVIEW)
    officials = review.status.user_info
    assert gates["username"] == officials.username != "system:anonymous", (gates, officials)
    if cluster.can(CONTROL_PLANES):  # the harness's own control plane: its admin, by token
        (user,) = yaml.safe_load(cluster.kubeconfig.read_text())["users"]
        assert set(user["user"]) == {"token"}, user["user"].keys()
        assert gates["username"] == ADMIN_USER, gates
        assert set(ADMIN_GROUPS) <= set(gates["groups"]), gates
