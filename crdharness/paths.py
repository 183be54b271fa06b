"""Where the repository's own files are: the harness runs from a checkout (``pip install -e``),
next to the webhook's source, the manifests, the e2e suite and ``artifacts/``."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "artifacts"
MANIFESTS = REPO / "manifests"
