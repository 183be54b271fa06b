"""The screen's answer for a drawn body (``screening``), kept for the same body under the same
schema (issue 42).

Why: the gate screens the same objects again and again. A version pair's round trips draw the
same seed's objects as the history's writes did, every pair starting at one version draws the
same ones, and the release before the candidate draws what the candidate will (a provider's
schemas differ between them only in their words). On upjet's shard 1/8, 4,685 of 10,441
screens (45 %) were of a body already screened under the same schema, each a conversation
with the local validator and perhaps a repair's search.

What the screen reads, and so the key: the CRD (its group, kind and scope) and version, the
version's schema (its descriptions aside: the validator never reads them), whether its status
is written too, the namespace, and the body. The object's name only where the schema can see
it (a CEL rule or message naming ``metadata``, or a constraint on ``metadata.name``): there it
is in the key.

Each CRD's answers are dropped once the candidate's checks of it are done (``forget``): the
gate's own memory for a provider's release stays under 1 GB.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any

from crdharness.gate import json_values
from crdharness.gate.evidence import objects
from crdharness.gate.evidence.local_validation import FieldError
from crdharness.gate.evidence.packed import Packed
from crdharness.gate.evidence.schema_memo import content_key, without_descriptions

Screened = tuple[dict | None, list[FieldError]]  # the body to send (None: none found), errors
_AS_DRAWN = object()  # kept for a body sent as it was drawn: nothing more to keep


class ScreenMemo:
    """Screens kept by CRD, then by what the screen reads."""

    def __init__(self) -> None:
        self._kept: dict[str, dict[bytes, tuple[Any, list[FieldError]]]] = {}
        # id(entry) -> (the entry, kept alive so its id is not reused; its schema's key, and
        # whether the schema can see an object's name)
        self._schemas: dict[int, tuple[dict, str, bool]] = {}
        self._lock = threading.Lock()

    def screened(
        self,
        manifest: dict,
        entry: dict,
        body: dict,
        name: str,
        namespace: str | None,
        screen: Callable[[], Screened],
    ) -> Screened:
        """``screen()``'s answer for ``body``: kept from an earlier screen of the same, or
        worked out now and kept. Each caller gets its own copy of the body."""
        crd, spec = manifest["metadata"]["name"], manifest.get("spec") or {}
        kind = (spec.get("names") or {}).get("kind")
        crd_part = [crd, spec.get("group"), kind, spec.get("scope")]
        key = self._key(crd_part, entry, body, name, namespace)
        with self._lock:
            found = self._kept.get(crd, {}).get(key)
        if found is not None:
            kept, errors = found
            if kept is None:
                return None, list(errors)
            sent = json_values.copied(body) if kept is _AS_DRAWN else kept.value()
            return sent, list(errors)
        fixed, errors = screen()
        if fixed is None:
            kept = None
        elif fixed is body or fixed == body:
            kept = _AS_DRAWN
        else:
            kept = Packed.of(fixed)
        if fixed is not None or errors:
            with self._lock:
                self._kept.setdefault(crd, {})[key] = (kept, list(errors))
        return fixed, errors

    def forget(self, crd: str) -> None:
        """Drop what is kept for ``crd`` (its checks are done)."""
        with self._lock:
            self._kept.pop(crd, None)

    def _key(
        self, crd_part: list, entry: dict, body: dict, name: str, namespace: str | None
    ) -> bytes:
        schema_key, names_seen = self._schema(entry)
        parts = [
            crd_part,
            entry.get("name"),
            schema_key,
            objects.has_status(entry),
            namespace,
            name if names_seen else None,
        ]
        return hashlib.sha256(json_values.content_text([parts, body], default=repr)).digest()

    def _schema(self, entry: dict) -> tuple[str, bool]:
        with self._lock:
            found = self._schemas.get(id(entry))
        if found is not None and found[0] is entry:
            return found[1], found[2]
        root = (entry.get("schema") or {}).get("openAPIV3Schema") or {}
        key, seen = content_key(without_descriptions(root)), names_seen(root)
        with self._lock:
            self._schemas[id(entry)] = (entry, key, seen)
        return key, seen


def names_seen(root: dict) -> bool:
    """Whether an object's name can change what ``root`` (a version's schema) accepts: a CEL
    rule or message that reads ``metadata``, or a constraint on ``metadata.name``."""
    metadata = ((root.get("properties") or {}).get("metadata") or {}).get("properties") or {}
    if "name" in metadata or "generateName" in metadata:
        return True
    return any("metadata" in text for text in _rule_texts(root))


def _rule_texts(node: Any) -> list[str]:
    """Every CEL rule and message expression under ``node``."""
    found: list[str] = []
    if isinstance(node, dict):
        for rule in node.get("x-kubernetes-validations") or []:
            if isinstance(rule, dict):
                found += [str(rule.get(k, "")) for k in ("rule", "messageExpression")]
        for key, value in node.items():
            if key != "x-kubernetes-validations":
                found += _rule_texts(value)
    elif isinstance(node, list):
        for value in node:
            found += _rule_texts(value)
    return found
