"""Go's RE2 patterns as Python reads them (``gate.go_regex``), and the strings the coverage
objects draw for them, without a cluster."""

import re

import pytest

from crdharness.gate import go_regex
from crdharness.gate.evidence import coverage, objects


def test_a_flag_inside_a_group_scopes_to_each_of_its_alternatives():
    # RE2: (?i) applies to the rest of its group, across |; Python 3.11 refuses it there.
    pattern = "^((?i)north|south|east)$"
    with pytest.raises(re.error):
        re.compile(pattern)
    python = go_regex.compile(pattern)
    assert python.pattern == "^((?i:north)|(?i:south)|(?i:east))$"
    assert all(python.fullmatch(t) for t in ("NORTH", "South", "east"))
    assert not python.fullmatch("west")


def test_a_flag_mid_pattern_does_not_swallow_the_alternation_before_it():
    python = go_regex.compile("a(?i)b|c")  # RE2: (a[bB])|[cC]
    assert python.fullmatch("aB") and python.fullmatch("C")
    assert not python.fullmatch("Ab") and not python.fullmatch("aC")


def test_flags_at_the_start_ungreedy_and_scoped_groups():
    assert go_regex.compile("(?i)ab").fullmatch("AB")
    assert go_regex.to_python("(?U)a+?b") == "a+?b"  # ungreedy: which match, not whether
    assert go_regex.compile("(?i:x)|(?-i)y").fullmatch("X")
    assert not go_regex.compile("(?i)x(?-i)y").fullmatch("XY")
    assert go_regex.compile("(?i)x(?-i)y").fullmatch("Xy")


def test_spellings_python_lacks():
    assert go_regex.compile(r"^[[:alpha:]][[:digit:]_]*\z").fullmatch("a1_2")
    assert not go_regex.compile(r"^[[:alpha:]]+\z").fullmatch("a1")
    assert go_regex.compile(r"\Qa.b*\E").fullmatch("a.b*")
    assert go_regex.compile(r"(?<word>x)\x{41}").fullmatch("xA")
    assert go_regex.compile(r"[]a]+").fullmatch("]a")
    # RE2's \d is ASCII: a string drawn for it must be too (Go refuses other digits).
    assert go_regex.to_python(r"^\d+$") == r"(?a)^\d+$"
    assert not go_regex.compile(r"^\d+$").fullmatch("٣")
    for pattern in (r"\pL+", r"[\p{Greek}]", "[[:^alpha:]]", "(a", "a)"):
        with pytest.raises(re.error):
            go_regex.to_python(pattern)


def test_nothing_to_translate_leaves_the_pattern_as_it_is():
    for pattern in ("^[a-z]([-a-z0-9]*[a-z0-9])?$", "^(a|b)+$", r"^v\.[0-9]+$"):
        assert go_regex.to_python(pattern) == pattern


def test_the_coverage_objects_and_drawn_objects_find_strings_for_mid_pattern_flags():
    node = {"type": "string", "pattern": "^((?i)mon|tue|wed)(?:-((?i)mon|tue|wed))?$"}
    values, reason = coverage.values_of(node)
    assert reason == "" and len(values) == 1
    assert re.fullmatch("((?i:mon|tue|wed))(-((?i:mon|tue|wed)))?", values[0]), values
    drawn = objects.drawn_from(objects.strategy(node), 10, seed=3)
    assert drawn and all(go_regex.compile(node["pattern"]).fullmatch(t) for t in drawn)


def test_a_pattern_python_cannot_spell_is_named_with_why():
    values, reason = coverage.values_of({"type": "string", "pattern": r"^\pL+$"})
    assert values == []
    assert reason.startswith(r"no string found for pattern '^\\pL+$' (not translated to Python:")
