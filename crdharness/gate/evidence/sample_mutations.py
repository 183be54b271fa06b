"""Objects drawn from the user's samples: one subtree at a time replaced by a value drawn
from the schema, the rest kept (``mutations``), so they still pass what a schema cannot say."""

from __future__ import annotations

import copy

from hypothesis import strategies as st

from crdharness.gate.evidence.objects import body_schema, intent, strategy

MUTATION_POINTS = 200  # subtrees of the samples a search may replace


def mutations(version: dict, samples: list[dict]) -> st.SearchStrategy[dict]:
    """The user's samples (``sample_body``) with one subtree at a time replaced by a value
    drawn from the schema (or a top-level field they leave out added), the rest kept: objects
    that still pass the semantic rules a schema cannot say (a cron syntax an admission
    webhook parses, a CEL rule across fields)."""
    schema = body_schema(version)
    points: list[tuple[dict, tuple, dict]] = []

    def walk(value, node: dict, path: tuple, sample: dict) -> None:
        # The smallest subtrees: a field whose own fields can be replaced one by one is not
        # replaced whole (that would discard most of what makes the sample acceptable).
        if isinstance(value, dict) and node.get("properties"):
            children = [(k, c) for k, c in node["properties"].items() if k in value]
            for key, child in children:
                walk(value[key], child, (*path, key), sample)
            if children:
                return
        elif isinstance(value, list) and isinstance(node.get("items"), dict) and value:
            for i, item in enumerate(value):
                walk(item, node["items"], (*path, i), sample)
            return
        if path and len(points) < MUTATION_POINTS:
            points.append((sample, path, node))

    for sample in samples:
        body = intent(sample)
        # A top-level field the sample leaves out is drawn whole and added: samples seldom
        # carry a status, the project's admission webhooks seldom check one (it is written
        # through /status), and a webhook that loses status.conditions loses them there.
        for key, node in schema["properties"].items():
            if key not in body and len(points) < MUTATION_POINTS:
                points.append((sample, (key,), node))
        walk(body, schema, (), sample)
    if not points:
        return st.nothing()

    def replaced(point: tuple[dict, tuple, dict], value) -> dict:
        sample, path, _ = point
        body = copy.deepcopy(sample)
        target = body
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
        return body

    # Drawn as from the top (depth 0): a subtree deep in a sample gets its optional fields
    # too, not only what is required that far down.
    return st.sampled_from(points).flatmap(
        lambda point: strategy(point[2]).map(lambda v: replaced(point, v))
    )
