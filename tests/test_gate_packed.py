"""Values kept compressed (``evidence.packed``): what is kept is given back equal, each caller
its own copy, and a value JSON cannot give back exactly is kept as it is."""

from __future__ import annotations

from crdharness.gate.evidence.packed import Packed, PackedReads


def test_an_old_objects_reads_come_back_equal_and_each_caller_gets_its_own_copy():
    body = {"metadata": {"name": "r1-v1-0", "managedFields": [{"manager": "gate"}]}, "n": 1.5}
    reads = PackedReads({"v1": body})
    reads["v2"] = {**body, "apiVersion": "example.com/v2"}
    assert reads["v1"] == body and "v2" in reads and len(reads) == 2
    assert sorted(reads) == ["v1", "v2"] and reads.get("v3") is None
    got = reads["v1"]
    got["metadata"]["name"] = "changed by a caller"
    assert reads["v1"]["metadata"]["name"] == "r1-v1-0"  # what is kept does not change
    del reads["v2"]
    assert list(reads) == ["v1"] and bool(reads) and not PackedReads()


def test_a_value_json_cannot_give_back_exactly_is_kept_as_it_is_and_copied():
    kept = Packed.of({"pair": ("v1", "v2")})  # a tuple comes back from JSON as a list
    first = kept.value()
    assert first == {"pair": ("v1", "v2")}
    first["pair"] = ()
    assert kept.value() == {"pair": ("v1", "v2")}


def test_an_integer_beyond_64_bits_in_a_read_comes_back_exact():
    # orjson writes none and reads one back as a float: such a read is kept through json.
    body = {"spec": {"bound": 2**70, "small": 2**63 - 1, "ratio": 0.5}}
    back = PackedReads({"v1": body})["v1"]
    assert back == body and isinstance(back["spec"]["bound"], int)
