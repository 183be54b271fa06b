"""Objects to write: the user's samples, and objects generated from a version's
``openAPIV3Schema`` (seeded, so a run can be repeated, and shrunk to a minimal object when
one fails a check).

Generation uses hypothesis's own strategies, built straight from the structural schema.
Written here rather than taken from hypothesis-jsonschema: that library rebuilds its
strategy for a sub-schema on every draw, which never finishes on real CRDs (a CronJob embeds
a whole PodTemplateSpec), and it no longer works with current hypothesis. Structural schemas
are a small subset of JSON Schema (a type on every node, properties, items,
additionalProperties, enum, bounds, pattern, a few extensions), so the mapping is short.
``allOf``/``oneOf``/``anyOf``/``not`` are drawn through ``combinators`` (every branch of an
allOf at once, one branch of a oneOf and not the others). What a schema says only in CEL rules
is met afterwards, by ``repair`` with the local validator; an object still refused is counted
as refused input, never as a finding.
"""

from __future__ import annotations

import base64
import copy
import re

from hypothesis import strategies as st

from crdharness.gate import go_durations, go_regex, json_values
from crdharness.gate.evidence import combinators, coverage
from crdharness.gate.evidence.characters import CHARACTERS

INT64 = 2**53  # JSON numbers beyond this lose precision in some clients; stay inside
INT32 = 2**31
# Keep generated objects small: big ones test the generator, not the conversion.
EXTRA_ITEMS = 3  # items beyond minItems
EXTRA_LENGTH = 20  # characters beyond minLength
OPTIONAL_DEPTH = 4  # random draws: below this depth (from where a draw starts) only required
# fields; the coverage objects (``coverage_objects``) reach every declared path
TOP_LEVEL = ("apiVersion", "kind", "metadata")
# A body's labels and annotations travel under this key (generated, or a sample's own), and a
# sample's name under NAME, for reports: the gate names every object itself.
METADATA = "__metadata__"
NAME = "__name__"
PRIVATE = (METADATA, NAME)
LABEL_TEXT = st.from_regex(
    r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True, alphabet=CHARACTERS
)
KEYS = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=8)


def _draw_from_schemas_only() -> None:
    """Hypothesis (6.131 and later) also draws literals it finds in the source of every local
    module imported so far. The gate's objects would then depend on which harness modules
    happen to be loaded, and one seed would give other objects after any change to the
    harness (seen: 11 objects got past an admission webhook, then 5 once a module was
    imported earlier). The gate draws from the user's schemas and samples only. Hypothesis
    has no setting for this, so its provider's hook is replaced; ``test_gate_parts`` notices
    if that stops working."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # a hypothesis without local constants: nothing to turn off
        return
    nothing_local = Constants()
    providers._get_local_constants = lambda: nothing_local


_draw_from_schemas_only()


def strategy(schema: dict, depth: int = 0) -> st.SearchStrategy:
    """Values valid (as far as the structure says) under structural ``schema``."""
    values = _values(schema or {}, depth)
    if schema.get("nullable"):
        values = st.none() | values
    return values


def _values(schema: dict, depth: int) -> st.SearchStrategy:
    if any(k in schema for k in ("allOf", "oneOf", "anyOf", "not")):
        nodes = combinators.alternatives(schema)
        return st.one_of([_plain_values(node, depth) for node in nodes])
    return _plain_values(schema, depth)


def _plain_values(schema: dict, depth: int) -> st.SearchStrategy:
    values = _typed_values(schema, depth)
    excluded = schema.get(combinators.EXCLUDED)
    if excluded:  # what a ``not: {enum: ...}`` forbids
        values = values.filter(lambda v: v not in excluded)
    return values


def _typed_values(schema: dict, depth: int) -> st.SearchStrategy:
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if schema.get("x-kubernetes-int-or-string"):
        return st.integers(-INT32, INT32 - 1) | _strings(schema)
    kind = schema.get("type")
    if kind == "object":
        return _objects(schema, depth)
    if kind == "array":
        items = _item_values(schema.get("items") or {}, depth + 1)
        low = schema.get("minItems", 0)
        high = min(schema.get("maxItems", low + EXTRA_ITEMS), low + EXTRA_ITEMS)
        unique = schema.get("x-kubernetes-list-type") == "set"
        keys = schema.get("x-kubernetes-list-map-keys")
        if keys:  # a map list: its keys identify each item, so every item has them
            item = schema.get("items") or {}
            needed = [
                k for k in keys if "default" not in ((item.get("properties") or {}).get(k) or {})
            ]
            item = {**item, "required": list(dict.fromkeys([*item.get("required", []), *needed]))}
            items = strategy(item, depth + 1)
            return st.lists(
                items,
                min_size=low,
                max_size=high,
                unique_by=lambda i: tuple(str(i.get(k)) for k in keys),
            )
        return st.lists(items, min_size=low, max_size=high, unique=unique)
    if kind == "string":
        return _strings(schema)
    if kind == "integer":
        bound = INT32 if schema.get("format") == "int32" else INT64
        low, high = _bounds(schema, -bound, bound - 1, step=1)
        return st.integers(low, high)
    if kind == "number":
        low, high = _bounds(schema, -1e15, 1e15, step=0)
        return st.floats(low, high, allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    # No type: only x-kubernetes-preserve-unknown-fields or x-kubernetes-embedded-resource.
    return st.dictionaries(
        KEYS, st.text(CHARACTERS, max_size=8) | st.integers(-100, 100), max_size=2
    )


# An embedded resource must name an apiVersion and kind, and have valid metadata.
EMBEDDED = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gate-embedded"}}


def _objects(schema: dict, depth: int) -> st.SearchStrategy:
    fields = _fields(schema, depth)
    if schema.get("x-kubernetes-embedded-resource"):
        return fields.map(lambda found: {**found, **copy.deepcopy(EMBEDDED)})
    return fields


def _fields(schema: dict, depth: int) -> st.SearchStrategy:
    properties = schema.get("properties") or {}
    if schema.get("x-kubernetes-embedded-resource"):
        properties = {k: v for k, v in properties.items() if k not in TOP_LEVEL}
    if properties:
        required = [k for k in properties if k in set(schema.get("required") or [])]
        # minProperties beyond what is required: the first optional fields are made required
        lacking = schema.get("minProperties", 0) - len(required)
        required += [k for k in properties if k not in required][: max(0, lacking)]
        must = {k: strategy(v, depth + 1) for k, v in properties.items() if k in required}
        may = (
            {k: strategy(v, depth + 1) for k, v in properties.items() if k not in required}
            if depth < OPTIONAL_DEPTH
            else {}
        )
        drawn = st.fixed_dictionaries(must, optional=may)
        most = schema.get("maxProperties")
        return drawn.filter(lambda d: len(d) <= most) if most is not None else drawn
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        low = schema.get("minProperties", 0)
        high = min(schema.get("maxProperties", low + 3), low + 3)
        return st.dictionaries(KEYS, strategy(extra, depth + 1), min_size=low, max_size=high)
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return _values({}, depth)
    return st.just({})  # no fields declared: the API server would prune any we made up


# A list of plain strings is what a webhook most often keeps joined in one string (an
# annotation holding "a,b") and splits on the way back: an item holding the separator comes
# back as two. Half of such items hold a separator (a comma most often), so every run
# exercises that loss; free text elsewhere rarely draws one (1 in 1.1 million characters).
SEPARATORS = (",", ",", ",", ";", " ", "|", "\n")
JOIN_KEYS = ("pattern", "format", "enum", "x-kubernetes-int-or-string")


def _item_values(items: dict, depth: int) -> st.SearchStrategy:
    joinable = items.get("type") == "string" and not any(k in items for k in JOIN_KEYS)
    if not joinable or any(k in items for k in ("allOf", "oneOf", "anyOf", "not")):
        return strategy(items, depth)
    low = items.get("minLength", 0)
    high = min(items.get("maxLength", low + EXTRA_LENGTH), low + EXTRA_LENGTH)
    if high < 3:  # no room for a separator between two characters
        return strategy(items, depth)
    part = st.text(CHARACTERS, min_size=1, max_size=max(1, (high - 1) // 2))
    joined = st.tuples(part, st.sampled_from(SEPARATORS), part).map("".join)
    joined = _checked(items, joined.filter(lambda t: low <= len(t) <= high))
    return strategy(items, depth) | joined


def _strings(schema: dict) -> st.SearchStrategy:
    low = schema.get("minLength", 0)
    high = min(schema.get("maxLength", low + EXTRA_LENGTH), low + EXTRA_LENGTH)
    pattern = schema.get("pattern")
    if pattern:
        # maxLength as declared: a pattern's strings may be longer than the drawn ones
        most = schema.get("maxLength", max(high, low + 200))
        try:  # the API server's RE2 syntax, as Python spells it
            python = go_regex.compile(pattern).pattern
        except re.error:  # no Python spelling: any text (the server may refuse)
            return st.text(CHARACTERS, min_size=low, max_size=high)
        return _checked(
            schema,
            st.from_regex(python, fullmatch=True, alphabet=CHARACTERS).filter(
                lambda t: low <= len(t) <= most
            ),
        )
    fmt = schema.get("format")
    if fmt == "date-time":
        return st.datetimes(timezones=st.just(__import__("datetime").timezone.utc)).map(
            lambda d: d.replace(microsecond=0).isoformat().replace("+00:00", "Z")
        )
    if fmt == "byte":  # base64 of at least one byte: the API server refuses "" as a byte
        return st.binary(min_size=1, max_size=max(1, high)).map(
            lambda b: base64.b64encode(b).decode()
        )
    if fmt == "duration":  # sub-second and odd lengths too: a webhook keeping whole seconds
        return st.integers(0, 10**14).map(go_durations.go_string)  # truncates them (issue 43)
    if fmt in coverage.FORMATS:  # a format the API server checks: a value it accepts
        return st.just(coverage.FORMATS[fmt])
    return _checked(schema, st.text(CHARACTERS, min_size=low, max_size=high))


def _checked(schema: dict, strings: st.SearchStrategy) -> st.SearchStrategy:
    """``strings`` that also match every pattern an ``allOf`` added and none a ``not``
    forbids."""
    more = [_compiled(p) for p in schema.get(combinators.PATTERNS, [])]
    never = [_compiled(p) for p in schema.get(combinators.EXCLUDED_PATTERNS, [])]
    if not more and not never:
        return strings
    return strings.filter(
        lambda t: (
            all(p is None or p.search(t) for p in more)
            and not any(p is not None and p.search(t) for p in never)
        )
    )


def _compiled(pattern: str) -> re.Pattern | None:
    try:
        return go_regex.compile(pattern)
    except re.error:
        return None


def _bounds(schema: dict, low, high, step):
    if "minimum" in schema:
        low = schema["minimum"] + (step if schema.get("exclusiveMinimum") else 0)
    if "maximum" in schema:
        high = schema["maximum"] - (step if schema.get("exclusiveMaximum") else 0)
    return low, high


def body_schema(version: dict) -> dict:
    """The generable part of an object at ``version``: every top-level field but
    apiVersion, kind and metadata (``spec``, ``status``, or the fields themselves)."""
    root = (version.get("schema") or {}).get("openAPIV3Schema") or {"type": "object"}
    properties = {k: v for k, v in (root.get("properties") or {}).items() if k not in TOP_LEVEL}
    required = [k for k in root.get("required", []) if k not in TOP_LEVEL]
    return {"type": "object", "properties": properties, "required": required}


def generated_metadata() -> st.SearchStrategy[dict]:
    """Labels and annotations as users and tools set them (``kubectl apply`` keeps its
    last-applied-configuration in one): a webhook must carry them across versions."""
    return st.fixed_dictionaries(
        {},
        optional={
            "labels": st.dictionaries(LABEL_TEXT, LABEL_TEXT, min_size=1, max_size=2),
            "annotations": st.dictionaries(
                LABEL_TEXT.map(lambda k: f"gate.example.com/{k}"),
                st.text(CHARACTERS, max_size=12),
                min_size=1,
                max_size=2,
            ),
        },
    )


def bodies(version: dict) -> st.SearchStrategy[dict]:
    """Object bodies valid (as far as the schema's structure says) at ``version``, with
    generated labels and annotations."""
    schema = body_schema(version)
    fields = _objects(schema, 0) if schema["properties"] else st.just({})
    return st.tuples(fields, generated_metadata()).map(
        lambda pair: {**pair[0], METADATA: pair[1]} if pair[1] else pair[0]
    )


def has_status(version: dict) -> bool:
    """Whether a ``spec.versions`` entry has the status subresource."""
    return (version.get("subresources") or {}).get("status") is not None


def intent(body: dict) -> dict:
    """A body's own fields, without what travels beside them (metadata, a sample's name)."""
    return {k: v for k, v in body.items() if k not in PRIVATE}


def manifest(crd: dict, version: str, name: str, namespace: str | None, body: dict) -> dict:
    spec = crd["spec"]
    obj = {
        "apiVersion": f"{spec['group']}/{version}",
        "kind": spec["names"]["kind"],
        "metadata": {"name": name, **json_values.copied(body.get(METADATA) or {})},
        **json_values.copied(intent(body)),
    }
    if namespace and spec.get("scope", "Namespaced") == "Namespaced":
        obj["metadata"]["namespace"] = namespace
    return obj


def sample_body(sample: dict) -> dict:
    """A sample's fields without apiVersion and kind, its labels and annotations under
    METADATA (its name is the gate's)."""
    given = sample.get("metadata") or {}
    body = {k: copy.deepcopy(v) for k, v in sample.items() if k not in TOP_LEVEL}
    kept = {k: dict(given[k]) for k in ("labels", "annotations") if given.get(k)}
    if kept:
        body[METADATA] = kept
    body[NAME] = given.get("name", "(unnamed)")
    return body


def first_examples(version: dict, count: int, seed: int) -> list[dict]:
    """``count`` bodies drawn from ``bodies(version)``, the same ones for the same seed."""
    return drawn_from(bodies(version), count, seed)


def drawn_from(strategy, count: int, seed: int) -> list[dict]:
    """``count`` bodies drawn from a hypothesis strategy, the same ones for the same seed."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as fixed_seed

    drawn: list[dict] = []
    if count == 0:
        return drawn

    @fixed_seed(seed)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def draw(body):
        if len(drawn) < count:
            drawn.append(body)

    draw()
    return drawn
