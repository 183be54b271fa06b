"""What kube-apiserver does with the metadata of an object a conversion webhook returns, as
``webhookConverter.Convert`` in
k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/webhook_converter.go (v0.37) does it:

- ``validateConvertedObject`` refuses a converted object whose kind, ``metadata.name``,
  ``metadata.namespace`` or ``metadata.uid`` differs from the object sent (read through
  unstructured's getters: absent, or not a string, reads as "");
- ``restoreObjectMeta`` refuses one without ``metadata`` (or not an object), or whose
  ``labels``/``annotations`` are not objects of strings, or, where they changed, are not
  valid (``metav1validation.ValidateLabels``, ``apivalidation.ValidateAnnotations`` in
  k8s.io/apimachinery); it takes labels and annotations from the answer (absent or null:
  none) and copies every other metadata field back from the object sent.

So a webhook that returns ``creationTimestamp: null`` (Go webhooks built on
``metav1.ObjectMeta`` before apimachinery tagged it ``omitzero`` do, for an object sent
without one) or another changed field the server restores has not
misbehaved: no client ever sees it. What the server refuses fails the request.
"""

from __future__ import annotations

import re

from crdharness.gate import diff

_KEPT = ("name", "namespace", "uid")  # validateConvertedObject
_TAKEN = ("labels", "annotations")  # restoreObjectMeta takes these from the answer

# k8s.io/apimachinery/pkg/api/validate/content: IsLabelKey, IsLabelValue, IsDNS1123Subdomain.
_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
ANNOTATIONS_LIMIT = 256 * (1 << 10)  # TotalAnnotationSizeLimitB, bytes of keys and values


def refusals(original: dict, converted: dict) -> list[str]:
    """Why kube-apiserver refuses ``converted`` as the conversion of ``original`` (its own
    wording where it has one); empty when it accepts it."""
    found = []
    for what, path in (("kind", ("kind",)), *((f, ("metadata", f)) for f in _KEPT)):
        sent, got = _string(original, *path), _string(converted, *path)
        if sent != got:
            found.append(f"must have the same {what}: {sent!r} != {got!r}")
    metadata = converted.get("metadata")
    if not isinstance(metadata, dict):
        found.append("missing metadata in converted object")
        return found
    before = original.get("metadata") or {}
    for field in ("labels", "annotations"):
        found += _map_refusals(field, before.get(field), metadata.get(field))
    return found


def restored(original: dict, converted: dict) -> list[str]:
    """The metadata fields (but labels and annotations) the answer changed: the server puts
    back the original's, so no client sees the change. ``metadata.x: before -> after``."""
    before = {k: v for k, v in (original.get("metadata") or {}).items() if k not in _TAKEN}
    after = converted.get("metadata")
    after = {k: v for k, v in after.items() if k not in _TAKEN} if isinstance(after, dict) else {}
    return [d.describe() for d in diff.differences(before, after, "metadata")]


def _string(obj: dict, *path: str) -> str:
    """unstructured's getNestedString: "" where the path is absent or not a string."""
    value: object = obj
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, str) else ""


def _map_refusals(field: str, sent: object, got: object) -> list[str]:
    if got is None:
        return []  # absent or null: the object keeps none (a loss the round trips judge)
    if not isinstance(got, dict):
        return [f"invalid metadata.{field} of type {type(got).__name__} in converted object"]
    wrong = [k for k, v in got.items() if not isinstance(v, str)]
    if wrong:
        return [f"metadata.{field}[{wrong[0]}] must be a string in converted object"]
    if got == sent:
        return []  # only a changed map is validated
    if field == "labels":
        found = [f"metadata.labels: invalid key {k!r}" for k in got if not _label_key(k)]
        found += [
            f"metadata.labels: invalid value {v!r}"
            for v in got.values()
            if len(v.encode()) > 63 or not _VALUE.fullmatch(v)
        ]
        return found
    found = [f"metadata.annotations: invalid key {k!r}" for k in got if not _label_key(k.lower())]
    size = sum(len(k.encode()) + len(v.encode()) for k, v in got.items())
    if size > ANNOTATIONS_LIMIT:
        found.append(f"metadata.annotations: {size} bytes, over {ANNOTATIONS_LIMIT}")
    return found


def _label_key(key: str) -> bool:
    """IsLabelKey: an optional DNS-1123 subdomain prefix and '/', then a name of at most 63
    characters (bytes, as Go counts)."""
    parts = key.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix or len(prefix.encode()) > 253 or not _SUBDOMAIN.fullmatch(prefix):
            return False
    name = parts[-1]
    return 0 < len(name.encode()) <= 63 and _NAME.fullmatch(name) is not None
