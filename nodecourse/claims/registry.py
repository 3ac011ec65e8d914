"""The ledger's rows: :func:`claim` registers one, :func:`load_rows` finds every lesson's rows,
:class:`ClaimResult` is what one row gave when it ran."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

from nodecourse.claims.verdict import ClaimVerdict, Measurement, Threshold, verdict_text


@dataclass(frozen=True)
class ClaimSpec:
    """One registered row: the claim, where it was published, and the function that measures it."""

    id: str
    claim: str
    source: str
    published: str
    lesson: str
    measure: Callable[[bool], Measurement]
    threshold: Threshold


@dataclass
class ClaimResult:
    """One row after it ran: the claim, what was measured, the verdict and the time it took."""

    id: str
    claim: str
    source: str
    published: str
    measured: str
    verdict: ClaimVerdict
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)
    threshold: Threshold | None = None
    seeds: int | None = None
    unit: str = "seed"

    @property
    def verdict_text(self) -> str:
        """The verdict as the reports write it (``"undecided (8 seeds)"``)."""
        return verdict_text(self.verdict, self.seeds, self.unit)

    def as_dict(self) -> dict[str, Any]:
        """The result as plain data (the ``--json`` report)."""
        return {
            "id": self.id,
            "claim": self.claim,
            "source": self.source,
            "published": self.published,
            "measured": self.measured,
            "threshold": None if self.threshold is None else self.threshold.text,
            "threshold_kind": None if self.threshold is None else self.threshold.kind,
            "threshold_why": None if self.threshold is None else self.threshold.why,
            "verdict": self.verdict.value,
            "seeds": self.seeds,
            "unit": self.unit,
            "seconds": round(self.seconds, 2),
            "details": self.details,
        }


REGISTRY: dict[str, ClaimSpec] = {}

# Rows live in the lesson packages (nodecourse/lessons/lessonNN/rows.py), found by
# name at run time: the ledger machinery never imports lesson code statically,
# and a new lesson's rows join the ledger without an edit here.
_ROW_PACKAGE = "nodecourse.lessons"


def claim(*, id: str, claim: str, source: str, published: str, lesson: str, threshold: Threshold):
    """Register ``measure(quick: bool) -> Measurement`` as the ledger row ``id``, judged against
    ``threshold`` (declared here, before the row ever runs)."""
    if not isinstance(threshold, Threshold):
        raise TypeError(f"claim {id!r}: threshold must be a Threshold, got {type(threshold).__name__}")

    def register(measure: Callable[[bool], Measurement]):
        if id in REGISTRY:
            raise ValueError(f"claim id {id!r} is registered twice")
        REGISTRY[id] = ClaimSpec(id, claim, source, published, lesson, measure, threshold)
        return measure

    return register


def load_rows() -> dict[str, ClaimSpec]:
    """Import every lesson module (in lesson order) so its rows register; return the registry."""
    import pkgutil

    package = importlib.import_module(_ROW_PACKAGE)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("lesson"):
            importlib.import_module(f"{_ROW_PACKAGE}.{info.name}")
    return REGISTRY
