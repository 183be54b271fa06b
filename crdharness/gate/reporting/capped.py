"""Every line of report.md bounded: a line past ``LINE`` characters is cut, saying how much
was cut and how many more paths it named (never dropped without a word). An object grown to
megabytes, or a detail naming ten thousand list items, must not make a report no one can open;
report.json and objects/ keep everything."""

from __future__ import annotations

from crdharness.gate import diff

LINE = 2000  # characters of one line of report.md
OBJECT_LINES = 300  # lines of one object's YAML in report.md


def line(text: str, limit: int = LINE) -> str:
    if len(text) <= limit:
        return text
    rest = text[limit:]
    paths = len(diff.named_paths(rest))
    named = f", naming {paths} more paths" if paths else ""
    return f"{text[:limit]}… (cut: {len(rest)} more characters{named}; report.json has them)"


def lines(text: str, limit: int = LINE) -> str:
    """Each line of ``text`` as ``line`` bounds it."""
    return "\n".join(line(each, limit) for each in text.split("\n"))


def block(text: str, limit: int = OBJECT_LINES) -> str:
    """An object's YAML, at most ``limit`` lines of it, saying how many more objects/ has."""
    shown = text.split("\n")
    if len(shown) <= limit:
        return text
    more = len(shown) - limit
    return "\n".join([*shown[:limit], f"# … {more} more lines (objects/ has the whole object)"])
