"""What one version pair's round trips saw (``object_round_trip`` fills it, object by object;
``round_trips`` writes it to the pair's results once, at the end)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from crdharness.gate.results import NotConvertible


@dataclass
class PairRecord:
    """What one version pair's round trips saw, written to its results once, at the end:
    objects refused, created and compared, and the differences that are not findings."""

    counts: Counter[str] = field(default_factory=Counter)
    allowed: list[str] = field(default_factory=list)  # excused by an `allow` entry
    normalised: list[str] = field(default_factory=list)  # {}, [] or false read back absent
    respelt: list[str] = field(default_factory=list)  # re-spelt at A, the same at B
    own_annotations: list[str] = field(default_factory=list)  # the webhook's, left at A
    held: set[str] = field(default_factory=set)  # declared leaf paths objects held with data
    stopped: set[str] = field(default_factory=set)  # held only by objects stopped early
    # Of those, paths below a field B does not declare, lost whole: path -> why judged.
    lost_whole: dict[str, str] = field(default_factory=dict)
    # Fields B does not declare that a round trip lost whole, under strategy None (pruned
    # at B whatever they hold): field -> B. What is below them is judged with them, held or
    # not (``path_coverage.judge``).
    gone: dict[str, str] = field(default_factory=dict)
    # Paths stopped short of because a field above them was lost whole: path -> that field.
    parents_lost: dict[str, str] = field(default_factory=dict)
    pruned: list[str] = field(default_factory=list)  # the gate's own request's, not the webhook's
    # Held at B only in the webhook's annotations (``seen_at_b``): notes, and path -> note.
    unseen_at_b: list[str] = field(default_factory=list)
    hidden: dict[str, str] = field(default_factory=dict)
    # Writes as read refused at B for objects whose round trip is reported for data lost:
    # convertibility's failures too, reported there, not only as a line under round-trip.
    also: list[NotConvertible] = field(default_factory=list)
    # Each object that went as far as B, by its body as written at A: the refusal of it
    # on the way (read, created again, written back), or None (``same_write``).
    written: dict[str, NotConvertible | None] = field(default_factory=dict)

    def add(self, other: PairRecord) -> None:
        """What ``other`` (one object's round trip, made beside others) saw, added here."""
        self.counts.update(other.counts)
        self.allowed += [note for note in other.allowed if note not in self.allowed]
        self.normalised += [note for note in other.normalised if note not in self.normalised]
        self.respelt += [note for note in other.respelt if note not in self.respelt]
        self.note_own(other.own_annotations)
        self.held |= other.held
        self.stopped |= other.stopped
        self.lost_whole.update(other.lost_whole)
        self.gone.update(other.gone)
        self.parents_lost.update(other.parents_lost)
        self.note_pruned(other.pruned)
        named = set(other.hidden.values())
        self.note_hidden(other.hidden, [n for n in other.unseen_at_b if n not in named])
        self.also += other.also
        self.written.update(other.written)

    def note_pruned(self, notes: list[str]) -> None:
        self.pruned += [note for note in notes if note not in self.pruned]

    def note_hidden(
        self, paths: dict[str, str], undecided: tuple[str, ...] | list[str] = ()
    ) -> None:
        """Notes of ``seen_at_b``: one per path (its first, whatever the objects), and once
        each a note naming no path (``undecided``: the probe could not decide)."""
        self.unseen_at_b += [n for n in undecided if n not in self.unseen_at_b]
        for path, note in paths.items():
            if path not in self.hidden:
                self.hidden[path] = note
                self.unseen_at_b.append(note)

    def note_own(self, notes: list[str]) -> None:
        self.own_annotations += [n for n in notes if n not in self.own_annotations]
