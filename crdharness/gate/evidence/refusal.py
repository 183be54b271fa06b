"""Who refused an object, read from the API server's message: a keyword of the schema
(``minProperties``, ``pattern``, ...), a CEL rule (``x-kubernetes-validations``), an
admission webhook or policy, or the conversion webhook (which fails on a value the schema
allows: ``time: invalid duration "gate-value"``). A path no object could hold is named with
it, the count of objects tried and the server's own message, so the user sees what to fix
or what sample to give.
"""

from __future__ import annotations

import re

MESSAGE = 300  # characters of the server's message kept in a reason

# kube-apiserver's wording (apiextensions' schema validation, field errors) -> the keyword
KEYWORDS = (
    (re.compile(r"should have at least \d+ properties"), "minProperties"),
    (re.compile(r"should have at most \d+ properties"), "maxProperties"),
    (re.compile(r"Unsupported value"), "enum"),
    (re.compile(r"should match '"), "pattern"),
    (re.compile(r"should be at least \d+ chars long"), "minLength"),
    (re.compile(r"should be at most \d+ chars long|Too long:"), "maxLength"),
    (re.compile(r"should be greater than"), "minimum"),
    (re.compile(r"should be less than"), "maximum"),
    (re.compile(r"should be a multiple of"), "multipleOf"),
    (re.compile(r"should have at least \d+ items"), "minItems"),
    (re.compile(r"must have at most \d+ items|Too many:"), "maxItems"),
    (re.compile(r"Duplicate value"), "list type (x-kubernetes-list-type)"),
    (re.compile(r"Required value"), "required"),
    (
        re.compile(r"must be of type (?:date|date-time|byte|uri|email|hostname|ipv|uuid|cidr)"),
        "format",
    ),
    (re.compile(r"must be of type"), "type"),
    (re.compile(r"\((oneOf|anyOf|allOf|not)\)"), "oneOf/anyOf/allOf/not"),
)


def rule_messages(schema) -> set[str]:
    """The ``message`` of every CEL rule in ``schema``, and each rule's text."""
    found: set[str] = set()
    if isinstance(schema, dict):
        for rule in schema.get("x-kubernetes-validations") or []:
            if isinstance(rule, dict):
                # a message too short to tell from other text is no evidence of a rule
                found |= {
                    str(rule[k]) for k in ("message", "rule") if len(str(rule.get(k) or "")) > 3
                }
        for value in schema.values():
            found |= rule_messages(value)
    elif isinstance(schema, list):
        for value in schema:
            found |= rule_messages(value)
    return found


WEBHOOK = "the conversion webhook failed on"


def who(schema: dict, message: str) -> str:
    """Who refused, by ``message`` (the server's answer to an object of ``schema``)."""
    if "conversion webhook" in message:
        return WEBHOOK
    if "admission webhook" in message:
        return "an admission webhook refused"
    if "ValidatingAdmissionPolicy" in message:
        return "a ValidatingAdmissionPolicy refused"
    parts: list[str] = []
    if "failed rule:" in message or any(m in message for m in rule_messages(schema)):
        parts.append("a CEL rule (x-kubernetes-validations)")
    keywords = [k for pattern, k in KEYWORDS if pattern.search(message)]
    if keywords:
        named = ", ".join(dict.fromkeys(keywords))
        parts.append(f"the schema's {named}")
    if not parts:
        return "the API server refused"
    return " and ".join(parts) + " refused"


def _shortened(message: str) -> str:
    """The message's start and its end (where a wrapped error says its cause: a storage
    error ends in the webhook's own words)."""
    if len(message) <= MESSAGE:
        return message
    return f"{message[: MESSAGE // 3]} ... {message[-(MESSAGE * 2 // 3) :]}"


CONVERSION = "a conversion failed on"  # the last object was valid at A, not convertible


def reason(schema: dict, message: str, tried: int, unconverted: bool = False) -> str:
    """Why a path is not held: who refused the objects tried for it alone (after the
    coverage objects holding it with others), how many there were, and the server's last
    message. ``unconverted``: the last object was valid at A and failed its conversion
    (read at B, written back there, read back): the message is B's, not A's schema's."""
    refused = who(schema, message)
    if unconverted and refused != WEBHOOK:
        refused = CONVERSION
    if tried == 1:
        return f"{refused} the only object tried with it alone: {_shortened(message)}"
    return f"{refused} all {tried} objects tried with it alone; the last: {_shortened(message)}"


# The API server's prefix naming the one object refused: `Kind.group "name" is invalid: `.
_OBJECT_PREFIX = re.compile(r'^[\w.-]+ "[^"]*" is invalid: ')


def without_object(message: str) -> str:
    """A refusal's message without the prefix naming the object refused."""
    return _OBJECT_PREFIX.sub("", message.strip())


def cause(message: str) -> str:
    """A refusal's message without the object it names: the same rule refusing many
    objects is one cause."""
    return _shortened(without_object(message))


def summary(causes: dict[str, int], refused: int, tried: int, shown: int = 3) -> str:
    """How many of the ``tried`` objects were refused, and the causes that refused most
    (``causes``: cause -> count)."""
    share = f"{refused} of {tried} objects refused ({100 * refused // max(tried, 1)} %)"
    return f"{share}, by: {ranked(causes, shown)}" if causes else share


def ranked(causes: dict[str, int], shown: int = 3) -> str:
    """The causes that refused most objects, most first (``causes``: cause -> count)."""
    order = sorted(causes.items(), key=lambda item: (-item[1], item[0]))
    named = "; ".join(f"{n}x {text}" for text, n in order[:shown])
    return named + (f"; and {len(order) - shown} other causes" if len(order) > shown else "")
