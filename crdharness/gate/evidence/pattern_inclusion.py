"""Whether every string one schema ``pattern`` matches, another matches too: decided, not
sampled, so a release that only relaxes a pattern (``^[a-z]+$`` to ``^[a-z0-9-]+$``) is
proven harmless, and one that tightens it gets a shortest string the old pattern let
through and the new one refuses.

The semantics are kube-apiserver's: Go's ``regexp.MatchString(pattern, value)``, an
unanchored search (a match of any substring, the empty one included) with RE2's meaning:
``^`` and ``\\A`` assert the start of the text, ``$`` and ``\\z`` its end (never just before
a trailing newline, where Python's ``$`` matches too), ``.`` is any character but ``\\n``, and the
Perl classes are ASCII (``\\d`` [0-9], ``\\w`` [0-9A-Za-z_], ``\\s`` [\\t\\n\\f\\r ],
without \\v). A string is code points, surrogates excepted (Go strings are UTF-8).

A pattern is spelt for Python (``go_regex.to_python``) and parsed by Python's own parser;
the tree is read as syntax only and each node given RE2's meaning here. Taken: literals,
classes (ranges, negation, the Perl classes), ``.``, groups, alternation, greedy and lazy
repeats (the same language), and ``^`` ``\\A`` ``$`` ``\\z`` anywhere. Refused, so
``included`` is None and ``why`` says what: every flag (``(?i)`` ``(?s)`` ``(?m)``: another
language); ``\\b`` ``\\B``; what Python reads and Go does not, or reads otherwise (back
references, lookarounds, possessive repeats, ``(?#...)``, ``\\Z``, ``\\u``, ``{,n}`` and
``{01}``, literal text to Go); what the translator cannot spell (``\\pL``, ``[[:^alpha:]]``,
``\\x{...}`` in a class); repeats Go refuses (over 1000 copies, nested counts multiplied);
and automata over ``MAX_STATES`` states or ``MAX_WORK`` steps (never a long wait).

Method: a Thompson NFA per pattern over a finite alphabet (the code points cut at every
boundary a class of either pattern names, code points no class tells apart one symbol), run
as a search (a new attempt starts at every position; a match before the end is final), and
a breadth-first walk of the two subset automata side by side, built as walked, for a string
the old accepts and the new does not: found, a shortest such string; none, inclusion.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from importlib import import_module
from itertools import pairwise
from typing import Any

from crdharness.gate import go_regex

try:  # Python's regular-expression parser: re._parser from 3.11, sre_parse before
    _sre: Any = import_module("re._parser")
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    _sre = import_module("sre_parse")

MAX_STATES = 50_000  # NFA states per pattern, and subset states (both patterns and pairs)
MAX_WORK = 4_000_000  # NFA states visited building one pattern's subsets: some seconds
GO_MAX_REPEAT = 1000  # Go refuses a repeat count above this
TOP = 0x110000
SURROGATES = (0xD800, 0xDFFF)
_PERL = {  # RE2's Perl classes: ASCII
    "DIGIT": ((0x30, 0x39),),
    "WORD": ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)),
    "SPACE": ((0x09, 0x0A), (0x0C, 0x0D), (0x20, 0x20)),
}
# the escapes RE2 knows (besides ASCII punctuation), read alike by Python after translation
_GO_ESCAPES = set("aftnrvx01234567dDsSwWAzpPQ")
# the (? groups RE2 knows: named, flags (U alone is dropped by the translator), (?:
_GO_GROUP = re.compile(r"\(\?(?:P?<[A-Za-z_]|[imsU]*(?:-[imsU]+)?[:)])")
_PREFERRED = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-_.:/@ "

Intervals = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Inclusion:
    included: bool | None  # True: proven included; False: witness found; None: undecided
    witness: str | None  # for False: a string the old pattern matches and the new does not
    why: str  # one line: for None, what construct/limit made it undecidable


class _Undecided(Exception):
    pass


# The same change is judged by the history, the round trips and release N-1's own checks.
@lru_cache(maxsize=1024)
def compare(old: str, new: str) -> Inclusion:
    """Whether every string ``old`` matches (Go regexp MatchString: unanchored search) is
    matched by ``new``."""
    try:
        nfas = [_Nfa(old, "old"), _Nfa(new, "new")]
        representatives = _alphabet(nfas)
        olds, news = (_Dfa(nfa, representatives) for nfa in nfas)
        return _search(olds, news)
    except _Undecided as e:
        return Inclusion(None, None, str(e))


def _search(old: _Dfa, new: _Dfa) -> Inclusion:
    """Breadth first over pairs of subset states: the first pair where old accepts and new
    does not ends the shortest witness. A pair whose new state has matched (every longer
    string matches too) or whose old state can never accept is not followed."""
    first = (old.initial, new.initial)
    parent: dict[tuple[int, int], tuple[tuple[int, int], int] | None] = {first: None}
    queue = deque([first])
    while queue:
        pair = queue.popleft()
        if old.accepts(pair[0]) and not new.accepts(pair[1]):
            symbols = []
            step = parent[pair]
            while step is not None:
                pair, symbol = step
                symbols.append(old.representatives[symbol])
                step = parent[pair]
            witness = "".join(reversed(symbols))
            return Inclusion(False, witness, f"the old pattern matches {witness!r}, the new not")
        for symbol, nxt in enumerate(zip(old.step(pair[0]), new.step(pair[1]), strict=True)):
            if nxt[1] == _Dfa.MATCHED or old.dead(nxt[0]) or nxt in parent:
                continue
            if len(parent) >= MAX_STATES:
                raise _Undecided(f"over {MAX_STATES} state pairs to explore")
            parent[nxt] = (pair, symbol)
            queue.append(nxt)
    return Inclusion(True, None, f"proven over {len(parent)} state pairs")


class _Nfa:
    """A Thompson NFA: per state, empty moves, moves on an assertion (``^``: passable at
    the start of the text only; ``$``: at its end only) and moves on a set of characters
    (intervals here, a bit mask of alphabet symbols once the alphabet is known)."""

    def __init__(self, pattern: str, side: str) -> None:
        self.side = side
        self.empty: list[list[int]] = []
        self.asserts: list[list[tuple[bool, int]]] = []  # (is the end, target)
        self.chars: list[list[tuple[Intervals, int]]] = []
        self.masks: list[list[tuple[int, int]]] = []  # chars, once the alphabet is known
        self.work = 0  # states visited and moves followed by the subset automaton
        self.start = self._new()
        try:
            tree = _parse(pattern)
            self.accept = self._sequence(tree, self.start, GO_MAX_REPEAT)
        except (re.error, OverflowError, RecursionError) as e:
            raise _Undecided(f"{side} pattern: {e}") from None

    def _new(self) -> int:
        if len(self.empty) >= MAX_STATES:
            raise _Undecided(f"{self.side} pattern: over {MAX_STATES} automaton states")
        self.empty.append([])
        self.asserts.append([])
        self.chars.append([])
        return len(self.empty) - 1

    def _sequence(self, items: Any, at: int, copies: int) -> int:
        """The state after ``items`` spelt from state ``at``; ``copies``: how many times
        Go still lets a repeat inside repeat its operand (``repeatIsValid``)."""
        for op, arg in items:
            at = self._node(op.name, arg, at, copies)
        return at

    def _node(self, name: str, arg: Any, at: int, copies: int) -> int:
        if name in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
            out = self._new()
            self.chars[at].append((_characters(name, arg), out))
            return out
        if name == "AT":
            kind = arg.name
            if kind not in ("AT_BEGINNING", "AT_BEGINNING_STRING", "AT_END", "AT_END_STRING"):
                raise _Undecided(f"{self.side} pattern: assertion {kind} (word boundary)")
            out = self._new()
            self.asserts[at].append((kind.startswith("AT_END"), out))
            return out
        if name == "BRANCH":
            out = self._new()
            for alternative in arg[1]:
                start = self._new()  # fresh, so no alternative loops back into another
                self.empty[at].append(start)
                self.empty[self._sequence(alternative, start, copies)].append(out)
            return out
        if name == "SUBPATTERN":
            _group, add, delete, items = arg
            if add or delete:
                raise _Undecided(f"{self.side} pattern: inline flags")
            return self._sequence(items, at, copies)
        if name in ("MAX_REPEAT", "MIN_REPEAT"):  # lazy or greedy: which match, not whether
            least, most, items = arg
            unbounded = most == _sre.MAXREPEAT
            count = least if unbounded else most
            if count > copies:  # Go refuses the pattern
                raise _Undecided(f"{self.side} pattern: repeats over {GO_MAX_REPEAT} copies")
            copies //= max(count, 1)
            for _ in range(least):
                at = self._sequence(items, at, copies)
            if unbounded:
                loop = self._new()  # fresh: the way back leads here only
                self.empty[at].append(loop)
                self.empty[self._sequence(items, loop, copies)].append(loop)
                return loop
            skips = []
            for _ in range(most - least):
                skips.append(at)
                at = self._sequence(items, at, copies)
            for skip in skips:
                self.empty[skip].append(at)
            return at
        raise _Undecided(f"{self.side} pattern: {name} (no RE2 meaning taken)")

    def closure(self, states: frozenset[int], start: bool, end: bool) -> frozenset[int]:
        """``states`` and every state reached from them without reading, at the start of
        the text or not and at its end or not."""
        seen = set(states)
        stack = list(states)
        while stack:
            state = stack.pop()
            self.work += 1
            nxt = self.empty[state] + [t for e, t in self.asserts[state] if (end if e else start)]
            for target in nxt:
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        return frozenset(seen)

    def live(self) -> list[bool]:
        """Per state, whether the accepting state is reachable from it past the start."""
        back: list[list[int]] = [[] for _ in self.empty]
        for state in range(len(self.empty)):
            targets = self.empty[state] + [t for e, t in self.asserts[state] if e]
            for target in targets + [t for _, t in self.chars[state]]:
                back[target].append(state)
        live = [False] * len(self.empty)
        live[self.accept] = True
        stack = [self.accept]
        while stack:
            for source in back[stack.pop()]:
                if not live[source]:
                    live[source] = True
                    stack.append(source)
        return live


def _parse(pattern: str) -> Any:
    """Python's parse tree of ``pattern`` (RE2), or ``_Undecided`` where Python's reading
    of the translated syntax might not be Go's."""
    if "{," in pattern or re.search(r"\{0\d|\{\d+,0\d", pattern):
        raise _Undecided("Go reads {,n} and {01} as literal text, Python as a repeat")
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\":
            nxt = pattern[i + 1 : i + 2]
            if nxt == "Q":  # quoted literal text up to \E
                end = pattern.find("\\E", i + 2)
                i = len(pattern) if end < 0 else end + 2
                continue
            if nxt in ("b", "B"):
                raise _Undecided("a word boundary (\\b, \\B)")
            if not (nxt in _GO_ESCAPES or (nxt.isascii() and not nxt.isalnum())):
                raise _Undecided(f"escape \\{nxt}: not RE2, or read otherwise by Python")
            i += 2
            continue
        if pattern.startswith("(?", i) and not _GO_GROUP.match(pattern, i):
            raise _Undecided(f"group syntax {pattern[i : i + 4]!r}: not RE2")
        i += 1
    tree = _sre.parse(go_regex.to_python(pattern))
    if tree.state.flags & ~(_sre.SRE_FLAG_ASCII | _sre.SRE_FLAG_UNICODE):
        raise _Undecided("flags (?i) (?m) (?s) or another change the language")
    return tree


def _characters(name: str, arg: Any) -> Intervals:
    """The code points one character node stands for, in RE2's meaning."""
    if name == "LITERAL":
        return ((arg, arg),)
    if name == "NOT_LITERAL":
        return _complement(((arg, arg),))
    if name == "ANY":
        return _complement(((0x0A, 0x0A),))  # without the s flag (refused)
    negate, parts = False, []
    for op, value in arg:
        if op.name == "NEGATE":
            negate = True
        elif op.name == "LITERAL":
            parts.append((value, value))
        elif op.name == "RANGE":
            parts.append(value)
        elif op.name == "CATEGORY" and value.name.removeprefix("CATEGORY_NOT_") in _PERL:
            parts += _complement(_PERL[value.name.removeprefix("CATEGORY_NOT_")])
        elif op.name == "CATEGORY" and value.name.removeprefix("CATEGORY_") in _PERL:
            parts += _PERL[value.name.removeprefix("CATEGORY_")]
        else:
            raise _Undecided(f"class item {op.name} {value}: no RE2 meaning taken")
    return _complement(tuple(parts)) if negate else _union(parts)


def _union(parts: list[tuple[int, int]]) -> Intervals:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(parts):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return tuple(out)


def _complement(parts: Intervals) -> Intervals:
    out, lo = [], 0
    for a, b in _union(list(parts)):
        if a > lo:
            out.append((lo, a - 1))
        lo = b + 1
    return tuple([*out, (lo, TOP - 1)] if lo < TOP else out)


def _alphabet(nfas: list[_Nfa]) -> list[str]:
    """Cuts the code points into symbols no class of either pattern tells apart, turns
    every character move into a bit mask of symbols, and returns one character standing
    for each symbol (a readable one where the symbol holds one)."""
    sets = sorted({s for nfa in nfas for moves in nfa.chars for s, _ in moves})
    cuts = {0, TOP, SURROGATES[0], SURROGATES[1] + 1}
    cuts.update(edge for s in sets for lo, hi in s for edge in (lo, hi + 1))
    bounds = sorted(cuts)
    members: dict[tuple[bool, ...], list[tuple[int, int]]] = {}
    for lo, nxt in pairwise(bounds):
        if SURROGATES[0] <= lo <= SURROGATES[1]:
            continue  # not a character of any Go string
        sign = tuple(any(a <= lo <= b for a, b in s) for s in sets)
        members.setdefault(sign, []).append((lo, nxt - 1))
    # readable symbols first: the search tries symbols in order, so witnesses read well
    ranked = sorted((_representative(spans), sign) for sign, spans in members.items())
    ranked.sort(key=lambda pair: _rank(pair[0]))
    masks = {s: 0 for s in sets}
    for symbol, (_, sign) in enumerate(ranked):
        for s, inside in zip(sets, sign, strict=True):
            masks[s] |= inside << symbol
    for nfa in nfas:
        nfa.masks = [[(masks[s], t) for s, t in moves] for moves in nfa.chars]
    return [representative for representative, _ in ranked]


def _rank(ch: str) -> int:
    at = _PREFERRED.find(ch)
    return at if at >= 0 else len(_PREFERRED) + ord(ch)


def _representative(spans: list[tuple[int, int]]) -> str:
    for ch in _PREFERRED:
        if any(lo <= ord(ch) <= hi for lo, hi in spans):
            return ch
    for lo, hi in spans:
        for code in range(lo, min(hi, lo + 255) + 1):
            if chr(code).isprintable():
                return chr(code)
    return chr(spans[0][0])


class _Dfa:
    """The subset automaton of a search with ``nfa``, built as it is walked: a state is the
    set of NFA states live after the text read so far (a new attempt started at every
    position), or ``MATCHED`` once an attempt has matched (final: the search succeeds
    whatever follows)."""

    MATCHED = 0

    def __init__(self, nfa: _Nfa, representatives: list[str]) -> None:
        self.nfa = nfa
        self.representatives = representatives
        self.ids: dict[tuple[frozenset[int], bool], int] = {}
        self.sets: list[frozenset[int]] = [frozenset()]
        self.at_start = [False]
        self.moves: dict[int, list[int]] = {self.MATCHED: [self.MATCHED] * len(representatives)}
        self.accepting: dict[int, bool] = {self.MATCHED: True}
        self.live = nfa.live()
        self.initial = self._state(frozenset({nfa.start}), True)

    def _state(self, states: frozenset[int], at_start: bool) -> int:
        closed = self.nfa.closure(states, at_start, False)
        if self.nfa.accept in closed:
            return self.MATCHED
        if self.nfa.work > MAX_WORK:
            raise _Undecided(f"{self.nfa.side} pattern: over {MAX_WORK} steps of subset building")
        # only states that read or assert tell subsets apart: fewer and smaller subsets
        closed = frozenset(s for s in closed if self.nfa.chars[s] or self.nfa.asserts[s])
        key = (closed, at_start)
        if key not in self.ids:
            if len(self.sets) >= MAX_STATES:
                raise _Undecided(f"{self.nfa.side} pattern: over {MAX_STATES} subset states")
            self.ids[key] = len(self.sets)
            self.sets.append(closed)
            self.at_start.append(at_start)
        return self.ids[key]

    def step(self, state: int) -> list[int]:
        """The state after each symbol."""
        if state not in self.moves:
            targets: list[set[int]] = [set() for _ in self.representatives]
            for nfa_state in self.sets[state]:
                for mask, target in self.nfa.masks[nfa_state]:
                    self.nfa.work += 1
                    while mask:
                        low = mask & -mask
                        targets[low.bit_length() - 1].add(target)
                        mask ^= low
            made: dict[frozenset[int], int] = {}
            moves = []
            for reached in targets:
                key = frozenset(reached | {self.nfa.start})
                if key not in made:
                    made[key] = self._state(key, False)
                moves.append(made[key])
            self.moves[state] = moves
        return self.moves[state]

    def accepts(self, state: int) -> bool:
        """Whether the text read so far matches if it ends here."""
        if state not in self.accepting:
            closed = self.nfa.closure(self.sets[state], self.at_start[state], True)
            self.accepting[state] = self.nfa.accept in closed
        return self.accepting[state]

    def dead(self, state: int) -> bool:
        """Whether no text from here on can make a match (past the start only)."""
        if state == self.MATCHED or self.at_start[state]:
            return False
        return not any(self.live[s] for s in self.sets[state])
