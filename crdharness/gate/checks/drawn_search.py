"""A version pair's search over drawn objects: hypothesis draws bodies from A's schema (and
mutates the samples), each goes round, and the first failure a pair has not shown yet is
shrunk to a minimal object within the pair's ``shrink_seconds``."""

from __future__ import annotations

import time

from crdharness.gate.evidence import objects, sample_mutations
from crdharness.gate.results import RoundTripFailure
from crdharness.gate.run.context import GateContext

# Shrinking also ends when it has found no smaller failing object for this long: by then
# hypothesis mostly tries candidates that pass, each a round trip through the API server.
# Measured on backup-three-versions (a webhook dropping status.conditions): the smallest
# object came 5.8 s after the first failure and the remaining 14 s of the budget found none
# smaller; with this stop the same object is reported and the failing run takes 32 s, not 45.
SHRINK_STALL_SECONDS = 3.0


class ShrinkBudgetSpent(BaseException):
    """Raised through hypothesis (not an Exception, so not a failing example) when shrinking
    has taken ``shrink_seconds``: a CI gate that takes 18 minutes to say no gets turned off."""


def search(
    ctx: GateContext,
    crd: str,
    entry: dict,
    attempt,
    new,
    shrink_until: list[float],
    as_found,
) -> RoundTripFailure | None:
    """Run ``attempt`` on generated bodies until one fails in a way ``new`` accepts; the
    minimal such failure hypothesis shrank to, within the pair's ``shrink_seconds`` (one
    budget for all of a pair's searches, started at its first failure). A failure
    ``as_found`` accepts is returned unshrunk (shrunk for another pair already, or the
    previous release's debt): failing is fast when every pair fails the same way."""
    if not ctx.config.generate:
        return None
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as fixed_seed
    from hypothesis.errors import Flaky

    seen: list[RoundTripFailure] = []
    smaller_at: list[float] = []  # when each smaller failure than those before was found
    budget = ctx.config.shrink_seconds
    strategy = drawn(ctx, crd, entry)

    @fixed_seed(ctx.config.seed)
    @settings(
        max_examples=ctx.config.generate,
        database=None,
        deadline=None,
        report_multiple_bugs=False,
        # No explain phase: after shrinking, hypothesis would vary the minimal object up to
        # 500 times to say which parts of it matter, each a round trip the report never uses
        # (a failing pair of backup-webhook/gate-drops-annotations: 18 s -> 6 s, same finding).
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(strategy)
    def run(body):
        now = time.monotonic()
        if seen and (now > shrink_until[0] or now - smaller_at[-1] > SHRINK_STALL_SECONDS):
            raise ShrinkBudgetSpent  # keep the smallest failure seen so far
        failure = attempt(body)
        if failure is not None and new(failure):
            failure.body, failure.at = body, time.monotonic()
            if not shrink_until:
                shrink_until.append(failure.at + budget)
            if not seen or failure.size < min(f.size for f in seen):
                smaller_at.append(failure.at)
            seen.append(failure)
            if as_found(failure):
                raise ShrinkBudgetSpent  # returns it unshrunk
            raise failure

    try:
        run()
    except RoundTripFailure as failure:
        return failure.untraced()  # hypothesis re-raises the minimal example's failure last
    except (Flaky, ShrinkBudgetSpent):
        # Out of time, or a failure that did not repeat on replay: the smallest seen.
        return min(seen, key=lambda f: f.size) if seen else None
    finally:
        for raised in seen:  # raised through the search; kept (``same_write``)
            raised.untraced()
    return None


def drawn(ctx: GateContext, crd: str, entry: dict):
    """What a pair's objects are drawn from: the schema, and with samples, half of them
    the user's samples mutated."""
    drawn = objects.bodies(entry)
    samples = ctx.sample_bodies(crd, entry["name"])
    if samples:
        from hypothesis import strategies as st

        drawn = st.one_of(sample_mutations.mutations(entry, samples), drawn)
    return drawn
