"""Language inclusion of two schema patterns under Go's RE2 search semantics
(``gate.evidence.pattern_inclusion``): proofs, witnesses, and what is left undecided."""

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crdharness.gate import go_regex
from crdharness.gate.evidence import pattern_inclusion
from crdharness.gate.evidence.pattern_inclusion import compare

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_LABEL_63 = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$"


def exactly(text: str) -> str:
    """An RE2 pattern matching ``text`` and nothing else."""
    return "^" + "".join(f"\\x{{{ord(c):x}}}" for c in text) + r"\z"


def python_search(pattern: str, text: str) -> bool:
    """Go's MatchString as Python reads the translated pattern: the same answer for the
    patterns drawn here and texts without a newline (Python's ``$`` also matches before a
    trailing one) or \\v (Python's ASCII ``\\s`` has it, RE2's not)."""
    assert "\n" not in text and "\v" not in text
    return re.search(go_regex.to_python(pattern), text) is not None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("^[a-z]+$", "^[a-z0-9-]+$"),
        ("^[a-z]{1,10}$", "^[a-z]{1,20}$"),
        ("^(foo|bar)$", "^[a-z]+$"),
        ("^a$", "a"),
        ("^a$", r"^a\z"),
        (r"^a\z", "^a$"),
        (r"\d", "[0-9]"),
        ("[0-9]", r"\d"),
        (r"\s", r"[ \t\n\r\f\v]"),
        (r"\w+", "[[:word:]]"),
        (DNS_LABEL_63, DNS_LABEL),
        (DNS_SUBDOMAIN, r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"),
        (DNS_SUBDOMAIN, r"^[-a-z0-9.]+$"),
        ("^(a+?|b*?)$", "^(a+|b*)$"),  # lazy and greedy: the same language
        (r"(?U)^\Qa.b\E+$", r"^a\.b+$"),
        ("^(?P<x>a)(?:b)$", "ab"),
        ("$^", "^$"),  # both match the empty string only
    ],
)
def test_a_relaxation_is_proven_included(old, new):
    result = compare(old, new)
    assert result.included is True, result
    assert result.witness is None


@pytest.mark.parametrize("old", ["x", r"^\n+$", "^a$", DNS_SUBDOMAIN, ".", "(?s).", r"\pL"])
@pytest.mark.parametrize("new", ["", ".*", "^", "$", "a*", "(b|)"])
def test_a_pattern_matching_the_empty_string_matches_everything(old, new):
    # unanchored: the empty substring matches at the start, newlines or not
    assert compare(old, new).included is (None if old in ("(?s).", r"\pL") else True)


def test_a_tightened_pattern_gets_a_witness_old_matches_and_new_refuses():
    result = compare("^[a-z0-9-]+$", "^[a-z]+$")
    assert result.included is False and result.witness
    assert re.fullmatch("[a-z0-9-]+", result.witness) and re.search("[0-9-]", result.witness)
    assert python_search("^[a-z0-9-]+$", result.witness)
    assert not python_search("^[a-z]+$", result.witness)

    assert compare("a", "^a$") == compare("^a", "^a$")
    assert compare("a", "^a$").witness == "aa"  # shortest, readable
    assert compare("^[a-z]{1,20}$", "^[a-z]{1,10}$").witness == "a" * 11
    assert compare(DNS_LABEL, DNS_LABEL_63).witness == "a" * 64
    assert compare("", "x") == pattern_inclusion.Inclusion(
        False, "", "the old pattern matches '', the new not"
    )


def test_perl_classes_are_ascii_and_re2s_space_has_no_vertical_tab():
    result = compare(r"[ \t\n\r\f\v]", r"\s")
    assert (result.included, result.witness) == (False, "\v")
    assert compare(r"\D", "[^0-9]").included is True
    assert compare("[^0-9]", r"\D").included is True
    assert compare(r"\W", "[^a-zA-Z0-9_]").included is True
    assert compare("٣", r"\d").included is False  # an Arabic-Indic digit: not \d in RE2


def test_dollar_is_the_end_of_the_text_not_before_a_trailing_newline():
    # Python's $ matches before a trailing newline: reading "$" Python's way would say the
    # new pattern matches "a\n" and call this a relaxation.
    assert re.search("^a$", "a\n")
    result = compare(r"^a\n$", "^a$")
    assert (result.included, result.witness) == (False, "a\n")
    assert compare(r"^a\n?$", "^a$").witness == "a\n"
    assert compare("^a$", r"^a\n?$").included is True
    assert compare(r"a\n$", "a$").witness == "a\n"
    assert compare("a$", r"a\n").witness == "a"
    assert compare(r"^a\n", "^a$").witness == "a\n"


def test_anchors_anywhere():
    assert compare("a|^b", "[ab]").included is True
    assert compare("a^", "b").included is True  # never matches: included in anything
    assert compare("(^|-)a", "a").included is True
    assert compare("a", "(^|-)a").witness == "ba"
    assert compare("a($|b)", "ab|a$").included is True
    assert compare("(a$)*b", "b").included is True  # a$ repeated is only the empty string


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(?i)^a$", "flags"),
        ("^(?i:a)$", "flags"),
        ("(?s).", "flags"),
        ("(?m)^a$", "flags"),
        (r"\bfoo", "word boundary"),
        (r"[\b]", "word boundary"),
        ("^a{,3}$", "{,n}"),
        ("^a{01}$", "{01}"),  # leading zero: literal text to Go
        ("^a{1001}$", "1000"),  # Go refuses the pattern
        ("^(a{100}){20}$", "1000"),  # nested counts multiply
        ("^" + "[a-z]{1000}" * 60 + "$", "automaton states"),
        (r"\pL", "Unicode classes"),
        ("[[:^alpha:]]", "[:^alpha:]"),
        (r"(a)\1", "GROUPREF"),
        ("(?=a)", "not RE2"),
        ("(?#note)a", "not RE2"),
        (r"a\Z", r"\Z"),
        (r"\u0041", r"\u"),
        ("a++", "POSSESSIVE_REPEAT"),
        ("(a", "missing )"),
    ],
)
def test_what_python_and_go_might_read_otherwise_is_left_undecided(pattern, why):
    for result in (compare(pattern, "a"), compare("a", pattern)):
        assert (result.included, result.witness) == (None, None)
        assert why in result.why


def test_the_automaton_caps_leave_it_undecided(monkeypatch):
    monkeypatch.setattr(pattern_inclusion, "MAX_STATES", 500)
    assert "subset states" in compare("a[ab]{12}$", "[ab]*a[ab]{12}$").why
    monkeypatch.setattr(pattern_inclusion, "MAX_WORK", 1000)
    assert "steps" in compare(".{0,100}x$", "x$").why


PIECES = ["a", "b", "0", "-", "_", r"\.", ".", "[a-z]", "[a-c]", "[0-9]", "[a-z0-9-]", "[^a]"]
PIECES += [r"\d", r"\D", r"\w", r"\W", r"\s", "[[:alpha:]]"]
TEXT = "ab0-_.z9 A"
SHORT = ["".join(t) for n in range(4) for t in itertools.product("a0-.", repeat=n)]


def quantified(inner):
    return st.tuples(inner, st.sampled_from(["", "", "*", "+", "?", "{1,3}", "{2}", "*?"])).map(
        "".join
    )


def groups(inner):
    return st.one_of(
        st.lists(inner, min_size=1, max_size=3).map("".join),
        quantified(st.lists(inner, min_size=1, max_size=3).map(lambda a: f"({'|'.join(a)})")),
    )


bodies = st.recursive(quantified(st.sampled_from(PIECES)), groups, max_leaves=6)
patterns = st.tuples(st.sampled_from(["", "^"]), bodies, st.sampled_from(["", "$"])).map("".join)


@settings(max_examples=200, deadline=None, database=None)
@given(patterns, patterns, st.lists(st.text(TEXT, max_size=10), max_size=8))
def test_answers_agree_with_searching_strings(old, new, drawn):
    result = compare(old, new)
    assert result.included is not None, result  # the grammar holds only what is decided
    texts = SHORT + drawn
    if result.included:
        assert not any(python_search(old, t) and not python_search(new, t) for t in texts)
    else:
        witness = result.witness
        assert witness is not None
        if "\n" not in witness and "\v" not in witness:
            assert python_search(old, witness) and not python_search(new, witness)
    # a pattern is included in itself and in any alternation holding it
    assert compare(old, old).included is True
    assert compare(old, f"{new}|{old}").included is True
    # one string's pattern is included exactly where the search matches it
    for text in drawn[:3]:
        assert compare(exactly(text), old).included is python_search(old, text)
