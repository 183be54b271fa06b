"""The object a deprecated version's warnings are checked with: drawn objects are repaired by
the local validator first, as every drawn object the gate sends is (gateway-api v1.6.1's
deprecated route versions refused all ten raw draws, and the check ended "not proven" on a
release upgraded to itself)."""

from pathlib import Path

from crdharness.gate.checks import deprecation
from crdharness.gate.given.config import GateConfig
from crdharness.gate.given.manifests import Release
from crdharness.gate.run.context import GateContext
from crdharness.scenarios import crds


class _Repairing:
    """Stands for the local validator's screen: each drawn body comes back repaired."""

    def __init__(self) -> None:
        self.counted: list[bool] = []

    def screen(self, manifest, entry, body, name, namespace, counted=True):
        self.counted.append(counted)
        return {**body, "spec": {"rules": [{}]}}, None


def test_repaired_draws_are_tried_before_raw_ones_and_not_counted_as_objects_made():
    schema = {
        "type": "object",
        "required": ["spec"],
        "properties": {
            "spec": {
                "type": "object",
                "required": ["rules"],
                "properties": {"rules": {"type": "array", "items": {"type": "object"}}},
            }
        },
    }
    manifest = crds.manifest("dep.example.com", "Route", [crds.version("v1", schema)])
    name = manifest["metadata"]["name"]
    release = Release(0, "r0", {name: manifest})
    ctx = GateContext(None, GateConfig(Path("gate.yaml"), crds=[]), [release], {}, print)
    screen = _Repairing()
    ctx.screening = screen  # type: ignore[assignment]
    bodies = list(deprecation._acceptable_bodies(ctx, name, release, "v1", "deprecation-0"))
    assert bodies[0] == {}  # then the repaired draws, then the raw ones
    repaired = bodies[1 : 1 + len(screen.counted)]
    assert repaired and all(b["spec"] == {"rules": [{}]} for b in repaired), bodies
    assert len(bodies) == 1 + 2 * len(screen.counted)
    assert screen.counted and not any(screen.counted)  # a check's probe, not objects made
