"""The package's folders are layers: a module imports only from the flat foundations, its own
folder, and the folders before it in ``LAYERS`` (the README's layout section says the same).
The gate is layered the same way inside (``GATE_LAYERS``: what the user gives, the evidence,
the user's webhook, the run's state, the checks, the phases, what is reported). A new import
that breaks the order fails here, and no module imports itself again through others (not
even for type checking): an import cycle is a design that can no longer be read in order.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import crdharness

PACKAGE = Path(crdharness.__file__).parent
LAYERS = ["binaries", "webhooks", "scenarios", "backends", "reports", "gate", "pytest_plugin"]
# Flat modules above every folder: the command line and the sabotage run use all of them.
TOP = {"cli", "sabotage", "__main__"}
# The one flat module that names a folder's type: a Cluster carries its Release.
FOUNDATION_EXCEPTIONS = {("cluster", "binaries")}

GATE_LAYERS = ["given", "evidence", "webhook", "run", "checks", "phases", "reporting"]
# The gate's entry points, above its folders; its other flat modules (api, subjects,
# concurrency, diff, results) are the foundations every folder may use.
GATE_TOP = {"cli", "pytest_gate", "test_gate", "__init__"}


@dataclass(frozen=True)
class Layering:
    layers: list[str]
    top: set[str]
    exceptions: frozenset[tuple[str, str]] = frozenset()

    def rank(self, layer: str) -> int:
        return self.layers.index(layer) if layer in self.layers else -1  # -1: a foundation

    def judge(self, mine: str, theirs: str, module: str, where: str) -> str | None:
        if mine in self.top or theirs == mine:
            return None
        if theirs in self.top:
            return f"{where} imports {module} (only the top may)"
        if self.rank(theirs) > self.rank(mine) and (mine, theirs) not in self.exceptions:
            return f"{where} imports {module}, a later layer"
        return None


PACKAGE_LAYERS = Layering(LAYERS, TOP, frozenset(FOUNDATION_EXCEPTIONS))
GATE_LAYERING = Layering(GATE_LAYERS, GATE_TOP)


def imports_of(path: Path) -> set[str]:
    """Every ``crdharness`` module ``path`` imports, wherever the import is (at the top, in a
    function, under ``TYPE_CHECKING``); ``from package import name`` counts as
    ``package.name``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("crdharness"):
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("crdharness."))
    return found


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(("crdharness", *parts))] = path
    return modules


def _resolve(imported: str, modules: dict[str, Path]) -> str | None:
    """The module an import names: ``crdharness.gate.subjects.CHECKS`` is
    ``crdharness.gate.subjects``."""
    while imported and imported not in modules:
        imported = imported.rpartition(".")[0]
    return imported or None


def violations() -> list[str]:
    modules = _modules()
    found = []
    for name, path in modules.items():
        mine = name.split(".")[1:]
        if not mine:
            continue
        where = "/".join(path.relative_to(PACKAGE).with_suffix("").parts)
        for imported in sorted(imports_of(path)):
            target = _resolve(imported, modules)
            if target is None or target == "crdharness":
                continue
            theirs = target.split(".")[1:]
            verdict = PACKAGE_LAYERS.judge(mine[0], theirs[0], target, where)
            inside_gate = mine[0] == theirs[0] == "gate" and len(mine) > 1 and len(theirs) > 1
            if verdict is None and inside_gate:  # its folders, its foundations and its top
                verdict = GATE_LAYERING.judge(mine[1], theirs[1], target, where)
            if verdict:
                found.append(verdict)
    return found


def cycles() -> list[list[str]]:
    """Import cycles among the package's modules (each once, from its smallest name)."""
    modules = _modules()
    graph = {
        name: {t for i in imports_of(path) if (t := _resolve(i, modules)) and t != name}
        for name, path in modules.items()
    }
    # A package's own __init__ importing its submodules is how a package is made, not a cycle.
    for name in graph:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    found: list[list[str]] = []
    for start in sorted(graph):
        stack = [(start, [start])]
        seen: set[str] = set()
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    if min(path) == start:
                        found.append(path)
                elif nxt not in seen and nxt > start:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    return found


def test_each_folder_imports_only_earlier_layers():
    assert violations() == []


def test_every_gate_folder_has_its_layer():
    folders = {p.parent.name for p in (PACKAGE / "gate").glob("*/__init__.py")}
    assert folders == set(GATE_LAYERS)


def test_no_module_imports_itself_through_others():
    assert cycles() == []


def test_the_check_sees_a_backward_import(tmp_path, monkeypatch):
    package = tmp_path / "crdharness"
    (package / "binaries").mkdir(parents=True)
    (package / "gate" / "evidence").mkdir(parents=True)
    (package / "gate" / "checks").mkdir(parents=True)
    (package / "binaries" / "assets.py").write_text("from crdharness.backends import local\n")
    (package / "backends").mkdir()
    (package / "backends" / "local.py").write_text("")
    (package / "scenarios").mkdir()
    (package / "scenarios" / "crds.py").write_text("")
    (package / "errors.py").write_text("from crdharness.scenarios import crds\n")
    (package / "gate" / "evidence" / "changes.py").write_text(
        "from crdharness.gate.checks import upgrade\n"
    )
    (package / "gate" / "checks" / "upgrade.py").write_text(
        "from crdharness.gate.evidence import changes\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    assert violations() == [
        "binaries/assets imports crdharness.backends.local, a later layer",
        "errors imports crdharness.scenarios.crds, a later layer",
        "gate/evidence/changes imports crdharness.gate.checks.upgrade, a later layer",
    ]
    assert cycles() == [
        ["crdharness.gate.checks.upgrade", "crdharness.gate.evidence.changes"],
    ]


def test_the_readme_layout_names_the_layers_this_test_holds():
    """The layer order is for developers: README's Layout says it, not the users' --help."""
    readme = (PACKAGE.parent / "README.md").read_text()
    layout = readme[readme.index("## Layout") :]
    positions = [layout.index(f"`{layer}/`") for layer in LAYERS if layer != "gate"]
    assert positions == sorted(positions), "README's Layout lists the layers out of order"
    gate = layout[layout.index("`crdharness/gate/`") :]
    gate_positions = [gate.index(f"`{layer}/`") for layer in GATE_LAYERS]
    assert gate_positions == sorted(gate_positions)


def test_the_users_help_speaks_of_their_work_not_the_package_layout():
    import contextlib
    import io

    from crdharness.cli import main

    texts = {}
    for command in ("--help", "gate --help", "binaries --help"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main(command.split())
        texts[command] = " ".join(out.getvalue().split())
        for developer_words in ("layer", "``", "pytest_plugin", "given ->"):
            assert developer_words not in texts[command], (command, developer_words)
    assert "3 (could not run)" in texts["--help"]
    assert "--from-cluster" in texts["gate --help"]
