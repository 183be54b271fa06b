"""A release history of N CRDs of our own, in the style of ``examples/gate/narrowed``, for
``bench_gate_many``: a provider's generated CRDs, two to an API group, single-version.

Release 2 changes each CRD in one of three ways, chosen by its number (so the same N always
gives the same history):

- documentation only (``--docs-share``, 60 % by default): descriptions added, as a generator
  upgrade does; the gate must pass them;
- compatible: a new optional field; passes;
- a real break, planted in a few (``breaks``: one per hundred CRDs, at least one): a new
  required field, so every update of an object stored under release 1 is refused; the gate
  must FAIL each of them, by name.

    python -m benchmarks.many_crds 100 DIR     # writes DIR/release-1/, DIR/release-2/, gate.yaml
"""

from __future__ import annotations

import argparse
import copy
import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from crdharness.scenarios import crds

GROUP_SIZE = 2  # CRDs per API group (a group stays together in a shard)


@dataclass
class History:
    directory: Path
    gate_file: Path
    docs_only: list[str] = field(default_factory=list)
    compatible: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return {
            "crds": len(self.docs_only) + len(self.compatible) + len(self.broken),
            "docs_only": len(self.docs_only),
            "compatible": len(self.compatible),
            "broken": self.broken,
        }


def breaks(count: int) -> int:
    return max(1, count // 100)


def crd(index: int) -> dict:
    """Release 1 of CRD ``index``: a gadget with a title, a priority and a replica count."""
    spec = {
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 40},
            "priority": {"type": "string", "enum": ["low", "medium", "high"]},
            "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
        },
    }
    status = {
        "type": "object",
        "properties": {"state": {"type": "string", "enum": ["Open", "Closed"]}},
    }
    schema = {
        "type": "object",
        "required": ["spec"],
        "properties": {"spec": spec, "status": status},
    }
    version = {**crds.version("v1", schema), "subresources": {"status": {}}}
    group = f"g{index // GROUP_SIZE:04d}.many.gate.example.com"
    return crds.manifest(group, f"Gadget{index:04d}", [version])


def described(manifest: dict) -> dict:
    """Descriptions added everywhere: documentation only."""
    changed = copy.deepcopy(manifest)
    schema = changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["description"] = f"A {changed['spec']['names']['kind']} (generated documentation)."
    for name, node in schema["properties"].items():
        node["description"] = f"The {name} of the gadget."
        for key, leaf in node.get("properties", {}).items():
            leaf["description"] = f"{key}: set by its owner."
    return changed


def with_owner(manifest: dict, required: bool) -> dict:
    """A new ``spec.owner``: optional (compatible) or required (a break for stored objects)."""
    changed = copy.deepcopy(manifest)
    spec = changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["owner"] = {"type": "string", "maxLength": 40}
    if required:
        spec["required"] = ["owner"]
    return changed


def generate(count: int, directory: Path, docs_share: float = 0.6) -> History:
    """Writes ``directory``/release-1/, release-2/ (one file per CRD) and gate.yaml."""
    first, second = directory / "release-1", directory / "release-2"
    for release in (first, second):
        release.mkdir(parents=True, exist_ok=True)
        for old in release.glob("*.yaml"):
            old.unlink()
    history = History(directory, directory / "gate.yaml")
    broken_every = max(count // breaks(count), 1)
    for index in range(count):
        manifest = crd(index)
        name = manifest["metadata"]["name"]
        # Documentation-only spread evenly: index i is one when the share's running total
        # passes a whole number there (docs_share of every run of CRDs).
        docs = int((index + 1) * docs_share) > int(index * docs_share)
        if index % broken_every == broken_every - 1 and len(history.broken) < breaks(count):
            changed = with_owner(manifest, required=True)
            history.broken.append(name)
        elif docs:
            changed = described(manifest)
            history.docs_only.append(name)
        else:
            changed = with_owner(manifest, required=False)
            history.compatible.append(name)
        file = f"{manifest['spec']['names']['plural']}.yaml"
        (first / file).write_text(yaml.safe_dump(manifest, sort_keys=False))
        (second / file).write_text(yaml.safe_dump(changed, sort_keys=False))
    history.gate_file.write_text(
        f"# {count} generated CRDs (benchmarks/many_crds.py): {len(history.docs_only)} "
        f"documentation-only, {len(history.compatible)} compatible, {len(history.broken)} "
        "broken (a new required field).\ncrds:\n  - release-1\n  - release-2\n"
    )
    return history


def without_docs_only(history: History, directory: Path) -> History:
    """A copy of ``history`` without its documentation-only CRDs (both releases)."""
    rest = History(directory, directory / "gate.yaml", [], history.compatible, history.broken)
    keep = set(history.compatible) | set(history.broken)
    for release in ("release-1", "release-2"):
        (directory / release).mkdir(parents=True, exist_ok=True)
        for file in (history.directory / release).glob("*.yaml"):
            if yaml.safe_load(file.read_text())["metadata"]["name"] in keep:
                (directory / release / file.name).write_text(file.read_text())
    rest.gate_file.write_text(
        f"# {len(keep)} generated CRDs (benchmarks/many_crds.py), no documentation-only one."
        "\ncrds:\n  - release-1\n  - release-2\n"
    )
    return rest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("count", type=int)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--docs-share", type=float, default=0.6)
    args = parser.parse_args()
    made = generate(args.count, args.directory, args.docs_share)
    print(json.dumps(made.as_json(), indent=2))


if __name__ == "__main__":
    main()
