"""Fixes for a rule over a list's items that reaches below an item's own fields
(``self.boxes.all(b, !has(b.label.colour) || size(b.label.colour) == 0)``): the field at the
end of that chain left out of every item holding it. Dropping the item's own field
(``label``) does not meet such a rule: ``has()`` of a field below an absent one is an error in
CEL, so the rule fails on every item without it.

Written here, like ``rule_fixes``: a guess read from the rule's text that the repair search
judges with the API server's own validator.
"""

from __future__ import annotations

import copy
import re

from crdharness.gate.evidence import body_paths, combinators
from crdharness.gate.evidence.rule_literals import field_name

# the variable a macro binds to each item: ``all(b, ...)``, ``exists(b, ...)``
MACRO = re.compile(r"\.(?:all|exists|exists_one|filter|map)\(\s*([A-Za-z_]\w*)\s*,")


def chains(rule: str) -> list[list[str]]:
    """The field names below an item a rule reaches through two or more fields
    (``b.label.colour``: ``['label', 'colour']``), in the rule's order."""
    found: list[list[str]] = []
    for variable in dict.fromkeys(MACRO.findall(rule)):
        reach = re.compile(rf"(?<![\w.]){re.escape(variable)}((?:\.[A-Za-z_]\w*){{2,}})")
        for match in reach.finditer(rule):
            names = [field_name(n) for n in match.group(1).strip(".").split(".")]
            if names not in found:
                found.append(names)
    return found


def dropped_in_every_item(
    body: dict, at: list[str], node: dict, value: list, rule: str
) -> list[dict | None]:
    """``body`` with the last field of each of the rule's ``chains`` left out of every item
    of the list at ``at`` (``node`` its schema) that holds it, where its parent does not
    require it."""
    found: list[dict | None] = []
    for names in chains(rule):
        parent = combinators.alternatives(node.get("items") or {})[0]
        for name in names[:-1]:
            child = (parent.get("properties") or {}).get(name)
            parent = combinators.alternatives(child)[0] if isinstance(child, dict) else {}
        last = names[-1]
        if last not in (parent.get("properties") or {}) or last in (parent.get("required") or []):
            continue
        items = copy.deepcopy(value)
        changed = False
        for item in items:
            holder = item
            for name in names[:-1]:
                holder = holder.get(name) if isinstance(holder, dict) else None
            if isinstance(holder, dict) and last in holder:
                del holder[last]
                changed = True
        if changed:
            found.append(body_paths.set(body, at, items))
    return found
