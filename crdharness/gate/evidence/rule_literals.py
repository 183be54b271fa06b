"""What a CEL rule above a path asks of the path's siblings, so that an object holding the
path can exist at all.

A schema often admits a field only together with another's value: ``!has(self.sts) ||
self.provider == 'aws'`` on ``spec``, ``self.provider == 'ldap'`` on ``spec.sts`` before
``certSecretRef`` is allowed. An object built to hold ``spec.sts.certSecretRef`` with the other
fields as the schema requires them least is refused by the server every time. The fields a
rule on the path's ancestors selects (``self.provider``), set to the rule's own string
literals, to each enum value, or to true and false, give the objects that meet it; the API
server still says which do. No CEL is evaluated here.
"""

from __future__ import annotations

import copy
import itertools
import re

LITERAL = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"")  # a CEL string literal
SELECTED = re.compile(r"\bself((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")  # a field below the rule's node
HAS = re.compile(r"\bhas\(\s*self(?:\.[A-Za-z_][A-Za-z0-9_]*)+\s*\)")
VALUES_PER_FIELD = 5
MOST = 8  # assignments per path at most

Assignment = dict[str, object]  # a path as coverage writes it (``spec.a[].b``) -> its value

# Kubernetes' escaping of property names in CEL (apiextensions' ``cel.Escape``): a reserved
# word is ``__word__``; ``__``, ``.``, ``-`` and ``/`` inside a name are spelt out.
CEL_RESERVED = frozenset(
    {
        *("true", "false", "null", "in", "as", "break", "const", "continue", "else", "for"),
        *("function", "if", "import", "let", "loop", "package", "namespace", "return"),
        *("var", "void", "while"),
    }
)
ESCAPES = {"__underscores__": "__", "__dot__": ".", "__dash__": "-", "__slash__": "/"}
ESCAPED = re.compile("|".join(re.escape(e) for e in ESCAPES))
STRING_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.DOTALL)
CONTROL = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def field_name(selected: str) -> str:
    """The property a CEL rule's ``self.<selected>`` names: ``__namespace__`` is
    ``namespace``, ``x__dash__y`` is ``x-y``."""
    if selected.startswith("__") and selected.endswith("__") and selected[2:-2] in CEL_RESERVED:
        return selected[2:-2]
    return ESCAPED.sub(lambda m: ESCAPES[m.group(0)], selected)


def string_value(literal: str) -> str:
    """A CEL string literal's text (between its quotes) as the string it denotes: ``\\\\.``
    is a backslash and a dot, the regular expression ``\\.`` of a ``matches``."""

    def one(match: re.Match) -> str:
        code = match.group(1)
        if code[0] in "xuU" and len(code) > 1:
            return chr(int(code[1:], 16))
        return CONTROL.get(code, code)

    return STRING_ESCAPE.sub(one, literal)


def string_literals(rule: str) -> list[str]:
    """The strings a rule's literals denote, each once, in order."""
    return list(dict.fromkeys(string_value(a or b) for a, b in LITERAL.findall(rule)))


def _parts(path: str) -> list[str]:
    return re.findall(r"[^.\[\]]+|\[\]", path)


def _join(parts: list[str]) -> str:
    text = ""
    for part in parts:
        text += part if part == "[]" else (f".{part}" if text else part)
    return text


def _step(node: dict, part: str) -> dict | None:
    if part == "[]":
        child = node.get("items")
    elif part in (node.get("properties") or {}):
        child = node["properties"][part]
    else:
        child = node.get("additionalProperties")
    return child if isinstance(child, dict) else None


def _values(field: dict, literals: list[str]) -> list:
    if "enum" in field:
        return list(field["enum"][:VALUES_PER_FIELD])
    if field.get("type") == "boolean":
        return [True, False]
    if field.get("type") == "string" and literals:
        return literals[:VALUES_PER_FIELD]
    return []


def _field(node: dict, chain: list[str]) -> dict | None:
    """The scalar field ``chain`` selects below ``node`` (``sts.provider``), if declared."""
    for name in chain:
        child = (node.get("properties") or {}).get(name)
        if not isinstance(child, dict):
            return None
        node = child
    return None if node.get("type") in ("object", "array") else node


def assignments(schema: dict, path: str) -> list[Assignment]:
    """Values for the fields that the rules on ``path``'s ancestors (the root included)
    select (``self.provider``, ``self.sts.provider``): one assignment per combination, at
    most ``MOST``; none when no rule selects a scalar it could be met with. The path itself
    and its own ancestors are never set: the path's value is what is being tried."""
    parts = _parts(path)
    node: dict | None = schema
    choices: dict[str, list] = {}  # field path -> the values tried for it
    for depth in range(len(parts)):
        if node is None:
            break
        for rule in node.get("x-kubernetes-validations") or []:
            text = str(rule.get("rule", ""))
            literals = string_literals(text)
            # A field the rule only asks the presence of (``has(self.x)``) is left alone:
            # setting it would bring in the rule it guards.
            compared = HAS.sub("", text)
            for selected in dict.fromkeys(SELECTED.findall(compared)):
                chain = [field_name(n) for n in selected.strip(".").split(".")]
                if chain == parts[depth : depth + len(chain)]:
                    continue  # the path, or an object on its way
                field = _field(node, chain)
                if field is None:
                    continue
                values = choices.setdefault(_join([*parts[:depth], *chain]), [])
                values += [v for v in _values(field, literals) if v not in values]
        node = _step(node, parts[depth])
    fields = {path: values for path, values in choices.items() if values}
    if not fields:
        return []
    combined = itertools.islice(itertools.product(*fields.values()), MOST)
    return [dict(zip(fields, values, strict=True)) for values in combined]


def applied(body: dict, assignment: Assignment) -> dict:
    """``body`` with each path of ``assignment`` set (a list's first item, a map's
    ``gate-0``) where the object holding it exists: a rule about ``self.sts.provider`` says
    nothing until there is an ``sts``, and making one would bring in what it requires."""
    done = copy.deepcopy(body)
    for path, value in assignment.items():
        parts = _parts(path)
        target: object = done
        for part in parts[:-1]:
            if part == "[]":
                target = target[0] if isinstance(target, list) and target else None
            else:
                key = "gate-0" if part == "*" else part
                target = target.get(key) if isinstance(target, dict) else None
            if target is None:
                break
        if isinstance(target, dict):
            target[parts[-1]] = copy.deepcopy(value)
    return done
