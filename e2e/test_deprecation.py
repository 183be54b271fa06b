"""D. Version deprecation (DP-*): Warning headers, kubectl, validation, metrics."""

import json

import pytest

from crdharness.scenarios.versioned import crontab_manifest, expect_invalid, version

CUSTOM = (
    "example.com/v1alpha1 CronTab is deprecated; see http://example.com/v1alpha1-v1 for "
    "instructions to migrate to example.com/v1 CronTab"
)
UKRAINIAN = (
    "example.com/v1alpha1 CronTab застарілий; див. http://example.com/v1alpha1-v1 для "
    "інструкцій щодо переходу на example.com/v1 CronTab"
)


def deprecation_crd(group, warning=CUSTOM):
    return crontab_manifest(
        group,
        [
            version("v1alpha1", deprecated=True, warning=warning),
            version("v1beta1", deprecated=True, subresources={"status": {}}),
            version("v1", storage=True, subresources={"status": {}}),
        ],
    )


def warnings_of(response) -> list[str]:
    header = response.headers.get("Warning")
    if not header:
        return []
    # Warning: 299 - "text"  (one or more, comma separated)
    return [part.split('"', 1)[1].rsplit('"', 1)[0] for part in header.split("299 - ")[1:]]


@pytest.fixture
def deprecated(make_crd, group):
    return make_crd(deprecation_crd(group))


@pytest.mark.behaviour("DP-01", "DP-02", "DP-04")
def test_default_warning_on_deprecated_version_and_none_on_current(
    cluster, deprecated, group, namespace
):
    beta = cluster.http.get(deprecated.path("v1beta1", namespace))
    assert beta.status_code == 200
    assert (
        beta.headers["Warning"]
        == f'299 - "{group}/v1beta1 CronTab is deprecated; use {group}/v1 CronTab"'
    )
    current = cluster.http.get(deprecated.path("v1", namespace))
    assert current.status_code == 200 and "Warning" not in current.headers


@pytest.mark.behaviour("DP-03")
def test_custom_warning_replaces_the_default(cluster, deprecated, namespace):
    response = cluster.http.get(deprecated.path("v1alpha1", namespace))
    assert warnings_of(response) == [CUSTOM]


@pytest.mark.behaviour("DP-05")
def test_every_verb_on_a_deprecated_version_warns_and_works(cluster, deprecated, group, namespace):
    expected = f"{group}/v1beta1 CronTab is deprecated; use {group}/v1 CronTab"
    base = deprecated.path("v1beta1", namespace)
    item = f"{base}/one"
    body = deprecated.body("v1beta1", "one", host="h", port="1")
    merge = {"Content-Type": "application/merge-patch+json"}
    calls = [
        ("POST", base, {"json": body}),
        ("GET", item, {}),
        ("GET", base, {}),
        ("GET", base, {"params": {"watch": "1", "timeoutSeconds": "1"}}),
        ("PATCH", item, {"data": '{"port": "2"}', "headers": merge}),
        ("GET", f"{item}/status", {}),
        ("PATCH", f"{item}/status", {"data": "{}", "headers": merge}),
    ]
    for method, path, kwargs in calls:
        response = cluster.http.request(method, path, **kwargs)
        assert response.status_code < 300, (method, path, response.text)
        assert warnings_of(response) == [expected], (method, path)
    current = cluster.http.get(item).json()
    put = cluster.http.put(item, json=current)
    assert put.status_code == 200 and warnings_of(put) == [expected]
    for method, path in (("DELETE", item), ("DELETE", base)):
        response = cluster.http.request(method, path)
        assert response.status_code < 300 and warnings_of(response) == [expected], (method, path)


@pytest.mark.behaviour("DP-06")
def test_kubectl_prints_the_warning_on_stderr(cluster, deprecated, group, namespace):
    result = cluster.kubectl("get", f"crontabs.v1beta1.{group}", "-n", namespace)
    assert (
        f"Warning: {group}/v1beta1 CronTab is deprecated; use {group}/v1 CronTab" in result.stderr
    )
    assert "Warning" not in result.stdout


@pytest.mark.behaviour("DP-07")
def test_deprecation_fields_persist(deprecated):
    versions = {v["name"]: v for v in deprecated.read()["spec"]["versions"]}
    assert versions["v1alpha1"]["deprecated"] is True
    assert versions["v1alpha1"]["deprecationWarning"] == CUSTOM
    assert versions["v1beta1"]["deprecated"] is True
    assert "deprecationWarning" not in versions["v1beta1"]


@pytest.mark.behaviour("DP-08")
def test_no_use_clause_without_a_higher_priority_replacement(cluster, make_crd, group, namespace):
    crd = make_crd(
        crontab_manifest(group, [version("v1", storage=True), version("v2", deprecated=True)])
    )
    response = cluster.http.get(crd.path("v2", namespace))
    assert warnings_of(response) == [f"{group}/v2 CronTab is deprecated"]


@pytest.mark.behaviour("DP-09")
@pytest.mark.parametrize(
    ("deprecated", "warning", "says"),
    [
        (False, "text", "can only be set for deprecated versions"),
        (True, "x" * 257, "must be <= 256 characters long"),
        (True, "", "must not be an empty string"),
        (True, "line\nbreak", "must only contain printable UTF-8 characters"),
    ],
)
def test_deprecation_warning_validation(cluster, group, deprecated, warning, says):
    manifest = crontab_manifest(
        group,
        [
            version("v1", storage=True),
            version("v2", deprecated=deprecated, warning=warning),
        ],
    )
    assert says in expect_invalid(cluster, manifest)


@pytest.mark.behaviour("DP-10", "VW-13")
def test_deprecated_requests_show_in_metrics(cluster, deprecated, group, namespace):
    cluster.http.get(deprecated.path("v1beta1", namespace))
    metrics = cluster.http.get("/metrics").text
    deprecated_line = [
        line
        for line in metrics.splitlines()
        if line.startswith("apiserver_requested_deprecated_apis{")
        and f'group="{group}"' in line
        and 'version="v1beta1"' in line
    ]
    assert deprecated_line and deprecated_line[0].endswith(" 1")
    requests_line = [
        line
        for line in metrics.splitlines()
        if line.startswith("apiserver_request_total{")
        and f'group="{group}"' in line
        and 'version="v1beta1"' in line
    ]
    assert requests_line, "apiserver_request_total has no v1beta1 entry for the group"


@pytest.mark.behaviour("DP-11")
def test_localized_warning_arrives_unchanged(cluster, make_crd, group, namespace):
    crd = make_crd(deprecation_crd(group, warning=UKRAINIAN))
    response = cluster.http.get(crd.path("v1alpha1", namespace))
    # Headers travel as bytes; Python's HTTP client decodes them as Latin-1.
    assert warnings_of(response) == [UKRAINIAN.encode().decode("latin-1")]
    assert UKRAINIAN in cluster.kubectl("get", f"crontabs.v1alpha1.{group}", "-n", namespace).stderr


@pytest.mark.behaviour("DP-12")
def test_discovery_of_a_deprecated_version_does_not_warn(cluster, deprecated, group):
    response = cluster.http.get(f"/apis/{group}/v1beta1")
    assert response.status_code == 200 and "Warning" not in response.headers
    assert json.loads(response.text)["kind"] == "APIResourceList"
