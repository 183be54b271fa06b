"""Values worked out from a schema alone, kept by the schema's content: the same schema gets
the same value without drawing it again.

Why: the smallest value a schema accepts (``old_values.minimal``, ``old_values.present``) is a
repeatable hypothesis search (derandomized), a few milliseconds to a second each, asked for
every leaf of every object built for a change, again for each version pair, and again for
the release before the candidate (whose schemas are mostly the same). On a provider's
generated CRDs these searches were the largest share of the gate's own CPU. A function of
the schema alone gives the same answer each time, so one search per distinct schema is
the same evidence.

A function that never reads a schema's ``description`` (value generation does not) may
say so (``descriptions_matter=False``): then a version whose schema differs from the
release before only in its words (a deprecation notice, reworded docs: most of a
provider's versions) is one schema, not two.

Written here (not ``functools.lru_cache``): schemas are dicts, not hashable, and callers
may change the value they get, so each gets its own copy. A value is kept as compressed JSON
where JSON gives it back exactly (every body is JSON): twenty drawn bodies of a provider's
large CRD are megabytes as Python objects and tens of kilobytes so, and the whole run keeps
thousands of them (the gate's Python grew past 2 GB on upjet's whole release); ``json.loads``
also makes the caller's copy faster than ``copy.deepcopy``.
"""

from __future__ import annotations

import copy
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from crdharness.gate import json_values
from crdharness.gate.evidence.packed import Packed

Result = TypeVar("Result")

KEPT = 4096  # distinct schemas kept per function; the least recently asked go first


def by_schema(
    remembered: tuple[type[Exception], ...] = (),
    descriptions_matter: bool = True,
) -> Callable[[Callable[..., Result]], Callable[..., Result]]:
    """``fn(schema, *more)`` worked out once per distinct schema (by content; its
    descriptions aside unless ``descriptions_matter``) and ``more`` (JSON values, by
    content); each caller gets a copy. An exception of ``remembered`` types is raised again
    for the same arguments."""

    def decorate(fn: Callable[..., Result]) -> Callable[..., Result]:
        # schema digest -> (the value, or the remembered exception raised for it)
        kept: OrderedDict[str, tuple[Packed | None, Exception | None]] = OrderedDict()
        lock = threading.Lock()

        @wraps(fn)
        def memoised(schema: dict, *more: Any) -> Result:
            key = _digest(schema if descriptions_matter else without_descriptions(schema), more)
            with lock:
                found = kept.get(key)
                if found is not None:
                    kept.move_to_end(key)
            if found is None:
                try:
                    found = (Packed.of(fn(schema, *more)), None)
                except remembered as exc:
                    found = (None, exc)  # never returned: raised again
                with lock:
                    kept[key] = found
                    while len(kept) > KEPT:
                        kept.popitem(last=False)
            packed, failure = found
            if failure is not None:
                raise copy.copy(failure)
            assert packed is not None  # a value kept, or the exception its search raised
            return cast(Result, packed.value())

        memoised.forget = kept.clear  # type: ignore[attr-defined]
        return memoised

    return decorate


def content_key(value: Any) -> str:
    """A short key for a JSON value by its content: a cache keyed by a provider's whole
    schema as text keeps hundreds of kilobytes per key."""
    return hashlib.sha256(json_values.content_text(value)).hexdigest()


def _digest(schema: dict, more: tuple) -> str:
    return hashlib.sha256(json_values.content_text([schema, more], default=repr)).hexdigest()


# The keywords whose values are schemas (or lists or maps of them); every other keyword's
# value (enum, default, x-kubernetes-validations, ...) is kept as it is: only a schema
# node's own ``description`` goes, never a property of that name nor data that holds one.
_SCHEMA_MAPS = ("properties", "patternProperties", "definitions")
_SCHEMAS = ("items", "additionalProperties", "additionalItems", "not", "allOf", "anyOf", "oneOf")


def without_descriptions(schema: Any) -> Any:
    """``schema`` without its nodes' descriptions (a copy; the rest as it is)."""
    if isinstance(schema, list):
        return [without_descriptions(node) for node in schema]
    if not isinstance(schema, dict):
        return schema  # additionalProperties: true
    kept: dict = {}
    for key, value in schema.items():
        if key == "description":
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            kept[key] = {name: without_descriptions(node) for name, node in value.items()}
        elif key in _SCHEMAS:
            kept[key] = without_descriptions(value)
        else:
            kept[key] = value
    return kept
