"""The names a CRD's own schema lets its objects have, and names the gate makes to fit them.

The gate names every object it writes itself (``r1-v1-3``, ``rt-v1-v2-7``). A CRD may
constrain ``metadata.name``: a CEL rule at the schema root (``self.metadata.name ==
'cluster'``, ``.startsWith('team-')``, ``size(self.metadata.name) <= 20``, ``in ['a', 'b']``,
``.matches('^[a-z]+$')``), or ``pattern``, ``maxLength`` or ``enum`` on
``properties.metadata.properties.name``. Unmet, every object is refused and nothing is
proven. ``rule`` reads what the schema of one version says; ``NameRule.name`` turns the gate's
own unique name into one that meets it. Where only a fixed set of names is valid (a
**singleton**: one object per cluster or namespace), ``single`` is that name: its objects
exist one at a time (``Slots``), each deleted before the next is created.

What the rules cannot be read from (an ``||``, a conditional, a function of other fields) is
left to the API server: the name the gate makes may be refused, and its message says why.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from crdharness.gate import go_regex

DNS_SUBDOMAIN = 253  # what the API server allows any object's name
_NAME = r"self\.metadata\.name"
_TEXT = r"""'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)\""""  # a CEL string literal: 2 groups
EQUALS = (
    re.compile(rf"^{_NAME}\s*==\s*(?:{_TEXT})$"),
    re.compile(rf"^(?:{_TEXT})\s*==\s*{_NAME}$"),
)
IN = re.compile(rf"^{_NAME}\s+in\s+\[(.*)\]$")
STARTS = re.compile(rf"^{_NAME}\.startsWith\(\s*(?:{_TEXT})\s*\)$")
ENDS = re.compile(rf"^{_NAME}\.endsWith\(\s*(?:{_TEXT})\s*\)$")
MATCHES = re.compile(rf"^{_NAME}\.matches\(\s*(?:{_TEXT})\s*\)$")
SIZE = re.compile(rf"^(?:size\({_NAME}\)|{_NAME}\.size\(\))\s*(<=|<)\s*(\d+)$")
LITERALS = re.compile(_TEXT)


@dataclass(frozen=True)
class NameRule:
    """What one version's schema lets ``metadata.name`` be (nothing: any name)."""

    exact: tuple[str, ...] = ()  # the only names valid, if the schema lists them
    prefix: str = ""
    suffix: str = ""
    max_length: int = DNS_SUBDOMAIN
    patterns: tuple[str, ...] = ()  # each must match (searched for, as the server does)

    @property
    def single(self) -> str | None:
        """The one name the gate gives every object, where the schema fixes it (of several
        listed names, the first: one at a time is always right)."""
        return self.exact[0] if self.exact else None

    def name(self, unique: str) -> str:
        """``unique`` (a name no other object of the run has) made to meet the rule; the
        fixed name of a singleton. A name no candidate meets is returned as built: the API
        server's refusal then says why."""
        if self.single is not None:
            return self.single
        room = max(self.max_length - len(self.prefix) - len(self.suffix), 1)
        # Shortened from the front: the run's counter, at the end, keeps it unique.
        core = unique[-room:].lstrip("-.") or unique[-1:]
        candidates = [
            core,
            core.replace("-", ""),  # a pattern without dashes
            core.translate(_LETTERS),  # letters only
        ]
        built = [f"{self.prefix}{c}{self.suffix}" for c in candidates]
        return next((n for n in built if self.allows(n)), built[0])

    def allows(self, name: str) -> bool:
        """Whether ``name`` meets every constraint the gate read (not the server's word)."""
        if self.exact and name not in self.exact:
            return False
        if not (name.startswith(self.prefix) and name.endswith(self.suffix)):
            return False
        if len(name) > self.max_length:
            return False
        return all(_searched(p, name) for p in self.patterns)


_LETTERS = str.maketrans("0123456789-.", "abcdefghijxy")


def _searched(pattern: str, name: str) -> bool:
    try:
        return go_regex.compile(pattern).search(name) is not None
    except re.error:  # RE2 syntax Python cannot spell: the server judges
        return True


def rule(entry: dict | None) -> NameRule:
    """What the schema of a ``spec.versions`` entry lets its objects' names be."""
    root = ((entry or {}).get("schema") or {}).get("openAPIV3Schema") or {}
    found: dict = {"exact": None, "prefix": "", "suffix": "", "max": DNS_SUBDOMAIN, "patterns": []}
    for validation in root.get("x-kubernetes-validations") or []:
        text = str((validation or {}).get("rule", "")) if isinstance(validation, dict) else ""
        for term in _conjuncts(text):
            _read_term(term, found)
    name = (((root.get("properties") or {}).get("metadata") or {}).get("properties") or {}).get(
        "name"
    ) or {}
    if isinstance(name.get("enum"), list):
        _narrow(found, [str(v) for v in name["enum"]])
    if isinstance(name.get("maxLength"), int):
        found["max"] = min(found["max"], name["maxLength"])
    if isinstance(name.get("pattern"), str):
        found["patterns"].append(name["pattern"])
    return NameRule(
        exact=tuple(found["exact"] or ()),
        prefix=found["prefix"],
        suffix=found["suffix"],
        max_length=found["max"],
        patterns=tuple(found["patterns"]),
    )


def _conjuncts(text: str) -> list[str]:
    """The terms a rule requires together (``a && b``); none where it says more than that
    (``||``, ``?``: which term holds depends on the object)."""
    text = " ".join(text.split())
    if "||" in text or "?" in text:
        return []
    return [_unwrapped(t.strip()) for t in text.split("&&")]


def _unwrapped(term: str) -> str:
    while term.startswith("(") and term.endswith(")"):
        term = term[1:-1].strip()
    return term


def _read_term(term: str, found: dict) -> None:
    """One required term about the name, recorded in ``found``; any other is ignored."""
    for equals in EQUALS:
        if match := equals.match(term):
            _narrow(found, [_literal(match)])
            return
    if match := IN.match(term):
        _narrow(found, [a or b for a, b in LITERALS.findall(match.group(1))])
    elif match := STARTS.match(term):
        found["prefix"] = max(found["prefix"], _literal(match), key=len)
    elif match := ENDS.match(term):
        found["suffix"] = max(found["suffix"], _literal(match), key=len)
    elif match := MATCHES.match(term):
        found["patterns"].append(_literal(match))
    elif match := SIZE.match(term):
        limit = int(match.group(2)) - (match.group(1) == "<")
        found["max"] = min(found["max"], limit)


def _literal(match: re.Match) -> str:
    text = match.group(1) if match.group(1) is not None else match.group(2)
    return text.encode().decode("unicode_escape") if "\\" in text else text


def _narrow(found: dict, names: list[str]) -> None:
    """Only ``names`` are valid (and, if something listed names before, only those of
    them both list; in the order first listed)."""
    if found["exact"] is None:
        found["exact"] = list(dict.fromkeys(names))
    else:
        found["exact"] = [n for n in found["exact"] if n in names]


class Slots:
    """Who holds a fixed name: an object with it is created, judged and deleted before the
    next is created (threads that want it wait their turn)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._held: dict[tuple[str, str, str], threading.Lock] = {}

    @contextmanager
    def held(self, crd: str, namespace: str | None, name: str, fixed: bool) -> Iterator[None]:
        """Hold ``name`` of ``crd`` in ``namespace`` (only a ``fixed`` name needs it)."""
        if not fixed:
            yield
            return
        with self._guard:
            lock = self._held.setdefault((crd, namespace or "", name), threading.Lock())
        with lock:
            yield
