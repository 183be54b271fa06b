"""The converter registry.

A converter turns the version-specific fields of one object from one version to another::

    registry = Registry()

    @registry.converter("example.com", "CronTab", "v1beta1", "v1")
    def hostport_to_host_and_port(obj: dict) -> dict:
        ...

It receives a private copy of the whole object and returns the converted object. The
framework then sets ``apiVersion`` and restores every part of ``metadata`` except labels and
annotations, so a converter cannot break the rules the API server enforces on names, UIDs
and namespaces. Versions without a direct converter are reached through a chain of them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from crdconvert import json_codec

Converter = Callable[[dict], dict]
ANY_GROUP = "*"  # a converter for a kind in whatever group it is served (tests move CRDs)
MUTABLE_METADATA = ("labels", "annotations")


class ConversionError(Exception):
    """An object cannot be converted; the message says why (it reaches the API client)."""


class Registry:
    def __init__(self) -> None:
        # (group, kind) -> {from_version: {to_version: converter}}
        self._edges: dict[tuple[str, str], dict[str, dict[str, Converter]]] = {}
        self._paths: dict[tuple[str, str, str, str], list[Converter]] = {}
        self._identity: set[tuple[str, str]] = set()

    def converter(self, group: str, kind: str, from_version: str, to_version: str):
        """Decorator: register a converter for ``kind`` in ``group`` between two versions."""

        def register(function: Converter) -> Converter:
            self.add(group, kind, from_version, to_version, function)
            return function

        return register

    def add(self, group: str, kind: str, from_version: str, to_version: str, fn: Converter):
        self._edges.setdefault((group, kind), {}).setdefault(from_version, {})[to_version] = fn
        self._paths.clear()

    def add_identity(self, group: str, kind: str) -> None:
        """Convert ``kind`` between any two versions by changing only ``apiVersion``."""
        self._identity.add((group, kind))

    def _path(self, group: str, kind: str, source: str, target: str) -> list[Converter]:
        key = (group, kind, source, target)
        if key not in self._paths:
            self._paths[key] = self._search(group, kind, source, target)
        return self._paths[key]

    def _search(self, group: str, kind: str, source: str, target: str) -> list[Converter]:
        if (group, kind) in self._identity or (ANY_GROUP, kind) in self._identity:
            return []
        edges = self._edges.get((group, kind)) or self._edges.get((ANY_GROUP, kind))
        if edges is None:
            raise ConversionError(f"no converter is registered for kind {kind} in group {group}")
        previous: dict[str, tuple[str, Converter] | None] = {source: None}
        queue = deque([source])
        while queue:
            version = queue.popleft()
            if version == target:
                break
            for following, fn in edges.get(version, {}).items():
                if following not in previous:
                    previous[following] = (version, fn)
                    queue.append(following)
        if target not in previous:
            raise ConversionError(f"no conversion from {group}/{source} to {group}/{target}")
        chain: list[Converter] = []
        step = previous[target]
        while step is not None:
            version, fn = step
            chain.append(fn)
            step = previous[version]
        return chain[::-1]

    def convert(self, obj: dict, desired_api_version: str) -> dict:
        """Return ``obj`` converted to ``desired_api_version`` (``<group>/<version>``)."""
        if not isinstance(obj, dict):
            raise ConversionError("the object is not a JSON object")
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or "/" not in api_version:
            raise ConversionError(f"the object has no valid apiVersion ({api_version!r})")
        if not isinstance(kind, str) or not kind:
            raise ConversionError("the object has no kind")
        group, _, source = api_version.partition("/")
        desired_group, _, target = desired_api_version.partition("/")
        if desired_group != group:
            raise ConversionError(
                f"cannot convert between groups ({api_version} to {desired_api_version})"
            )
        metadata = obj.get("metadata")
        if source == target:
            return obj
        # A private copy for the converter. The object came from JSON, so a JSON round trip
        # copies it exactly, and with orjson about five times faster than copy.deepcopy.
        converted = json_codec.loads(json_codec.dumps(obj))
        for fn in self._path(group, kind, source, target):
            converted = fn(converted)
        converted["apiVersion"] = desired_api_version
        converted["kind"] = kind
        converted["metadata"] = _keep_identity(metadata, converted.get("metadata"))
        return converted


def _keep_identity(original, returned) -> dict:
    """The original metadata, with the converter's labels and annotations (the only parts
    a conversion may change)."""
    if not isinstance(original, dict):
        original = {}
    result = dict(original)
    returned = returned if isinstance(returned, dict) else {}
    for field in MUTABLE_METADATA:
        if field in returned:
            result[field] = returned[field]
        else:
            result.pop(field, None)
    return result


def describe(obj) -> str:
    """``CronTab default/name`` for messages (whatever shape the object has)."""
    if not isinstance(obj, dict):
        return "an object that is not a JSON object"
    metadata = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    name = metadata.get("name", "<no name>")
    namespace = metadata.get("namespace")
    where = f"{namespace}/{name}" if namespace else str(name)
    return f"{obj.get('kind', '<no kind>')} {where}"
