"""Which catalogue behaviours the suite covers: ``python -m crdharness coverage``.

The catalogue (``e2e/behaviours.md``, a copy of ``shared/spec/behaviours.md``) numbers every
documented behaviour. Tests name the IDs they cover with ``@pytest.mark.behaviour(...)``;
``e2e/uncovered.yaml`` gives the reason for each testable ID that no test covers. The
report is read statically (no cluster needed), so CI can check it in a second.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import yaml

from crdharness import paths

ROOT = paths.REPO
CATALOGUE = ROOT / "e2e" / "behaviours.md"
REASONS = ROOT / "e2e" / "uncovered.yaml"
TEST_DIRS = (ROOT / "e2e", ROOT / "tests")
REQUIRED_GROUPS = "ABCDEFGHIJKLMNOP"  # the groups A-P; Q (parent page) where it can

_ITEM = re.compile(r"^\d+\.\s+\*\*([A-Z]{2}-\d+)(?: ★)?\*\*(.*)$")
_GROUP = re.compile(r"^###\s+([A-R])\.\s+(.*)$")


@dataclass(frozen=True)
class Behaviour:
    id: str
    group: str
    group_title: str
    summary: str


def catalogue(path: Path = CATALOGUE) -> list[Behaviour]:
    found, group, title = [], "", ""
    for line in path.read_text().splitlines():
        if line.startswith("## 3."):
            break  # past the checklist: the rest is commentary that repeats IDs
        header = _GROUP.match(line)
        if header:
            group, title = header.groups()
            continue
        item = _ITEM.match(line)
        if item and group:
            found.append(Behaviour(item.group(1), group, title, item.group(2).strip(": ")[:100]))
    return found


def covered(dirs=TEST_DIRS) -> dict[str, list[str]]:
    """ID -> the tests that name it, from ``@pytest.mark.behaviour`` decorators."""
    tests: dict[str, list[str]] = defaultdict(list)
    for directory in dirs:
        for path in sorted(directory.rglob("test_*.py")):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for decorator in node.decorator_list:
                    if isinstance(decorator, ast.Call) and ast.unparse(decorator.func).endswith(
                        "mark.behaviour"
                    ):
                        for arg in decorator.args:
                            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                                tests[arg.value].append(f"{path.relative_to(ROOT)}::{node.name}")
    return dict(tests)


def reasons(path: Path = REASONS) -> dict[str, str]:
    return yaml.safe_load(path.read_text()) or {} if path.exists() else {}


@dataclass
class Report:
    behaviours: list[Behaviour]
    tests: dict[str, list[str]]
    explained: dict[str, str]

    @property
    def known(self) -> set[str]:
        return {b.id for b in self.behaviours}

    @property
    def missing(self) -> list[Behaviour]:
        """Required behaviours neither covered nor explained."""
        return [
            b
            for b in self.behaviours
            if b.group in REQUIRED_GROUPS and b.id not in self.tests and b.id not in self.explained
        ]

    @property
    def unknown(self) -> list[str]:
        """IDs named by tests or reasons that the catalogue does not have (typos)."""
        return sorted((set(self.tests) | set(self.explained)) - self.known)

    def _state(self, b: Behaviour) -> str:
        if b.id in self.tests:
            return "covered"
        return "explained" if b.id in self.explained else "missing"

    def _row(self, label: str, items: list[Behaviour]) -> str:
        states = [self._state(b) for b in items]
        counts = [states.count(s) for s in ("covered", "explained", "missing")]
        return f"| {label} | {len(items)} | " + " | ".join(map(str, counts)) + " |"

    def render(self, verbose: bool = False) -> str:
        by_group: dict[str, list[Behaviour]] = defaultdict(list)
        for b in self.behaviours:
            by_group[b.group].append(b)
        lines = [
            "| group | behaviours | covered | explained | missing |",
            "|---|---:|---:|---:|---:|",
            *(self._row(f"{g}. {items[0].group_title}", items) for g, items in by_group.items()),
            self._row("all", self.behaviours),
            "",
        ]
        explained = [b for b in self.behaviours if self._state(b) == "explained"]
        if explained:
            lines.append("Not covered, with the reason:")
            lines.extend(f"- {b.id}: {self.explained[b.id]}" for b in explained)
            lines.append("")
        if self.missing:
            lines.append("MISSING (groups A-P, no test and no reason):")
            lines.extend(f"- {b.id}: {b.summary}" for b in self.missing)
            lines.append("")
        others = [
            b.id
            for b in self.behaviours
            if b.group not in REQUIRED_GROUPS and self._state(b) == "missing"
        ]
        if others:
            lines.append("Not covered outside groups A-P: " + ", ".join(others))
        if self.unknown:
            lines.append("UNKNOWN IDs named by tests or reasons: " + ", ".join(self.unknown))
        if verbose:
            lines.append("Covered by:")
            lines.extend(
                f"- {b.id}: {', '.join(self.tests[b.id])}"
                for b in self.behaviours
                if b.id in self.tests
            )
        return "\n".join(lines)


def report() -> Report:
    return Report(catalogue(), covered(), reasons())
