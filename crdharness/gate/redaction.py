"""What the gate shows of a source cluster's objects (``--from-cluster``): their names, the
paths and the server's messages; never their values unless asked (``show_values``), and never
a Secret-like field's value, asked or not.

A field is Secret-like when its name says so (password, token, secret, key...) or its schema
says ``format: password``. Its values are taken out of every line the gate writes (a server
message can quote one: ``Invalid value: "..."``), and out of every object shown.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from crdharness.gate.results import CheckResult
from crdharness.gate.shown import as_shown

# A field holds a secret when the last word of its name says so (``password``,
# ``apiToken``, ``clientSecret``, ``privateKey``); not when it names where one is kept
# (``secretName``, ``tokenSecretRef``, ``azureKeyVault``, a Secret's ``key``).
SECRET_WORDS = {"password", "passwd", "passphrase", "token", "secret", "credential", "credentials"}
SECRET_KEYS = {"api", "private", "access", "secret", "signing", "encryption", "client"}
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
HIDDEN = "<redacted>"
PLACEHOLDER = re.compile(r"<(string|int|float|bool|null|redacted)>")
SHORTEST_SCRUBBED = 3
# A value as ``diff.describe`` writes it: JSON, cut at 60 characters with "...".
_VALUE = r'"(?:[^"\\]|\\.)*"(?:\.\.\.)?|[-+\w.]+|[\[{].{0,60}?[\]}](?:\.\.\.)?'
VALUE = "<value>"
DESCRIBED = [
    (re.compile(rf": lost \(was (?:{_VALUE})\)"), f": lost (was {VALUE})"),
    (re.compile(rf": appeared \((?:{_VALUE})\)"), f": appeared ({VALUE})"),
    (re.compile(rf": (?:{_VALUE}) -> (?:{_VALUE})"), f": {VALUE} -> {VALUE}"),
]  # shorter values are only taken out where quoted, not inside words


def secret_like(key: str, schema: dict | None = None) -> bool:
    if (schema or {}).get("format") == "password":
        return True
    words = [w.lower() for w in _WORDS.findall(key)]
    if not words:
        return False
    last = words[-1]
    return last in SECRET_WORDS or (last == "key" and len(words) > 1 and words[-2] in SECRET_KEYS)


def _child_schema(schema: dict | None, key) -> dict | None:
    if not schema:
        return None
    if isinstance(key, int):
        return schema.get("items")
    found = (schema.get("properties") or {}).get(key)
    if found is None and isinstance(schema.get("additionalProperties"), dict):
        found = schema["additionalProperties"]
    return found


def secret_values(obj, schema: dict | None = None, inside: bool = False) -> set[str]:
    """The values of Secret-like fields of ``obj`` (as text): a field's own name or format
    says so, or it sits in a list or map that is one."""
    found: set[str] = set()
    if isinstance(obj, dict):
        for key, value in obj.items():
            below = _child_schema(schema, key)
            found |= secret_values(value, below, inside or secret_like(str(key), below))
    elif isinstance(obj, list):
        for item in obj:
            found |= secret_values(item, _child_schema(schema, 0), inside)
    elif inside and obj is not None and not isinstance(obj, bool):
        found.add(str(obj))
    return found


def _placeholder(value) -> str:
    if value is None:
        return "<null>"
    return f"<{type(value).__name__.replace('str', 'string')}>"


@dataclass
class Redaction:
    """What one run must not show: ``secrets`` (values, from every line and object) and,
    unless ``show_values``, any value of an object."""

    show_values: bool = False
    secrets: set[str] = field(default_factory=set)

    def text(self, line: str) -> str:
        if not self.show_values:  # the gate's own rendering of a difference (diff.describe)
            for pattern, replacement in DESCRIBED:
                line = pattern.sub(replacement, line)
        for value in sorted(self.secrets, key=len, reverse=True):
            for form in {json.dumps(value), f"'{value}'"}:
                line = line.replace(form, json.dumps(HIDDEN))
            if len(value) >= SHORTEST_SCRUBBED:  # as a word of its own, not inside one
                line = re.sub(rf"(?<![\w-]){re.escape(value)}(?![\w-])", HIDDEN, line)
        return line

    def obj(self, value, key: str = "", top: bool = True):
        """An object as it may be shown: structure and names kept; values replaced by their
        type (unless ``show_values``), and always under a Secret-like field."""
        if isinstance(value, dict):
            return {
                k: v
                if top and k in ("apiVersion", "kind")
                else HIDDEN
                if secret_like(str(k))
                else self.obj(v, k, False)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.obj(item, key, False) for item in value]
        if secret_like(key):
            return HIDDEN
        if isinstance(value, str) and PLACEHOLDER.fullmatch(value):
            return value  # redacted before: results are redacted again as they grow
        if self.show_values:
            return self.text(value) if isinstance(value, str) else value
        return _placeholder(value)

    def result(self, result: CheckResult) -> None:
        """``result`` made safe to show, in place (again and again: it is idempotent)."""
        result.evidence = self.text(result.evidence)
        result.details = [self.text(line) for line in result.details]
        result.failed = [self.text(line) for line in result.failed]
        result.allowed = [self.text(line) for line in result.allowed]
        result.normalised = [self.text(line) for line in result.normalised]
        result.pruned = [self.text(line) for line in result.pruned]
        result.objects = [(self.text(title), self._shown(obj)) for title, obj in result.objects]

    def _shown(self, obj: dict) -> dict:
        # The gate's own traces first: redacted, its apply entries' manager is no longer known.
        obj = as_shown(obj)
        metadata = obj.get("metadata") if isinstance(obj, dict) else None
        shown = self.obj(obj)
        if isinstance(metadata, dict) and isinstance(shown, dict):
            # Names say which object it is: kept, as in every finding.
            kept = {k: metadata[k] for k in ("name", "namespace") if k in metadata}
            shown["metadata"] = {**(shown.get("metadata") or {}), **kept}
        return shown
