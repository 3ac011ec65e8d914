"""What a ledger row is judged against and what it returns: :class:`Threshold`,
:class:`ClaimVerdict`, :class:`Measurement`."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

__all__ = ["THRESHOLD_KINDS", "ClaimVerdict", "Measurement", "Threshold", "verdict_text"]


class ClaimVerdict(str, enum.Enum):
    """The verdict of one ledger row on its published claim."""

    HOLDS = "holds"
    # Two-part claims where one part holds and the other does not (or cannot be decided), and
    # claims whose reasonable readings disagree.
    HOLDS_IN_PART = "holds in part"
    DOES_NOT_HOLD = "does not hold"
    # The interval over seeds contains the threshold, or there are too few seeds: more seeds would
    # decide it. Reports write it with its count, "undecided (8 seeds)" (``Measurement.seeds``).
    UNDECIDED = "undecided"
    # What this machine cannot run at all (ImageNet, WikiText-103): the nearest analogue is reported.
    NOT_MEASURABLE = "not measurable at this scale"
    # Only the runner sets ERROR (a row that raised, with ``keep_going``); a row never returns it.
    ERROR = "error"


THRESHOLD_KINDS = ("published", "course")


@dataclass(frozen=True)
class Threshold:
    """What a row is judged against, declared with the row (before anything runs).

    ``text`` says the test in words (e.g. "growth >= 3x: last tenth of training over the first
    tenth"); ``kind`` is ``"published"`` (the published figure itself) or ``"course"`` (nothing is
    published: the course's own, and ``why`` says why); ``value`` is the number the code compares
    with, where there is one.
    """

    text: str
    kind: str
    why: str = ""
    value: float | None = None

    def __post_init__(self):
        if self.kind not in THRESHOLD_KINDS:
            raise ValueError(f"Threshold kind={self.kind!r}: expected one of {THRESHOLD_KINDS}")
        if not self.text.strip():
            raise ValueError("Threshold text is empty: say what the row is judged against")
        if self.kind == "course" and not self.why.strip():
            raise ValueError(f"Threshold {self.text!r} is the course's own (kind='course'): say why in `why`")

    def describe(self) -> str:
        """One line for a report: the test, whose threshold it is, and (for the course's own) why."""
        whose = "published figure" if self.kind == "published" else "course threshold"
        return f"{self.text} ({whose}" + (f": {self.why})" if self.why else ")")


@dataclass
class Measurement:
    """What one row measured: a short human-readable figure, the verdict, raw numbers, and (for a
    verdict over repeated runs) how many it rests on: ``seeds`` of them, each a ``unit`` ("seed", or
    "task" for a median over tasks)."""

    measured: str
    verdict: ClaimVerdict
    details: dict[str, Any] = field(default_factory=dict)
    seeds: int | None = None
    unit: str = "seed"

    def __post_init__(self):
        if self.verdict is ClaimVerdict.UNDECIDED and self.seeds is None:
            raise ValueError("an undecided Measurement must say on how many seeds (seeds=n): more seeds decide it")


def verdict_text(verdict: ClaimVerdict, seeds: int | None, unit: str = "seed") -> str:
    """The verdict as a report writes it: ``"undecided (8 seeds)"`` for an undecided one, else its value."""
    if verdict is ClaimVerdict.UNDECIDED and seeds is not None:
        return f"undecided ({seeds} {unit}{'s' if seeds != 1 else ''})"
    return verdict.value
