"""The gate's findings as CI annotations: one per finding, on the candidate CRD file's line of
the field it names (GitHub's ``::error file=…,line=…::`` workflow command).

A proven change (report.json ``changes`` and ``version_pair_differences``) points to its
field in the candidate's schema at its version; a failing check with no such row to the
field its evidence names, or to the CRD's ``versions:`` line (install, migration). Read from
report.json, so any run's report can be annotated again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from crdharness.gate import diff
from crdharness.gate.evidence import changes
from crdharness.gate.given import manifests
from crdharness.manifests_yaml import KubeLoader


@dataclass(frozen=True)
class Annotation:
    file: Path
    line: int  # 1-based
    title: str
    message: str

    def github(self, root: Path) -> str:
        """The workflow command; ``file`` relative to ``root`` (the repository)."""
        try:
            where = self.file.relative_to(root)
        except ValueError:
            where = self.file
        return (
            f"::error file={_property(str(where))},line={self.line},"
            f"title={_property(self.title)}::{_data(self.message)}"
        )


def from_report(report: dict, candidate: list[Path]) -> list[Annotation]:
    """One annotation per proven change and per failing check the changes do not explain,
    in the files of the candidate release (``candidate``: its files or directories)."""
    crds = _crd_nodes(candidate)
    found: list[Annotation] = []
    explained: set[str] = set()
    for row in report.get("changes", []) + report.get("version_pair_differences", []):
        if row["decision"] != changes.PROVEN or row["crd"] not in crds:
            continue
        version = row["version"].split("->")[0]
        file, node = crds[row["crd"]]
        check = "upgrade" if row["transition"] != "candidate" else "round-trip"
        explained.add(check)
        found.append(
            Annotation(
                file,
                _line(node, version, row["path"]),
                f"{check}: {row['change']} at {row['path'] or row['crd']}",
                f"{row['transition']}: {row['detail']}. {row['evidence']}",
            )
        )
    for check in report.get("checks", []):
        if check["status"] != "FAIL" or check["check"] in explained:
            continue
        crd = next((name for name in crds if name in check["subject"]), None) or next(
            (name for name in crds if name in check["evidence"]), None
        )
        if crd is None and len(crds) == 1:
            crd = next(iter(crds))
        if crd is None:
            continue  # a finding about no CRD of the candidate (the webhook's conduct)
        file, node = crds[crd]
        version = _version_in(check["subject"]) or ""
        paths = [diff.schema_path(p) for p in diff.named_paths(check["evidence"])]
        found.append(
            Annotation(
                file,
                _line(node, version, paths[0] if paths else ""),
                f"{check['check']}: {check['subject']}",
                check["evidence"],
            )
        )
    return found


def _version_in(subject: str) -> str | None:
    """The first version of a version-pair subject: "crontabs.example.com v1->v2"."""
    match = re.search(r" ([a-z0-9]+)->", subject)
    return match.group(1) if match else None


def _crd_nodes(paths: list[Path]) -> dict[str, tuple[Path, yaml.Node]]:
    """Each CRD of the candidate: its file and its composed YAML node (lines kept)."""
    found: dict[str, tuple[Path, yaml.Node]] = {}
    for file in manifests.files(paths):
        try:
            documents = list(yaml.compose_all(file.read_text(), Loader=KubeLoader))
        except (OSError, yaml.YAMLError):
            continue
        for document in documents:
            if getattr(_get(document, "kind"), "value", None) != "CustomResourceDefinition":
                continue
            name = _get(_get(document, "metadata"), "name")
            if name is not None:
                found[name.value] = (file, document)
    return found


def _line(crd: yaml.Node, version: str, path: str) -> int:
    """The 1-based line of ``path`` in ``version``'s schema, or of the deepest part of it
    there; without a version, the ``versions:`` line."""
    spec = _get(crd, "spec")
    versions = _get(spec, "versions")
    best = _key_line(spec, "versions") or crd.start_mark.line + 1
    entry = next(
        (
            item
            for item in getattr(versions, "value", [])
            if getattr(_get(item, "name"), "value", None) == version
        ),
        None,
    )
    if entry is None:
        return best
    best = entry.start_mark.line + 1
    node = _get(_get(entry, "schema"), "openAPIV3Schema")
    for part in re.findall(r"[^.\[\]]+|\[\]", path):
        if node is None:
            break
        if part == "[]":
            node = _get(node, "items")
            continue
        properties = _get(node, "properties")
        line = _key_line(properties, part)
        node = _get(properties, part)
        if line is not None:
            best = line
    return best


def _get(node, key: str):
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((v for k, v in node.value if k.value == key), None)


def _key_line(node, key: str) -> int | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((k.start_mark.line + 1 for k, _ in node.value if k.value == key), None)


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")
