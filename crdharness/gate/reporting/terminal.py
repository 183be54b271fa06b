"""What the terminal shows of each failing check: the cause in one line, the schema paths its
failures name, and the lines of its first object around them (report.md has everything).

A failure is folded into one line only when it is the same as one shown above: the same
check, the same paths and the same kind of evidence. Failures that name no path are the same
only when their evidence is identical: two crashes of different webhooks, or a crash and a
refused duration, name no path either, and are not one failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from crdharness.gate import diff
from crdharness.gate.results import CheckResult
from crdharness.gate.shown import as_shown

OBJECT_LINES = 8  # lines of one object shown per failure in the terminal
PATHS_SHOWN = 5  # paths named per failure in the terminal (report.md names them all)
EVIDENCE = 300  # characters of the headline shown in a block
# What differs between two failures of one kind: numbers (counts, list indexes, ports),
# review uids, the names of the objects the gate makes up for itself and, where paths are
# named, the versions (each block's subject names its pair).
_UID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_MADE_UP = re.compile(r"\b(?:gate-recreated-[a-z0-9]+|(?:rt|r\d+|t\d+)-v\d+\w*(?:-v\d+\w*)?-\d+)\b")
_NUMBER = re.compile(r"\d+")
_VERSION = re.compile(r"\bv\d+(?:(?:alpha|beta)\d+)?\b")  # the subject names the pair


@dataclass(frozen=True)
class Shape:
    """What a failing result is, to know a repeat of it: its check, the schema paths its
    failures name and its evidence (with what differs between objects masked, where it
    names paths; as it is, where it names none)."""

    check: str
    paths: frozenset[str]
    evidence: str


def failure_paths(result: CheckResult) -> list[str]:
    """The schema paths ``result``'s failures name, in the order they are first named: each
    failure's form (``found``), and for a failure without one, the paths its own lines name.
    Never a note's (a check's latency, metadata the server restores) nor a version's."""
    formed = {p for found in result.found for p in found.form.paths}
    by_text = result.unexplained or not result.found  # a failure no form stands for
    paths, order = set(formed), dict[str, int]()
    said = dict.fromkeys([result.evidence, *result.failed])
    for text in said:
        if not by_text and formed <= order.keys():
            break  # every path is placed: no need to read further
        for path in map(diff.schema_path, diff.named_paths(text)):
            order.setdefault(path, len(order))
            if by_text:
                paths.add(path)
    return sorted(paths, key=lambda p: (order.get(p, len(order)), p))


def shape(result: CheckResult, paths: list[str]) -> Shape:
    evidence = result.evidence
    if paths:
        evidence = _MADE_UP.sub("<name>", _UID.sub("<uid>", evidence))
        evidence = _NUMBER.sub("N", _VERSION.sub("<version>", evidence))
    return Shape(result.check, frozenset(paths), evidence)


def failure_block(result: CheckResult, shown: dict[Shape, str]) -> list[str]:
    """What a person reads of one failure in the terminal: the check and subject, the
    one-line cause, the paths its failures name, and the first object's relevant lines
    only. A failure the same as one in ``shown`` (shape -> the subject it was shown for)
    is one line naming that one."""
    paths = failure_paths(result)
    same = shape(result, paths)
    if same in shown:
        return [
            f"FAIL {result.check} [{result.subject}]: the same failure as "
            f"[{shown[same]}] above" + (f" (paths: {_listed(paths)})" if paths else "")
        ]
    shown[same] = result.subject
    lines = [f"FAIL {result.check} [{result.subject}]", f"  {_cut(result.evidence, EVIDENCE)}"]
    if paths:
        lines.append(f"  {_paths_label(result)}: {_listed(paths)}")
    for title, obj in result.objects[:1]:
        yaml_lines = yaml.safe_dump(relevant(as_shown(obj), paths), sort_keys=False).splitlines()
        lines.append(f"  {title}:")
        lines += [f"    {_cut(line, EVIDENCE)}" for line in excerpt(yaml_lines, paths)]
    return lines


def _paths_label(result: CheckResult) -> str:
    """ "paths", unless the headline's own failure names none: then the paths are its other
    failures' (a status the webhook cannot decode is not about ``spec.owner.kind``)."""
    headline = next((f for f in result.found if f.evidence == result.evidence), None)
    if headline is not None and not headline.form.paths:
        return "paths of its other failures"
    return "paths"


def _listed(paths: list[str]) -> str:
    more = f" (+{len(paths) - PATHS_SHOWN} more)" if len(paths) > PATHS_SHOWN else ""
    return ", ".join(paths[:PATHS_SHOWN]) + more


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def excerpt(yaml_lines: list[str], paths: list[str]) -> list[str]:
    """At most ``OBJECT_LINES`` lines of an object's YAML, around the first named path's
    field (a deep value would fall past the first lines), saying what is left out."""
    if len(yaml_lines) <= OBJECT_LINES:
        return yaml_lines
    leaf = re.split(r"[.\[]", paths[0].replace("[]", ""))[-1] if paths else ""
    at = next(
        (
            i
            for i, line in enumerate(yaml_lines)
            if leaf and line.strip(" -").startswith(f"{leaf}:")
        ),
        0,
    )
    start = max(0, min(at - OBJECT_LINES // 2, len(yaml_lines) - OBJECT_LINES))
    shown = yaml_lines[start : start + OBJECT_LINES]
    before = [f"… ({start} lines above in the report)"] if start else []
    left = len(yaml_lines) - start - len(shown)
    after = [f"… ({left} more lines in the report)"] if left else []
    return [*before, *shown, *after]


def relevant(obj: dict, paths: list[str]) -> dict:
    """An object as a person needs it: apiVersion, kind, its name, and the subtrees at
    ``paths`` (or every field, when none is named), never what only the server writes."""
    metadata = obj.get("metadata") or {}
    kept: dict = {k: obj[k] for k in ("apiVersion", "kind") if k in obj}
    kept["metadata"] = {"name": metadata["name"]} if "name" in metadata else {}
    fields = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    tops = {p.split(".")[0].split("[")[0] for p in paths}
    if not tops & set(fields):
        return {**kept, **fields}
    for top in sorted(tops & set(fields)):
        below = [p for p in paths if p.split(".")[0].split("[")[0] == top]
        kept[top] = _project(fields[top], [p[len(top) :].lstrip(".") for p in below])
    return kept


def _project(value, paths: list[str]):
    """``value`` with only what ``paths`` (relative, schema-spelt) lead to."""
    if any(p in ("", "[]") or (p.startswith("[]") and not p[2:]) for p in paths):
        return value
    if isinstance(value, list):
        inner = [p[2:].lstrip(".") for p in paths if p.startswith("[]")]
        return [_project(v, inner) for v in value] if inner else value
    if not isinstance(value, dict):
        return value
    out = {}
    for key, child in value.items():
        below = [p[len(key) :].lstrip(".") for p in paths if p.split(".")[0].split("[")[0] == key]
        if below:
            out[key] = _project(child, below)
    return out or value
