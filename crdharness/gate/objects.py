"""Objects to write: the user's samples, and objects generated from a version's
``openAPIV3Schema`` with hypothesis-jsonschema (seeded, so a run can be repeated, and shrunk
to a minimal object when one fails a check).

Kubernetes schemas are OpenAPI v3 with extensions; ``json_schema`` turns one into the JSON
Schema the generator understands. What the generator cannot know (CEL rules, formats the API
server checks differently) produces objects the API server refuses: the gate counts those as
refused input, never as findings.
"""

from __future__ import annotations

import copy

from hypothesis import strategies as st

INT64 = 2**53  # JSON numbers beyond this lose precision in some clients; stay inside
INT32 = 2**31
# Keep generated objects small: big ones test the generator, not the conversion.
MAX_ITEMS = 4
MAX_PROPERTIES = 4
TOP_LEVEL = ("apiVersion", "kind", "metadata")


def json_schema(schema: dict) -> dict:
    """A JSON Schema for values valid under Kubernetes structural ``schema``."""
    schema = copy.deepcopy(schema or {})
    return _convert(schema)


def _convert(node: dict) -> dict:
    if not isinstance(node, dict):
        return node
    out = {k: v for k, v in node.items() if not k.startswith("x-kubernetes-")}
    for key in ("description", "example", "externalDocs", "default"):
        out.pop(key, None)
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        return {
            "anyOf": [
                {"type": "integer", "minimum": -INT32, "maximum": INT32},
                {"type": "string", "maxLength": 20},
            ]
        }
    if "properties" in out:
        out["properties"] = {k: _convert(v) for k, v in out["properties"].items()}
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = _convert(out["additionalProperties"])
    if "items" in out:
        out["items"] = _convert(out["items"])
    for key in ("allOf", "anyOf", "oneOf"):
        if key in out:
            out[key] = [_convert(s) for s in out[key]]
    if "not" in out:
        out["not"] = _convert(out["not"])
    kind = out.get("type")
    if kind == "object":
        preserve = node.get("x-kubernetes-preserve-unknown-fields")
        if "properties" in out and "additionalProperties" not in out and not preserve:
            out["additionalProperties"] = False  # unknown fields would be pruned anyway
        out.setdefault("maxProperties", max(MAX_PROPERTIES, len(out.get("required", []))))
        if not out.get("properties") and "additionalProperties" not in out:
            out["additionalProperties"] = {
                "type": ["string", "integer", "boolean"],
                "maxLength": 20,
            }
    elif kind == "array":
        out.setdefault("maxItems", max(MAX_ITEMS, out.get("minItems", 0)))
    elif kind == "integer":
        bound = INT32 if node.get("format") == "int32" else INT64
        out.setdefault("minimum", -bound)
        out.setdefault("maximum", bound - 1)
    elif kind == "number":
        out.setdefault("minimum", -1e15)
        out.setdefault("maximum", 1e15)
    elif kind == "string":
        out.setdefault("maxLength", 40)
    if node.get("nullable") and kind:
        out["type"] = [kind, "null"]
    out.pop("nullable", None)
    if "format" in out and out["format"] not in (
        "date-time",
        "date",
        "email",
        "ipv4",
        "ipv6",
        "uuid",
        "hostname",
    ):
        out.pop("format")
    return out


def body_schema(version: dict) -> dict:
    """The generable part of an object at ``version``: every top-level field but
    apiVersion, kind and metadata (``spec``, ``status``, or the fields themselves)."""
    root = (version.get("schema") or {}).get("openAPIV3Schema") or {"type": "object"}
    root = json_schema(root)
    properties = {k: v for k, v in (root.get("properties") or {}).items() if k not in TOP_LEVEL}
    required = [k for k in root.get("required", []) if k not in TOP_LEVEL]
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def bodies(version: dict) -> st.SearchStrategy[dict]:
    """A hypothesis strategy of object bodies valid (as far as JSON Schema can say) at
    ``version``."""
    from hypothesis_jsonschema import from_schema

    return from_schema(body_schema(version))


def manifest(crd: dict, version: str, name: str, namespace: str | None, body: dict) -> dict:
    spec = crd["spec"]
    obj = {
        "apiVersion": f"{spec['group']}/{version}",
        "kind": spec["names"]["kind"],
        "metadata": {"name": name},
        **copy.deepcopy(body),
    }
    if namespace and spec.get("scope", "Namespaced") == "Namespaced":
        obj["metadata"]["namespace"] = namespace
    return obj


def sample_body(sample: dict) -> dict:
    """A sample's fields without apiVersion, kind and metadata (its name is the gate's)."""
    labels = (sample.get("metadata") or {}).get("labels")
    body = {k: copy.deepcopy(v) for k, v in sample.items() if k not in TOP_LEVEL}
    if labels:
        body["__labels__"] = dict(labels)
    return body


def first_examples(version: dict, count: int, seed: int) -> list[dict]:
    """``count`` bodies drawn from ``bodies(version)``, the same ones for the same seed."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as fixed_seed

    drawn: list[dict] = []
    if count == 0:
        return drawn

    @fixed_seed(seed)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=["generate"],
        suppress_health_check=list(HealthCheck),
    )
    @given(bodies(version))
    def draw(body):
        if len(drawn) < count:
            drawn.append(body)

    draw()
    return drawn
