"""The objects a version pair's round trips draw first (``generate`` of them from the
version's schema, half mutations of the user's samples where there are any), drawn once per
distinct schema, samples, count and seed.

Why: the draw is repeatable (the same seed, the same objects: ``objects.drawn_from``), and
it was made again for every pair starting at a version (a version serving two others: twice)
and again for the release before the candidate, whose schemas on a provider's CRDs are the
candidate's but for their descriptions (a deprecation notice). On generated CRDs of a few
hundred schema paths a draw of 20 objects is seconds of the gate's own CPU; remembered, the
same objects (each caller its own copy) cost nothing (``schema_memo``).
"""

from __future__ import annotations

from hypothesis import strategies as st

from crdharness.gate.evidence import objects, sample_mutations
from crdharness.gate.evidence.schema_memo import by_schema


def bodies(entry: dict, samples: list[dict], count: int, seed: int) -> list[dict]:
    """``count`` bodies for ``entry`` (a CRD's version), the same ones for the same seed:
    drawn from its schema, and with ``samples`` (``objects.sample_body``), half of them
    the samples mutated."""
    root = (entry.get("schema") or {}).get("openAPIV3Schema") or {}
    return _drawn(root, samples, count, seed)


# Value generation never reads a description: a schema reworded is the same draw.
@by_schema(descriptions_matter=False)
def _drawn(root: dict, samples: list[dict], count: int, seed: int) -> list[dict]:
    version = {"schema": {"openAPIV3Schema": root}}
    strategy = objects.bodies(version)
    if samples:
        strategy = st.one_of(sample_mutations.mutations(version, samples), strategy)
    return objects.drawn_from(strategy, count, seed)


@by_schema(descriptions_matter=False)
def values(schema: dict, count: int, seed: int) -> list:
    """``count`` values drawn from ``schema`` (``objects.strategy``), the same for the same
    seed: asked for each leaf of an object, most of them the same few schemas (a plain
    string), so drawn once for each."""
    return objects.drawn_from(objects.strategy(schema), count, seed)
