"""The characters the gate's strings are drawn from.

Every character UTF-8 can carry: exactly the default alphabet of hypothesis's ``st.text()``
and ``st.from_regex()`` (``characters(codec="utf-8")``), so one seed draws the same strings,
but without hypothesis first encoding each of the 1.1 million code points to build the
codec's table: some 4-6 s of CPU in every run from a fresh working directory (it caches the
table under ``.hypothesis/`` there, and CI starts from a fresh clone).
"""

from __future__ import annotations

from hypothesis import strategies as st

CHARACTERS = st.characters(exclude_categories=("Cs",))  # Cs: surrogates, not UTF-8
