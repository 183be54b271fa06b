"""What reaches the API server: each generated object judged first by the local validator
(the API server's own validation code), repaired when it refuses (``evidence.repair``), and
not sent when no repair is found, but counted as refused with the rule that refused it.
The user's samples are sent as given: the API server's own answer is what the user needs.

And how many objects each CRD and version got: generated, accepted by the API server, and
refused, by what refused them, and how many of the version's declared leaf paths the accepted
ones hold (report.json's ``objects_made``: the schema path coverage of a CRD with one served
version, which has no round trips to report it).
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

from crdharness.errors import HarnessError
from crdharness.gate.api import Answer
from crdharness.gate.evidence import coverage, objects, repair
from crdharness.gate.evidence.local_validation import LocalValidator
from crdharness.gate.run.screen_memo import ScreenMemo

REASON = 160  # characters of a refusing rule kept as a reason
LOCALLY = "refused before sending (the API server's validation, run locally)"


@dataclass
class Made:
    """The objects generated for one CRD at one version and what became of them."""

    generated: int = 0
    accepted: int = 0
    refused: Counter[str] = field(default_factory=Counter)  # by what refused them
    declared: list[str] = field(default_factory=list)  # the version's leaf paths
    held: set[str] = field(default_factory=set)  # of those, held by an accepted object

    def as_json(self) -> dict:
        return {
            "generated": self.generated,
            "accepted": self.accepted,
            "refused": sum(self.refused.values()),
            "refused_by": dict(self.refused.most_common()),
            "paths_held": len(self.held & set(self.declared)),
            "paths_declared": len(self.declared),
        }


@dataclass
class Screening:
    """One run's screen (``validator`` None: nothing judged locally, all sent) and counts."""

    validator: LocalValidator | None = None
    made: dict[tuple[str, str], Made] = field(default_factory=dict)  # (crd, version) ->
    off: str = ""  # why nothing (or some CRDs' objects) is judged locally
    not_judged: dict[str, str] = field(default_factory=dict)  # crd -> why not, locally
    memo: ScreenMemo = field(default_factory=ScreenMemo, repr=False)  # the same body again
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _made(self, crd: str, version: str) -> Made:
        return self.made.setdefault((crd, version), Made())

    def screen(
        self,
        manifest: dict,
        entry: dict,
        body: dict,
        name: str,
        namespace: str | None,
        counted: bool = True,
    ) -> tuple[dict, Answer | None]:
        """The body to send for generated ``body`` (repaired if need be), or the refusal
        that stands for the API server's when no body near it is accepted locally.
        ``counted``: among the objects made (``objects_made``); a check's probe is not."""
        if objects.NAME in body:  # a sample (or one made from a sample): sent as given
            return body, None
        crd, version = manifest["metadata"]["name"], entry["name"]
        if counted:
            with self._lock:
                self._made(crd, version).generated += 1
        if self.validator is None:
            return body, None
        if crd in self.not_judged:
            return body, None
        validator = self.validator
        try:
            fixed, errors = self.memo.screened(
                manifest,
                entry,
                body,
                name,
                namespace,
                lambda: repair.repaired(validator, manifest, entry, body, name, namespace),
            )
        except HarnessError as exc:  # the validator failed here: the API server alone judges
            self.not_judged[crd] = str(exc)
            self.off = "; ".join(f"{c}: {why}" for c, why in sorted(self.not_judged.items()))
            return body, None
        if fixed is not None:
            if objects.METADATA in body:
                fixed = {**fixed, objects.METADATA: body[objects.METADATA]}
            return fixed, None
        first = errors[0]
        if counted:
            with self._lock:
                self._made(crd, version).refused[first.who[:REASON]] += 1
        message = f"{LOCALLY}: {'; '.join(f'{e.field}: {e.message}' for e in errors[:3])}"
        return body, Answer(422, {"message": message, "reason": "Invalid"}, [], message)

    def sent(self, manifest: dict, version: str, body: dict, answer: Answer | None) -> None:
        """What the API server answered a generated object (None: it was accepted)."""
        if objects.NAME in body:
            return
        made = self._made(manifest["metadata"]["name"], version)
        held: set[str] = set()
        versions = (manifest.get("spec") or {}).get("versions") or []
        entry = next((e for e in versions if e.get("name") == version), None)
        if answer is None and entry is not None:
            schema = objects.body_schema(entry)
            if not made.declared:
                made.declared = coverage.declared(schema)
            held = coverage.held(schema, objects.intent(body))
        with self._lock:
            made.held |= held
            if answer is None:
                made.accepted += 1
            else:
                made.refused[f"API server: {answer.message[:REASON]}"] += 1

    def as_json(self) -> dict[str, dict[str, dict]]:
        found: dict[str, dict[str, dict]] = {}
        for (crd, version), made in sorted(self.made.items()):
            found.setdefault(crd, {})[version] = made.as_json()
        return found

    def few_accepted(self) -> list[str]:
        """One line per CRD and version where fewer than half the objects were accepted."""
        return [
            f"{crd} at {version}: {made.accepted} of {made.generated} generated objects "
            f"accepted; refused most by {made.refused.most_common(1)[0][0]}"
            for (crd, version), made in sorted(self.made.items())
            if made.generated and made.accepted * 2 < made.generated and made.refused
        ]
