"""The package's folders are layers: a module imports only from the flat foundations, its own
folder, and the folders before it in ``LAYERS`` (the README's layout section says the same).
A new import that breaks the order fails here, before it becomes an import cycle."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import crdharness

PACKAGE = Path(crdharness.__file__).parent
LAYERS = ["binaries", "webhooks", "scenarios", "backends", "reports", "gate", "pytest_plugin"]
# Flat modules above every folder: the command line and the sabotage run use all of them.
TOP = {"cli", "sabotage", "__main__"}
# The one flat module that names a folder's type: a Cluster carries its Release.
FOUNDATION_EXCEPTIONS = {("cluster", "binaries")}


def layer_of(module: str) -> str:
    """``crdharness.backends.local`` -> ``backends``; a flat module -> its own name."""
    return module.split(".")[1]


def imports_of(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("crdharness"):
            if node.module == "crdharness":
                found.update(f"crdharness.{alias.name}" for alias in node.names)
            else:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("crdharness."))
    return found


def rank(layer: str) -> int:
    return LAYERS.index(layer) if layer in LAYERS else -1  # -1: a flat foundation


def violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        mine = parts[0]
        if mine in TOP:
            continue
        for module in sorted(imports_of(path)):
            theirs = layer_of(module)
            if theirs == mine:
                continue
            if theirs in TOP:
                found.append(f"{'/'.join(parts)} imports {module} (only the top may)")
            elif rank(theirs) > rank(mine) and (mine, theirs) not in FOUNDATION_EXCEPTIONS:
                found.append(f"{'/'.join(parts)} imports {module}, a later layer")
    return found


def test_each_folder_imports_only_earlier_layers():
    assert violations() == []


def test_the_check_sees_a_backward_import(tmp_path, monkeypatch):
    package = tmp_path / "crdharness"
    (package / "binaries").mkdir(parents=True)
    (package / "binaries" / "assets.py").write_text("from crdharness.backends import local\n")
    (package / "errors.py").write_text("from crdharness.scenarios import crds\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    assert violations() == [
        "binaries/assets imports crdharness.backends, a later layer",
        "errors imports crdharness.scenarios, a later layer",
    ]
