"""Go's regular expressions (RE2 syntax: what kube-apiserver applies a schema's ``pattern``
with) spelt so Python's ``re`` reads them the same, so strings can be drawn for them.

RE2 and Python differ where CRDs use them:

- an inline flag group ``(?i)`` may stand anywhere in RE2 and applies to the rest of its
  group (prometheus-operator writes ``^((?i)january|february|...)$``); Python 3.11 refuses
  flags not at the start. It becomes a scoped ``(?i:...)`` up to the end of the enclosing
  group, closed and reopened around each ``|`` (in RE2 the flag carries on into the next
  alternative; a scope must not swallow the alternation);
- ``U`` (ungreedy) has no Python spelling; it changes which match is found, never whether
  one is, so it is dropped;
- ``\\d``, ``\\w``, ``\\s``, ``\\b`` are ASCII in RE2 and Unicode in Python: a Python string
  drawn for ``\\d`` could hold a digit Go refuses, so such a pattern is read with ``(?a)``;
- RE2's ``\\z`` (the end of the text) is Python's ``\\Z`` (``$`` is left as it is: a string
  drawn to match the whole pattern never ends in a newline);
- ``\\Q...\\E`` quotes a literal, ``\\x{10FFFF}`` names a code point, ``[[:alpha:]]`` names an
  ASCII class, ``(?<name>...)`` a group: Python spells them otherwise.

What has no Python equivalent here (Unicode classes ``\\pL``, negated ASCII classes
``[[:^alpha:]]``) raises ``re.error``: the caller says no string was found and why.
"""

from __future__ import annotations

import re

ASCII_CLASSES = {  # RE2's [[:name:]], as the ranges inside a Python character class
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
PERL = re.compile(r"(?<!\\)(?:\\\\)*\\[dDwWsSbB]")  # a Perl class, not an escaped backslash
FLAG_GROUP = re.compile(r"\(\?([imsU]*)(?:-([imsU]*))?([:)])")


def to_python(pattern: str) -> str:
    """``pattern`` (RE2) as a Python regular expression matching the same strings; the
    pattern itself when nothing needs translating. Raises ``re.error`` for what Python
    cannot say."""
    out = _Translation(pattern).run()
    if PERL.search(pattern):
        out = "(?a)" + out
    return out


def compile(pattern: str) -> re.Pattern[str]:
    """``pattern`` (RE2) compiled as Python reads it (``to_python``)."""
    return re.compile(to_python(pattern))


class _Translation:
    """One pass over the pattern; ``levels`` holds, per open group, the flag scopes opened
    inside it by a mid-group ``(?flags)`` (each closed where the group, or an alternative
    of it, ends)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.out: list[str] = []
        self.levels: list[list[str]] = [[]]
        self.i = 0

    def run(self) -> str:
        p = self.pattern
        while self.i < len(p):
            c = p[self.i]
            if c == "\\":
                self._escape()
            elif c == "[":
                self._class()
            elif c == "(":
                self._open()
            elif c == ")":
                self._close_scopes()
                if len(self.levels) == 1:
                    raise re.error("unbalanced parenthesis", p, self.i)
                self.levels.pop()
                self.out.append(")")
                self.i += 1
            elif c == "|":
                scopes = self.levels[-1]
                self._close_scopes()
                self.out.append("|")
                self.out += [f"(?{flags}:" for flags in scopes]
                self.levels[-1] = scopes
                self.i += 1
            else:
                self.out.append(c)
                self.i += 1
        if len(self.levels) > 1:
            raise re.error("missing ), unterminated subpattern", p, self.i)
        self._close_scopes()
        return "".join(self.out)

    def _close_scopes(self) -> None:
        self.out.append(")" * len(self.levels[-1]))
        self.levels[-1] = []

    def _open(self) -> None:
        p, i = self.pattern, self.i
        flags = FLAG_GROUP.match(p, i)
        if flags:
            spelt = flags.group(1).replace("U", "")
            off = (flags.group(2) or "").replace("U", "")
            spelt += f"-{off}" if off else ""
            self.i = flags.end()
            if flags.group(3) == ":":  # (?i:...) a scoped group already
                self.out.append(f"(?{spelt}:")
                self.levels.append([])
            elif spelt:  # (?i) mid-group: a scope to the group's end
                self.out.append(f"(?{spelt}:")
                self.levels[-1].append(spelt)
            return
        named = re.match(r"\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>", p[i:])
        if named:
            self.out.append(f"(?P<{named.group(1)}>")
            self.i += named.end()
        else:
            self.out.append("(")
            self.i += 1
        self.levels.append([])

    def _escape(self) -> None:
        p, i = self.pattern, self.i
        if i + 1 >= len(p):
            raise re.error("trailing backslash", p, i)
        nxt = p[i + 1]
        if nxt == "z":
            self.out.append("\\Z")
            self.i += 2
        elif nxt == "Q":
            end = p.find("\\E", i + 2)
            end = len(p) if end < 0 else end
            self.out.append(re.escape(p[i + 2 : end]))
            self.i = end + 2
        elif nxt in "pP":
            raise re.error("Unicode classes (\\p) have no Python spelling", p, i)
        elif nxt == "x" and p.startswith("{", i + 2):
            end = p.index("}", i)
            self.out.append(f"\\U{int(p[i + 3 : end], 16):08x}")
            self.i = end + 1
        else:
            self.out.append(p[i : i + 2])
            self.i += 2

    def _class(self) -> None:
        """A character class, copied up to its closing ``]`` (which may come first, as a
        literal), its ASCII classes spelt out and a literal ``[`` escaped."""
        p = self.pattern
        i = self.i + 1
        self.out.append("[")
        if p.startswith("^", i):
            self.out.append("^")
            i += 1
        first = True
        while i < len(p) and (p[i] != "]" or first):
            first = False
            if p.startswith("[:", i):
                end = p.find(":]", i + 2)
                name = p[i + 2 : end] if end > 0 else ""
                if name not in ASCII_CLASSES:
                    raise re.error(f"no Python spelling for [:{name}:]", p, i)
                self.out.append(ASCII_CLASSES[name])
                i = end + 2
            elif p[i] == "\\":
                if p.startswith(("\\p", "\\P"), i):
                    raise re.error("Unicode classes (\\p) have no Python spelling", p, i)
                self.out.append(p[i : i + 2])
                i += 2
            elif p[i] in "[]":
                self.out.append("\\" + p[i])
                i += 1
            else:
                self.out.append(p[i])
                i += 1
        if i >= len(p):
            raise re.error("unterminated character set", p, self.i)
        self.out.append("]")
        self.i = i + 1
