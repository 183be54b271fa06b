"""The harness reads every manifest of this repository as kubectl reads it.

kubectl's own reading is ``kubectl patch --local --type json -p [] -o json -f FILE``: the
``-f`` reading of every kubectl command (the builder: YAMLOrJSONDecoder, sigs.k8s.io/yaml,
lists flattened), an empty JSON patch, and the objects printed, with no server and no
kubeconfig (``kubectl create --dry-run=client`` asks a server's discovery for each kind, so it
cannot run offline). The kubectl is the session's, from the binary cache (``nox -s tests``
builds it first); without it these tests fail, they never skip.

Files that are not Kubernetes objects (gate files, kustomizations, the gate's JSON reports)
are not compared: each must be one kubectl refuses for want of a kind, so a manifest can never
be left out by mistake, nor a non-manifest compared.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from crdharness import manifests_yaml
from crdharness.binaries import assets, versions
from crdharness.errors import HarnessError

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "data" / "hostile-scalars-crd.yaml"
FILES = sorted(
    path
    for folder in ("examples", "tests/data", "manifests")
    for path in (ROOT / folder).rglob("*")
    if path.suffix in (".yaml", ".yml", ".json")
)


def is_manifest(path: Path) -> bool:
    """False for the files that are no Kubernetes object: the gate's own files."""
    relative = path.relative_to(ROOT)
    return not (
        (relative.parts[0] == "examples" and relative.name.startswith("gate"))
        or relative.name == "kustomization.yaml"
        or relative.parts[:3] == ("tests", "data", "reports")
    )


@pytest.fixture(scope="module")
def kubectl() -> Path:
    release = versions.resolve(None)
    directory = os.environ.get(assets.ASSETS_ENV_VAR)
    found = (
        assets.from_directory(Path(directory), release) if directory else assets.from_cache(release)
    )
    if found is None:
        pytest.fail(
            f"kubectl {release.kubernetes} is not in the binary cache: run "
            "`python -m crdharness binaries` first (`nox -s tests` does)"
        )
    return found.kubectl


def kubectl_reads(kubectl: Path, path: Path, home: Path) -> subprocess.CompletedProcess:
    command = [str(kubectl), "patch", "--local", "--type", "json", "-p", "[]", "-o", "json"]
    return subprocess.run(
        [*command, "-f", str(path)],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(home)},  # no kubeconfig
    )


def printed_objects(stdout: str) -> list:
    """kubectl's objects, one JSON value each, numbers read as kubectl reads JSON (int64
    when whole and in range, else float64)."""
    number = lambda text: int(text) if int(text) in manifests_yaml.INT64 else float(text)  # noqa: E731
    decoder = json.JSONDecoder(parse_int=number)
    found, at = [], 0
    while (at := len(stdout) - len(stdout[at:].lstrip())) < len(stdout):
        value, at = decoder.raw_decode(stdout, at)
        found.append(value)
    return found


def exact(objects: list) -> str:
    """A spelling in which true, 1 and 1.0 differ (== holds them equal)."""
    return json.dumps(objects, sort_keys=True, indent=1)


def test_every_manifest_and_the_hostile_one_are_compared():
    compared = [f for f in FILES if is_manifest(f)]
    assert HOSTILE in compared
    assert len(compared) >= 50, compared  # examples/ alone has more: the walk found them


@pytest.mark.parametrize("path", FILES, ids=[str(f.relative_to(ROOT)) for f in FILES])
def test_the_harness_reads_a_file_as_kubectl_does(kubectl, tmp_path, path):
    done = kubectl_reads(kubectl, path, tmp_path)
    if not is_manifest(path):
        assert done.returncode != 0, f"kubectl reads {path}: it is a manifest, compare it"
        assert "Object 'Kind' is missing" in done.stderr, done.stderr
        return
    assert done.returncode == 0, done.stderr
    assert exact(manifests_yaml.read(path)) == exact(printed_objects(done.stdout))


REFUSED = {
    "infinity.yaml": "x: .inf\n",
    "null-key.yaml": "x: {~: 1}\n",
    "self-alias.yaml": "x: &a [*a]\n",
    "bad-tag.yaml": "x: !!int abc\n",
    "separator.yaml": "x: 1\n--- y: 2\n",
    "flow.yaml": "x: {a: [b}\n",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_kubectl_refuses_the_harness_refuses(kubectl, tmp_path, name):
    path = tmp_path / name
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: refused}\n" + REFUSED[name])
    assert kubectl_reads(kubectl, path, tmp_path).returncode != 0
    with pytest.raises(HarnessError, match=r":\d+: not valid YAML: "):
        manifests_yaml.read(path)
