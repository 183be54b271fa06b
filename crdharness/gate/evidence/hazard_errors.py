"""A convertibility failure the same-write check cannot decide, known by the release before's
own refusals of its own objects (issue 43).

``same_write`` decides a candidate's refused write by the same object under the release
before, where that release's round trips wrote it. Where they did not (the candidate's own
search found it; a project's controller, running in the webhook's process, rewrote the
objects between steps), the paths decided alone: release N-1's round-trip failures at the same
paths, or a finding. That blocked a fixed kueue release for a defect it did not make: its
v1beta2 CEL rule reads ``slices``, which a v1beta1 ``topologyAssignment`` converts without, and
release N-1's round trips happened not to write such an object, while its upgrade's writes of
its own objects were refused at v1beta2 for the same field, by the same rule, in the same
words (its *hazards*, ``upgrade_rewrites``).

So each hazard of a release, written by strategy None or by that release's own webhook (what
another release's webhook did is not its doing), is kept as its field errors: the version
written, each field the server named (as its schema spells it) with the server's words for
it. A failure the same-write check could not decide is that release's debt only where
**every** field error it names is among the hazards at the same version of the same CRD, word
for word but for the value refused (the same rule refusing another value is the same defect;
never by path alone: a new rule on an old field says other words, and stays a finding), and
only by a write no more lenient than its own: an update of an existing object is ratcheted
(unchanged values are not judged again), so a refused re-create is no evidence about an
update."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

from crdharness.gate import diff
from crdharness.gate.evidence import refusal
from crdharness.gate.results import RefusedWrite

# kube-apiserver's field errors (apimachinery's field.Error): ``path: Type: detail``, several
# joined by ", " inside brackets. ``<nil>`` is the server's note that more rules were not run.
_FIELD_ERROR = re.compile(
    r"(?:^|, )(<nil>|[A-Za-z_][A-Za-z0-9_.\[\]/-]*): (?=(?:Invalid value|Unsupported value|"
    r"Required value|Duplicate value|Forbidden|Too long|Too many|Not found|Internal error)\b)"
)
# The value refused, after the error's type: a rule's words are matched, not one object's
# value (kube-apiserver names a string's value, an object's type: ``"matte"``, ``"object"``).
_VALUE = re.compile(r'^((?:Invalid|Unsupported|Duplicate) value): (?:"(?:[^"\\]|\\.)*"|[^:"]*): ')


def field_errors(message: str) -> frozenset[tuple[str, str]]:
    """The field errors of a refusal: (the field as its schema spells it, the server's words
    for it, without the value refused); none where the message names no field (a webhook's
    refusal, a storage error)."""
    text = refusal.without_object(message)
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    found = list(_FIELD_ERROR.finditer(text))
    errors = set()
    for at, match in enumerate(found):
        end = found[at + 1].start() if at + 1 < len(found) else len(text)
        if match.group(1) != "<nil>":
            words = _VALUE.sub(r"\1: …: ", text[match.end() : end].strip())
            errors.add((diff.schema_path(match.group(1)), words))
    return frozenset(errors)


@dataclass
class Hazards:
    """Each release's hazards as field errors: (release index, CRD, version) -> the errors
    of the writes it refused there, with whether the refused write was ratcheted. Added to
    from the upgrade's writers' threads."""

    errors: dict[tuple[int, str, str], set[tuple[bool, str, str]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, release: int, crd: str, version: str, refused: RefusedWrite) -> None:
        found = {(refused.ratcheted, p, cause) for p, cause in field_errors(refused.message)}
        with self._lock:
            self.errors.setdefault((release, crd, version), set()).update(found)

    def covering(self, release: int, crd: str, version: str, refused: RefusedWrite) -> frozenset:
        """The fields of ``refused`` (a candidate's write at ``version``) where release
        ``release`` (0-based) refused its own objects there for each of them in the same
        words, by a write no more lenient; empty unless every field error is among them."""
        wanted = field_errors(refused.message)
        known = self.errors.get((release, crd, version), set())
        # A ratcheted write's refusal holds for a re-create too, never the other way round.
        matched = {
            (p, cause)
            for ratcheted, p, cause in known
            if (p, cause) in wanted and (ratcheted or not refused.ratcheted)
        }
        if not wanted or matched != wanted:
            return frozenset()
        return frozenset(p for p, _ in wanted)


def said(release: int, version: str, paths: frozenset[str]) -> str:
    """The line a failure owed to release ``release``'s (1-based) hazards carries."""
    return (
        f"release {release}'s own objects were refused at {version} for "
        f"{', '.join(sorted(paths))} in the same words (its hazards, see the report): the "
        f"same defect, though its round trips did not write this same object"
    )
