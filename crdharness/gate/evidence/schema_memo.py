"""Values worked out from a schema alone, kept by the schema's content: the same schema gets
the same value without drawing it again.

Why: the smallest value a schema accepts (``targeted.minimal``, ``targeted.present``) is a
repeatable hypothesis search (derandomized), a few milliseconds to a second each, asked for
every leaf of every object built for a change, again for each version pair, and again for
the release before the candidate (whose schemas are mostly the same). On a provider's
generated CRDs these searches were the largest share of the gate's own CPU. A function of
the schema alone gives the same answer each time, so one search per distinct schema is
the same evidence.

Written here (not ``functools.lru_cache``): schemas are dicts, not hashable, and callers
may change the value they get, so each gets its own copy.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

Result = TypeVar("Result")

KEPT = 4096  # distinct schemas kept per function; the least recently asked go first


def by_schema(
    remembered: tuple[type[Exception], ...] = (),
) -> Callable[[Callable[[dict], Result]], Callable[[dict], Result]]:
    """``fn(schema)`` worked out once per distinct schema (by content); each caller gets a
    copy. An exception of ``remembered`` types is raised again for the same schema."""

    def decorate(fn: Callable[[dict], Result]) -> Callable[[dict], Result]:
        # schema digest -> (the value, or the remembered exception raised for it)
        kept: OrderedDict[str, tuple[Any, Exception | None]] = OrderedDict()
        lock = threading.Lock()

        @wraps(fn)
        def memoised(schema: dict) -> Result:
            key = _digest(schema)
            with lock:
                found = kept.get(key)
                if found is not None:
                    kept.move_to_end(key)
            if found is None:
                try:
                    found = (fn(schema), None)
                except remembered as exc:
                    found = (None, exc)  # never returned: raised again
                with lock:
                    kept[key] = found
                    while len(kept) > KEPT:
                        kept.popitem(last=False)
            value, failure = found
            if failure is not None:
                raise copy.copy(failure)
            return cast(Result, copy.deepcopy(value))

        memoised.forget = kept.clear  # type: ignore[attr-defined]
        return memoised

    return decorate


def _digest(schema: dict) -> str:
    text = json.dumps(schema, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()
