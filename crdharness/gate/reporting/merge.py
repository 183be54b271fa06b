"""``crdharness gate-merge DIR…``: the shards' reports (``gate --shard K/N``, one CI matrix
job each) made one, as one machine gating every CRD would have written it.

Each shard's ``report.json`` holds its whole report as data (``shard.data``, ``stored``);
the merge rebuilds one ``Report`` from them and writes it as any run's. A check about one
CRD comes from the one shard that gated it. A check about a whole release (install,
upgrade, migration, deprecation, the webhook's conduct) is in every shard: its result is
the worst of theirs, its details and counts are theirs together, and its evidence is the
shard's where all agree, their numbers summed where only the numbers differ, or their
lists of CRDs joined in the whole run's order.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from crdharness.errors import HarnessError
from crdharness.gate.checks import conduct, deprecation
from crdharness.gate.reporting import report, stored
from crdharness.gate.reporting.report import Report
from crdharness.gate.results import CheckResult, Debt

PASSED, FAILED, NOT_PROVEN, NOT_RUN = 0, 1, 2, 3


@dataclass
class ShardReport:
    directory: Path
    label: str  # "shard 2/4" (or the directory, where its report is missing)
    meta: dict  # index, count, gate_file, digest, crds, order
    run: Report | None  # None: the shard could not run
    cause: str = ""  # why it could not


def load(directories: Sequence[Path]) -> list[ShardReport]:
    """Every directory's shard report, checked to be shards of one gate file split the same
    way; a HarnessError in one line where they are not."""
    if not directories:
        raise HarnessError("gate-merge: name the shards' artifact directories (DIR…)")
    shards = [_load_one(Path(d)) for d in directories]
    known = [s for s in shards if s.meta]
    for first, other in itertools.pairwise(known):
        if other.meta["digest"] != first.meta["digest"]:
            raise HarnessError(
                f"gate-merge: {first.directory} and {other.directory} are reports of different "
                "gate files: merge the shards of one gate file's run"
            )
        if other.meta["count"] != first.meta["count"]:
            raise HarnessError(
                f"gate-merge: {first.directory} is a shard of {first.meta['count']} and "
                f"{other.directory} of {other.meta['count']}: merge the shards of one split"
            )
    seen: dict[int, Path] = {}
    for s in known:
        if s.meta["index"] in seen:
            raise HarnessError(
                f"gate-merge: {seen[s.meta['index']]} and {s.directory} are both {s.label}: "
                "give each shard's directory once"
            )
        seen[s.meta["index"]] = s.directory
    if known:
        count = known[0].meta["count"]
        for index in range(1, count + 1):
            if index not in seen:
                shards.append(
                    ShardReport(Path("-"), f"shard {index}/{count}", {}, None, "no report given")
                )
    return shards


def _load_one(directory: Path) -> ShardReport:
    path = directory / "report.json"
    versions = sorted(p.parent.name for p in directory.glob("k8s-*/report.json"))
    if versions and not path.is_file():
        raise HarnessError(
            f"gate-merge: {directory} holds one report per Kubernetes version "
            f"({', '.join(versions)}): merge each version's apart "
            f"(gate-merge A/{versions[0]} B/{versions[0]} ...)"
        )
    try:
        data = json.loads(path.read_text())
    except OSError:
        return ShardReport(directory, str(directory), {}, None, f"no report.json in {directory}")
    except ValueError:
        return ShardReport(directory, str(directory), {}, None, f"{path} is not JSON")
    meta = data.get("shard")
    if not isinstance(meta, dict):
        if data.get("verdict") == report.NOT_RUN:  # stopped before it knew its share
            return ShardReport(directory, str(directory), {}, None, str(data.get("not_run")))
        raise HarnessError(
            f"gate-merge: {path} is not a shard's report: run the gate with --shard K/N"
        )
    label = f"shard {meta['index']}/{meta['count']}"
    if data.get("verdict") == report.NOT_RUN or "data" not in meta:
        cause = str(data.get("not_run") or "the report holds no results")
        return ShardReport(directory, label, meta, None, cause)
    return ShardReport(directory, label, meta, stored.from_data(meta["data"]))


def merge(shards: list[ShardReport]) -> Report:
    """One report of the shards that ran, as one machine would have written it."""
    ran = [s for s in shards if s.run is not None]
    order: list[str] = next((s.meta["order"] for s in ran), [])
    position = Order(order)
    runs = [s.run for s in ran if s.run is not None]
    kubernetes = {r.kubernetes for r in runs if r.results}
    if len(kubernetes) > 1:
        raise HarnessError(
            "gate-merge: the shards ran on different Kubernetes versions "
            f"({', '.join(sorted(kubernetes))}): merge the shards of one version's run"
        )
    by_key: dict[str, list[CheckResult]] = {}
    for run in runs:
        for result in run.results:
            by_key.setdefault(result.key, []).append(result)
    merged = Report(
        [_merged_result(parts, position) for parts in by_key.values()],
        next(iter(kubernetes), runs[0].kubernetes if runs else ""),
    )
    for run in runs:
        for why, count in run.refused.items():
            merged.refused[why] = merged.refused.get(why, 0) + count
        for why, example in run.refused_examples.items():
            merged.refused_examples.setdefault(why, example)
        for t, counts in run.ignored.items():
            into = merged.ignored.setdefault(t, {})
            for key, n in counts.items():
                into[key] = into.get(key, 0) + n
        for i, crds in run.stored_after.items():
            merged.stored_after.setdefault(i, {}).update(crds)
        for step, seconds in run.timings.items():  # the matrix's wall time: its slowest
            merged.timings[step] = max(merged.timings.get(step, 0.0), seconds)
        merged.notes += [n for n in run.notes if n not in merged.notes]
        merged.hazards += [h for h in run.hazards if h not in merged.hazards]
        # The webhook's conduct is judged in every shard: its debt is one per kind of answer.
        merged.debt += [d for d in run.debt if not _conduct_said(d, merged.debt)]
        merged.changes += run.changes
        merged.pair_changes += run.pair_changes
        merged.objects_made.update(run.objects_made)  # by CRD: each in one shard
        merged.not_judged_locally = merged.not_judged_locally or run.not_judged_locally
    merged.objects_made = dict(sorted(merged.objects_made.items(), key=lambda kv: position(kv[0])))
    merged.accepted = next((r.accepted for r in runs if r.accepted), [])  # one gate file's
    for i, crds in merged.stored_after.items():
        merged.stored_after[i] = dict(sorted(crds.items(), key=lambda kv: position(kv[0])))
    merged.changes.sort(key=lambda c: (c.transition, position(c.crd)))
    merged.pair_changes.sort(key=lambda c: position(c.crd))
    merged.hazards = _in_order(merged.hazards, position)
    merged.debt.sort(key=lambda d: position(position.first_named(d.subject)))
    notes = [n for r in runs for n in r.debt_note.split("; ") if n]
    merged.debt_note = "; ".join(dict.fromkeys(notes))
    return merged


class Order:
    """The whole run's CRDs in the order one machine meets them: where a merged list puts
    each shard's lines."""

    def __init__(self, names: list[str]):
        self.index = {name: i for i, name in enumerate(names)}

    def __call__(self, name: str) -> int:
        return self.index.get(name, len(self.index))

    def first_named(self, text: str) -> str:
        """The CRD ``text`` names first in the run's order ('' for none)."""
        return min((n for n in self.index if n in text), key=self, default="")


def _conduct_said(debt: Debt, debts: list[Debt]) -> bool:
    """Whether ``debt`` is webhook-conduct's, of a kind ``debts`` already has."""
    return debt.check == "webhook-conduct" and any(
        d.check == debt.check and conduct.kind(d.evidence) == conduct.kind(debt.evidence)
        for d in debts
    )


def _in_order(lines: list[str], position: Order) -> list[str]:
    """Lines in the whole run's CRD order: each line that names a CRD starts a run, lines
    that name none go with the line before them (a headline's details)."""
    runs: list[tuple[int, list[str]]] = []
    for line in lines:
        named = position.first_named(line)
        if named or not runs:
            runs.append((position(named) if named else -1, [line]))
        else:
            runs[-1][1].append(line)
    return [line for _, block in sorted(runs, key=lambda r: r[0]) for line in block]


def _merged_result(parts: list[CheckResult], position: Order) -> CheckResult:
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    merged = CheckResult(first.check, first.subject)
    statuses = [p.passed for p in parts]
    merged.passed = False if False in statuses else (None if None in statuses else True)
    worst = [p for p in parts if p.passed is merged.passed]
    if merged.passed is False:  # the headline one machine shows: its first CRD's failure
        merged.evidence = min(
            worst, key=lambda p: position(position.first_named(p.evidence))
        ).evidence
    else:
        merged.evidence = _merged_evidence([p.evidence for p in worst], position)
    merged.details = _in_order(_joined(p.details for p in parts), position)
    merged.failed = _in_order(_joined(p.failed for p in parts), position)
    merged.allowed = _in_order(_joined(p.allowed for p in parts), position)
    merged.normalised = _in_order(_joined(p.normalised for p in parts), position)
    merged.pruned = _in_order(_joined(p.pruned for p in parts), position)
    merged.objects = [o for p in parts for o in p.objects]
    merged.unexplained = any(p.unexplained for p in parts)
    merged.coverage = next((p.coverage for p in parts if p.coverage), {})
    for p in parts:
        for key, value in p.counts.items():
            merged.counts[key] = merged.counts.get(key, 0) + value
    return merged


def _joined(lists) -> list[str]:
    return list(dict.fromkeys(line for lines in lists for line in lines))


# What a shard says of a release's check when none of its own CRDs has any: the other
# shards' lists are the whole run's.
SILENT = {deprecation.NONE_DEPRECATED}
# A count (of CRDs, objects, reads, writes): a number before a word, not a release's or a
# version's ("release 1 already refused", "v1", "1.37").
NUMBER = re.compile(r"(?<![\w.>/-])(?<!release )\d+(?= [A-Za-z(])")
PLURAL = re.compile(r"(\d+ \w+?)s\b")


def _shape(clause: str) -> str:
    """A clause with its counts masked (and their nouns made singular): what the same
    sentence about other CRDs looks like."""
    return NUMBER.sub("#", PLURAL.sub(r"\1", clause))


def _merged_evidence(texts: list[str], position: Order) -> str:
    """One evidence line for a release's check from its shards' lines: clause by clause
    ("; "), counts of the same clause summed, a clause only some shards have kept in its
    place; or, where the lines differ in a list of CRDs, that list joined in run order."""
    said = [t for t in texts if t not in SILENT]
    texts = said or texts  # a shard with none of them says nothing of the others' CRDs
    distinct = list(dict.fromkeys(texts))
    clauses = [t.split("; ") for t in texts]  # each shard's, the same text too: its counts
    if len({_shape(c[0]) for c in clauses}) == 1 and " ms" not in texts[0]:
        return "; ".join(_summed_clauses(clauses))
    if len(distinct) == 1:
        return distinct[0]
    prefix = os.path.commonprefix(distinct)  # noqa: RUF071 (text, not paths)
    prefix = prefix[: prefix.rfind(" ") + 1]
    rests = [t[len(prefix) :] for t in distinct]
    if prefix and all(";" not in r for r in rests):  # a list of CRDs: joined in run order
        items = [item for r in rests for item in r.split(", ")]
        return prefix + ", ".join(sorted(items, key=lambda i: position(position.first_named(i))))
    # Clauses each about one CRD ("nothing migrates (…): A: storedVersions […]; B: …"), some
    # in each shard: joined in run order, the words before the first one said once.
    per_crd = [c for r in rests for c in r.split("; ")]
    if prefix and all(c.split(":")[0] in position.index for c in per_crd):
        return prefix + "; ".join(sorted(per_crd, key=lambda c: position(c.split(":")[0])))
    return "; ".join(distinct)


def _summed_clauses(texts: list[list[str]]) -> list[str]:
    merged: list[list[str]] = []  # each: the clauses of one shape, one per shard having it
    for clauses in texts:
        at = 0
        for clause in clauses:
            same = next((i for i, m in enumerate(merged) if _shape(m[0]) == _shape(clause)), None)
            if same is None:
                merged.insert(at, [clause])
                at += 1
            else:
                merged[same].append(clause)
                at = same + 1
    return [_summed(group) for group in merged]


def _summed(clauses: list[str]) -> str:
    """Clauses of one shape with their counts added (worded as the one that is plural)."""
    if len(clauses) == 1:
        return clauses[0]
    numbers = [[int(n) for n in NUMBER.findall(c)] for c in clauses]
    sums = iter([sum(column) for column in zip(*numbers, strict=True)])
    worded = next((c for c in clauses if PLURAL.search(c)), clauses[0])
    return NUMBER.sub(lambda _: str(next(sums)), worded)


def exit_status(merged: Report, shards: list[ShardReport]) -> int:
    """Any finding: 1; else a shard that could not run: 3; else not proven: 2; else 0."""
    verdict = merged.verdict
    if verdict == report.FAIL:
        return FAILED
    if any(s.run is None for s in shards):
        return NOT_RUN
    return NOT_PROVEN if verdict == report.NOT_PROVEN else PASSED


def write(directory: Path, merged: Report, shards: list[ShardReport]) -> int:
    """The merged report in ``directory`` (report.json, report.md, objects/); the exit
    status. Shards that could not run are named in its notes, or make it "not run"."""
    status = exit_status(merged, shards)
    missing = [f"{s.label} could not run: {s.cause}" for s in shards if s.run is None]
    if status == NOT_RUN:
        report.write_not_run(directory, "; ".join(missing), [])
        return status
    merged.notes += missing
    merged.shard = {
        "merged": [
            {"shard": s.label, "directory": str(s.directory), "crds": len(s.meta.get("crds", []))}
            for s in shards
        ]
    }
    report.write(directory, merged)
    return status
