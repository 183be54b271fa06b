"""A user's manifest, read as kubectl reads it.

Why this exists: kubectl reads ``-f`` files with sigs.k8s.io/yaml (go-yaml v2, then JSON), and
PyYAML's ``SafeLoader`` reads YAML 1.1 another way. A controller-gen CRD with the enum value
``- =`` made PyYAML fail (``=`` is its ``!!value`` tag), so the gate refused CRDs that every
cluster accepts; and ``y``/``n`` (booleans to kubectl), ``1e3``/``08``/``0o17`` (numbers to
kubectl), ``2001-12-14`` (a string to kubectl) read as something else. Here PyYAML parses, and
a loader whose resolver and constructors are go-yaml v2's gives each scalar kubectl's value:

- plain scalars resolve as go-yaml v2's ``resolve()`` does (booleans ``y Y yes on ...``,
  ``n N no off ...``; ints by Go's ``ParseInt(s, 0, 64)`` after dropping ``_``, so ``0x1F``,
  ``017``, ``0o17``, ``0b11``; floats by its ``yamlStyleFloat``, so ``1e3`` and ``08``;
  timestamps and anything else stay strings);
- then what JSON does to them: an integral float is an integer (kubectl decodes numbers to
  int64 when they fit), ``.inf``/``.nan`` values are refused (``json: unsupported value``),
  map keys become strings (``1`` -> "1", ``true`` -> "true", ``1.5`` -> "1.5", Go's float32
  formatting), a null key is refused;
- ``<<`` merges as go-yaml v2 merges: in the order written, a later key wins, even over an
  explicit key written before the ``<<``; duplicate keys: the last wins (kubectl decodes
  non-strictly);
- unknown tags are ignored (``!foo x`` is "x"), ``!!binary`` is its decoded text;
- a file whose first non-blank character is ``{`` is a JSON stream, as kubectl sniffs it;
- a document with ``items`` is a list whose items are the objects (kubectl's builder), an
  item without apiVersion and kind taking the list's (``FooList`` -> ``Foo``);
  empty and null documents are skipped.

``tests/test_manifests_yaml_kubectl.py`` holds this to kubectl's own reading of every manifest
in ``examples/``, ``tests/data/`` and ``manifests/``.
"""

from __future__ import annotations

import base64
import json
import math
import re
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from crdharness.errors import HarnessError

_TAG = "tag:yaml.org,2002:"
NULL, BOOL, INT, FLOAT, STR = (_TAG + t for t in ("null", "bool", "int", "float", "str"))
MERGE, TIMESTAMP, BINARY = (_TAG + t for t in ("merge", "timestamp", "binary"))
INT64 = range(-(2**63), 2**63)
UINT64 = range(2**64)
# A billion laughs must not expand here either (go-yaml v2 refuses excessive aliasing).
MAX_NODES = 4_000_000

# go-yaml v2's resolve table: only scalars starting with these can be anything but a string.
_HINTED = frozenset("+-0123456789yYnNtTfFoO~.")
_WORDS: dict[str, tuple[str, Any]] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE"), (BOOL, True)),
    **dict.fromkeys(("on", "On", "ON"), (BOOL, True)),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE"), (BOOL, False)),
    **dict.fromkeys(("off", "Off", "OFF"), (BOOL, False)),
    **{w: (NULL, None) for w in ("", "~", "null", "Null", "NULL")},
    **{w: (FLOAT, math.nan) for w in (".nan", ".NaN", ".NAN")},
    **{w: (FLOAT, math.inf) for w in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF")},
    **{w: (FLOAT, -math.inf) for w in ("-.inf", "-.Inf", "-.INF")},
    "<<": (MERGE, "<<"),
}
# What Go's strconv.ParseInt(s, 0, 64) accepts: a sign, then a base prefix or a leading 0.
_GO_INT = re.compile(r"([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
# go-yaml v2's yamlStyleFloat.
_GO_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
# strconv.ParseFloat from a ".": digits, "_" only between two of them.
_DOT_FLOAT = re.compile(r"\.[0-9]+(_[0-9]+)*([eE][-+]?[0-9]+(_[0-9]+)*)?")


def _go_int(plain: str) -> int | None:
    match = _GO_INT.fullmatch(plain)
    if match is None:
        return None
    sign, digits = match.groups()
    prefix = digits[:2].lower()
    base = {"0x": 16, "0o": 8, "0b": 2}.get(prefix)
    value = int(digits[2:], base) if base else int(digits, 8 if digits[0] == "0" else 10)
    value = -value if sign == "-" else value
    if value in INT64 or (not sign and value in UINT64):  # ParseInt, else ParseUint
        return value
    return None


def resolve_plain(text: str) -> tuple[str, Any]:
    """go-yaml v2's tag and value for a plain (unquoted, untagged) scalar."""
    if text in _WORDS:
        return _WORDS[text]
    if not text or text[0] not in _HINTED:
        return STR, text
    if text[0] == "." and _DOT_FLOAT.fullmatch(text):
        value = float(text.replace("_", ""))
        return (STR, text) if math.isinf(value) else (FLOAT, value)
    if text[0] in "+-0123456789":
        plain = text.replace("_", "")
        number = _go_int(plain)
        if number is not None:
            return INT, number
        if _GO_FLOAT.fullmatch(plain) and not math.isinf(float(plain)):
            return FLOAT, float(plain)  # Go's ParseFloat refuses what overflows: a string
    return STR, text


def _go_float_key(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 32), as sigs.k8s.io/yaml spells a float key."""
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.copysign(math.inf, value)
    if math.isnan(single):
        return ".nan"
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    for digits in range(1, 10):  # the shortest that reads back as the same float32
        text = f"{single:.{digits - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    mantissa, exponent = text.split("e")
    if -4 <= int(exponent) < 6:
        return format(Decimal(text), "f")
    return f"{mantissa}e{exponent}"


class KubeLoader(yaml.SafeLoader):
    """PyYAML's parser with go-yaml v2's resolution and sigs.k8s.io/yaml's JSON conversion."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.nodes_built = 0

    def resolve(self, kind: type[Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode and implicit[0]:
            return resolve_plain(value)[0]
        return super().resolve(kind, value, implicit)

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        """Each alias a copy of its own (go-yaml v2 decodes an alias anew each time), and
        collections built at once, so a node that holds itself is refused as go-yaml does."""
        self.nodes_built += 1
        if self.nodes_built > MAX_NODES:
            raise ConstructorError(
                None, None, "document contains excessive aliasing", node.start_mark
            )
        data = super().construct_object(node, deep=True)
        if not isinstance(node, ScalarNode):
            del self.constructed_objects[node]
        return data

    def construct_go_scalar(self, node: ScalarNode) -> Any:
        """A plain scalar's value, or one tagged ``!!int``, ``!!bool``... (go-yaml v2
        resolves the text and refuses a tag it does not match, but ``!!float 1`` is 1.0)."""
        if not isinstance(node, ScalarNode):
            raise ConstructorError(None, None, f"{node.tag} on a collection", node.start_mark)
        tag, value = resolve_plain(node.value)
        if tag == node.tag:
            return value
        if tag == INT and node.tag == FLOAT:
            return float(value)
        short = lambda t: "!!" + t.removeprefix(_TAG)  # noqa: E731
        raise ConstructorError(
            None,
            None,
            f"cannot decode {short(tag)} `{node.value}` as a {short(node.tag)}",
            node.start_mark,
        )

    def construct_text(self, node: Node) -> Any:
        """``!!str``, ``!!timestamp`` (a string to kubectl) and unknown tags on a scalar."""
        if isinstance(node, ScalarNode):
            return node.value
        if isinstance(node, SequenceNode):
            return self.construct_go_sequence(node)
        return self.construct_go_mapping(node)

    def construct_binary(self, node: ScalarNode) -> str:
        try:
            return base64.b64decode(node.value).decode("utf-8", "replace")
        except ValueError as exc:
            raise ConstructorError(None, None, f"!!binary: {exc}", node.start_mark) from None

    def construct_go_sequence(self, node: Node) -> list:
        if not isinstance(node, SequenceNode):
            raise ConstructorError(None, None, "expected a sequence", node.start_mark)
        return [self._json_value(self.construct_object(item), item) for item in node.value]

    def construct_go_mapping(self, node: Node) -> dict:
        if not isinstance(node, MappingNode):
            raise ConstructorError(None, None, "expected a mapping", node.start_mark)
        mapping: dict[str, Any] = {}
        for key_node, value_node in self._pairs(node):
            key = self._json_key(self.construct_object(key_node), key_node)
            mapping[key] = self._json_value(self.construct_object(value_node), value_node)
        return mapping

    def _pairs(self, node: MappingNode) -> list[tuple[Node, Node]]:
        """The key-value pairs in go-yaml v2's order of setting them: ``<<`` in place (a list
        of maps from its last to its first, so the first wins); the last setting wins."""
        pairs: list[tuple[Node, Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag != MERGE:
                pairs.append((key_node, value_node))
                continue
            merged = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
            for source in reversed(merged):
                if not isinstance(source, MappingNode):
                    raise ConstructorError(
                        None,
                        None,
                        "map merge requires map or sequence of maps as the value",
                        source.start_mark,
                    )
                pairs += self._pairs(source)
        return pairs

    @staticmethod
    def _json_key(key: Any, node: Node) -> str:
        if isinstance(key, str):
            return key
        if isinstance(key, bool):
            return "true" if key else "false"
        if isinstance(key, int):
            return str(key)
        if isinstance(key, float):
            return _go_float_key(key)
        kind = {type(None): "<nil>", list: "[]interface {}", dict: "map[string]interface {}"}
        raise ConstructorError(
            None,
            None,
            f"unsupported map key of type: {kind.get(type(key), type(key).__name__)}",
            node.start_mark,
        )

    @staticmethod
    def _json_value(value: Any, node: Node) -> Any:
        """What a value is after kubectl's JSON round trip (numbers decoded as int64 when
        they are whole and fit, else float64)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return value
        if isinstance(value, int):
            return value if value in INT64 else float(value)
        if math.isnan(value) or math.isinf(value):
            shown = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
            raise ConstructorError(None, None, f"json: unsupported value: {shown}", node.start_mark)
        return _json_number(value)


def _json_number(value: float) -> int | float:
    """How a float64 comes back from Go's JSON: written in its shortest digits ('f' below
    1e21), read as int64 when those digits are a whole number that fits."""
    if not value.is_integer() or abs(value) >= 1e21:
        return value
    whole = int(Decimal(repr(value)))
    return whole if whole in INT64 else value


for _scalar in (NULL, BOOL, INT, FLOAT):
    KubeLoader.add_constructor(_scalar, KubeLoader.construct_go_scalar)
for _text in (STR, TIMESTAMP, MERGE, None):  # None: any tag go-yaml does not know
    KubeLoader.add_constructor(_text, KubeLoader.construct_text)
KubeLoader.add_constructor(BINARY, KubeLoader.construct_binary)
for _sequence in ("seq", "omap", "pairs"):
    KubeLoader.add_constructor(_TAG + _sequence, KubeLoader.construct_go_sequence)
for _mapping in ("map", "set"):
    KubeLoader.add_constructor(_TAG + _mapping, KubeLoader.construct_go_mapping)


# ``KubeLoader`` on libyaml's parser, which go-yaml v2 was ported from (the same resolution
# and constructors): ten times faster than PyYAML's own parser, so a provider's 2,000 CRD
# files take some 40 s instead of 400. None where PyYAML was built without libyaml.
KubeCLoader: type[KubeLoader] | None = None
if yaml.__with_libyaml__:
    from yaml._yaml import CParser

    class _KubeCLoader(CParser, KubeLoader):
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            self.nodes_built = 0

    KubeCLoader = _KubeCLoader


class ManifestSyntaxError(ValueError):
    """Text kubectl would not read: ``line`` (1-based, when known) and the problem."""

    def __init__(self, line: int | None, problem: str) -> None:
        super().__init__(problem)
        self.line = line
        self.problem = problem


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


def _json_documents(text: str) -> list[Any]:
    """kubectl's YAMLOrJSONDecoder on text that starts with ``{``: JSON values one after
    another (Go's encoding/json: no NaN or Infinity); when one fails and at most one was
    read, the rest (from the failed one, after the blanks up to a newline) is read as YAML."""
    decoder = json.JSONDecoder(parse_constant=_refuse_constant)
    found: list[Any] = []
    at = 0
    while (start := len(text) - len(text[at:].lstrip())) < len(text):
        try:
            value, at = decoder.raw_decode(text, start)
        except ValueError as exc:
            if len(found) > 1:
                line = exc.lineno if isinstance(exc, json.JSONDecodeError) else None
                raise ManifestSyntaxError(line, getattr(exc, "msg", str(exc))) from None
            blanks = re.match(r"[^\S\n]*\n?", text[at:])
            rest = at + (blanks.end() if blanks else 0)
            return found + _yaml_documents(text[rest:], text.count("\n", 0, rest))
        found.append(_json_numbers(value))
    return found


def _json_numbers(value: Any) -> Any:
    """Numbers as kubectl holds them after reading JSON: int64 when whole and in range."""
    if isinstance(value, dict):
        return {k: _json_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_numbers(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and value not in INT64:
        return float(value)
    return _json_number(value) if isinstance(value, float) else value


# kubectl splits YAML on lines that start with ---; anything but a comment after it is refused.
_SEPARATOR = re.compile(r"^---[ \t]*([^\s#].*)$", re.MULTILINE)


def _yaml_documents(text: str, first_line: int = 0) -> list[Any]:
    bad = _SEPARATOR.search(text)
    if bad:
        line = first_line + text.count("\n", 0, bad.start()) + 1
        raise ManifestSyntaxError(line, f"invalid Yaml document separator: {bad.group(1)}")
    if KubeCLoader is not None:
        try:
            return list(yaml.load_all(text, Loader=KubeCLoader))
        except yaml.YAMLError:
            pass  # read again below: PyYAML's own parser says what and where, as it always did
    try:
        return list(yaml.load_all(text, Loader=KubeLoader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(p for p in (exc.context, exc.problem) if p) or str(exc)
        raise ManifestSyntaxError(first_line + mark.line + 1 if mark else None, problem) from None
    except yaml.YAMLError as exc:
        raise ManifestSyntaxError(None, str(exc).splitlines()[0]) from None


def load_all(text: str) -> list[Any]:
    """Every document of a manifest file as kubectl reads it (JSON first when it starts
    with ``{``); raises ManifestSyntaxError."""
    if text.lstrip().startswith("{"):
        return _json_documents(text)
    return _yaml_documents(text)


def objects(document: Any) -> list[Any]:
    """The objects kubectl takes from one document: none from an empty one, a list's items
    (any mapping with ``items``, as kubectl's builder has it), else the document itself."""
    if document is None:
        return []
    if not isinstance(document, dict) or "items" not in document:
        return [document]
    kind = str(document.get("kind") or "").removesuffix("List")
    found = []
    for item in document.get("items") or []:
        if isinstance(item, dict) and not item.get("kind") and not item.get("apiVersion"):
            item = {**item, "apiVersion": document.get("apiVersion"), "kind": kind}
        found.append(item)
    return found


def read(path: Path) -> list[Any]:
    """The objects of a manifest file as kubectl reads them; a file kubectl cannot read
    raises HarnessError ``FILE:LINE: not valid YAML: ...`` (one line)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        documents = load_all(text)
    except ManifestSyntaxError as exc:
        where = f"{path}:{exc.line}" if exc.line else str(path)
        raise HarnessError(f"{where}: not valid YAML: {exc.problem}") from None
    return [obj for document in documents for obj in objects(document)]
