"""Generated objects made acceptable before they are sent: a bounded search, judged at each
step by the local validator (the API server's own code), for an object near the drawn one
that every rule holds for.

Each round takes the first errors the validator gave and proposes fixes where they point:

- a CEL rule's node: what the rule's text names (``rule_fixes``: fields dropped, drawn or
  set to its literals; lists cut or their items' fields set; strings given what the rule
  asks);
- a schema error: the field drawn again, added where required, left out where optional; a
  ``oneOf`` node kept to one branch's fields; a set's duplicates removed;
- the failing node itself left out where its parent does not require it.

All proposals of a round are judged in one batch and the best kept (schema errors, which
stop CEL rules from running, count most); the search ends when nothing is left, when no
proposal does better, or after ``ROUNDS``. Written here: no library searches JSON objects
against CEL rules; the checks are the API server's, the search is ours.
"""

from __future__ import annotations

import re

from crdharness.gate import json_values
from crdharness.gate.evidence import body_paths, combinators, coverage, objects, rule_fixes
from crdharness.gate.evidence.local_validation import CEL, FieldError, LocalValidator

ROUNDS = 16  # each keeps the best proposal; an object with many failing items needs many
PROPOSALS = 40  # judged per round at most
ERRORS_PER_ROUND = 3
BLOCKING = 100  # a schema error hides every CEL rule: fixing it first is worth more
LOSS = 1.5  # a drawn leaf path a proposal no longer holds, against one error it fixes
# A field a rule asks for often brings rules of its own (``has(self.ref)`` beside
# ``self.ref.kind == 'Gateway'``): a proposal that meets the rule in hand for at most this many
# other rules' errors is taken when none does better, a few times an object.
SIDEWAYS_ERRORS = 2
SIDEWAYS_STEPS = 4
PASSES = 2  # searches, each followed by pruning
PRUNES = 3  # rounds of leaving out every failing node at once, after the search

COMBINATOR_PATH = re.compile(r'"([^"]+)" must validate')


def score(errors: list[FieldError]) -> int:
    return sum(1 if e.source == CEL else BLOCKING for e in errors)


def repaired(
    validator: LocalValidator,
    crd: dict,
    entry: dict,
    body: dict,
    name: str = "gate-repair",
    namespace: str | None = "gate",
) -> tuple[dict | None, list[FieldError]]:
    """``body`` (an object's fields, as ``objects`` draws them), or one near it the local
    validator accepts at ``entry``'s version, as object ``name`` (a schema may constrain
    names); None and the last errors when none was found."""
    version = entry["name"]
    root = (entry.get("schema") or {}).get("openAPIV3Schema") or {}
    # a status is written after the create, through its subresource: judged too
    keep_status = "status" in body and objects.has_status(entry)

    def judged(bodies: list[dict]) -> list[list[FieldError]]:
        sent = [objects.manifest(crd, version, name, namespace, b) for b in bodies]
        return validator.validate(crd, version, sent, keep_status)

    schema = objects.body_schema(entry)
    current = body
    [errors] = judged([current])
    seen = {_key(current)}  # every object judged: a sideways step never goes back
    # The search, then what it left pruned; searched again where pruning let rules run
    # that a schema error had hidden.
    for _ in range(PASSES):
        sideways = SIDEWAYS_STEPS
        for _ in range(ROUNDS):
            if not errors:
                return current, []
            held = coverage.held(schema, objects.intent(current))
            proposed: dict[str, dict] = {}
            for error in errors[:ERRORS_PER_ROUND]:
                for proposal in _proposals(root, current, error):
                    if _key(proposal) not in seen:
                        proposed.setdefault(_key(proposal), proposal)
            if not proposed:
                break
            seen.update(list(proposed)[:PROPOSALS])
            proposals = list(proposed.values())[:PROPOSALS]
            results = judged(proposals)
            better = [i for i in range(len(proposals)) if score(results[i]) < score(errors)]
            if not better and sideways:
                sideways -= 1
                targeted = {(e.field, e.rule, e.message) for e in errors[:ERRORS_PER_ROUND]}
                better = [
                    i
                    for i in range(len(proposals))
                    if score(results[i]) <= score(errors) + SIDEWAYS_ERRORS
                    and targeted - {(e.field, e.rule, e.message) for e in results[i]}
                ]
            if not better:
                break
            # Of those with fewer errors, the one that keeps most of what was drawn: a list cut
            # to nothing meets every rule over it but holds none of its paths any more.
            best = min(
                better,
                key=lambda i: (
                    score(results[i])
                    + LOSS * len(held - coverage.held(schema, objects.intent(proposals[i])))
                ),
            )
            current, errors = proposals[best], results[best]
        # What the search left (an object holding every declared path breaks a hundred rules):
        # every failing node left out at once, or its nearest ancestor its parent does not
        # require, a few times (a schema error hid the rules below it).
        pruned_any = False
        for _ in range(PRUNES):
            if not errors:
                break
            pruned = current
            for error in errors:
                pruned = _pruned(root, pruned, error) or pruned
            [left] = judged([pruned])
            if pruned is current or score(left) >= score(errors):
                break
            current, errors, pruned_any = pruned, left, True
        if not errors or not pruned_any:
            break
    return (current, []) if not errors else (None, errors)


def _pruned(root: dict, body: dict, error: FieldError) -> dict | None:
    """``body`` without the node ``error`` names, or its nearest optional ancestor."""
    where = error.field or next(iter(COMBINATOR_PATH.findall(error.message)), "")
    segments = body_paths.segments(where)
    if error.source == CEL:
        segments = segments[: len(body_paths.segments(error.rule_at))]
    while len(segments) > 1:
        dropped = _optional_dropped(root, body, segments)
        if dropped is not None:
            return dropped
        segments = segments[:-1]
    return None


def _key(body: dict) -> str:
    return json_values.content_text(body).decode()


# -- proposals ---------------------------------------------------------------------------


def _proposals(root: dict, body: dict, error: FieldError) -> list[dict]:
    if error.source == CEL:
        segments = body_paths.segments(error.field)[: len(body_paths.segments(error.rule_at))]
        found = rule_fixes.fixes(root, body, segments, error.rule)
    else:
        where = error.field or next(iter(COMBINATOR_PATH.findall(error.message)), "")
        segments = body_paths.segments(where)
        found = _schema_fixes(root, body, segments, error)
    found.append(_optional_dropped(root, body, segments))
    return [b for b in found if isinstance(b, dict)]


def _optional_dropped(root: dict, body: dict, segments: list[str]) -> dict | None:
    """``body`` without the value at ``segments``, where its parent does not require it."""
    chain = body_paths.resolve(body, root, segments)
    if not chain:
        return None
    parent_node = chain[-2][2] if len(chain) > 1 else root
    container, key, _ = chain[-1]
    if isinstance(container, dict) and key in (parent_node.get("required") or []):
        return None
    if isinstance(container, list) and len(container) <= parent_node.get("minItems", 0):
        return None
    if isinstance(container, dict) and len(container) <= parent_node.get("minProperties", 0):
        return None
    return body_paths.drop(body, segments)


def _schema_fixes(root: dict, body: dict, at: list[str], error: FieldError) -> list[dict | None]:
    found: list[dict | None] = []
    if error.type == "FieldValueRequired" and at:
        parent_node, _ = rule_fixes.node_and_value(root, body, at[:-1])
        child = ((parent_node or {}).get("properties") or {}).get(at[-1])
        if child is not None:
            found += [body_paths.set(body, at, v) for v in rule_fixes.filler(child)[:2]]
        return found
    node, value = rule_fixes.node_and_value(root, body, at)
    if node is None:
        return found
    if error.type == "FieldValueDuplicate" and isinstance(value, list):
        unique: list = []
        for item in value:
            if item not in unique:
                unique.append(item)
        found.append(body_paths.set(body, at, unique))
    if isinstance(value, dict):  # a oneOf / anyOf / not at an object: each branch's fields
        for alternative in combinators.alternatives(node):
            allowed = set(alternative.get("properties") or {})
            kept = {k: v for k, v in value.items() if k in allowed}
            for key in alternative.get("required") or []:
                if key not in kept and key in allowed:
                    kept[key] = next(iter(rule_fixes.filler(alternative["properties"][key])), None)
            found.append(body_paths.set(body, at, kept))
    found += [body_paths.set(body, at, v) for v in rule_fixes.filler(node)[:3] if v != value]
    return found
