"""Where the repository's own files are: the harness runs from a checkout (``pip install -e``),
next to the webhook's source, the manifests, the e2e suite and ``artifacts/``."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "artifacts"
MANIFESTS = REPO / "manifests"
# Set by a run that keeps its own artifacts elsewhere (``crdharness gate --artifacts``):
# the failure bundle and transcripts go there too, never into the harness's checkout.
ARTIFACTS_ENV = "CRDHARNESS_ARTIFACTS"


def artifacts() -> Path:
    """Where this run writes reports, bundles and transcripts."""
    chosen = os.environ.get(ARTIFACTS_ENV)
    return Path(chosen).resolve() if chosen else ARTIFACTS
