"""The ledger's rows: :func:`claim` registers one, :func:`load_rows` finds every lesson's rows,
:class:`ClaimResult` is what one row gave when it ran.

A row whose published figure was measured at a scale this machine cannot run (a data set or hardware the
course does not run: :data:`UNRUN_SCALE_WORDS`) declares it with ``published_scale=`` and follows one rule:
the published figure's part is *not measurable at this scale*, and the course's analogue is judged beside it
on the course's own threshold (kind ``course``, saying why). :func:`unrun_scale_parts` builds those parts and
:func:`check_unrun_scale` checks a row's measurement against the rule (the runner calls it on every such row).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

from nodecourse.claims._spread import combine
from nodecourse.claims._verdict import ClaimVerdict, Measurement, Threshold, verdict_text

__all__ = [
    "PUBLISHED_PART",
    "REGISTRY",
    "UNRUN_SCALE_WORDS",
    "ClaimResult",
    "ClaimSpec",
    "check_unrun_scale",
    "claim",
    "load_rows",
    "unrun_scale_parts",
    "unrun_scale_words",
]

UNRUN_SCALE_WORDS = (
    "ImageNet",
    "WikiText",
    "CIFAR",
    "MNIST",
    "SVHN",
    "CelebA",
    "Penn Treebank",
    "COCO",
    "GPU",
    "TPU",
)
"""Data sets and hardware the course does not run: a row whose published text names one of them declares
``published_scale`` (case-insensitive match; the course's digits are sklearn's 8x8 set, not MNIST)."""

PUBLISHED_PART = "published figure"
"""The start of the name of the part that holds the published figure of a row at a scale not run here."""


def unrun_scale_words(text: str) -> list[str]:
    """The words of :data:`UNRUN_SCALE_WORDS` that ``text`` names (case-insensitive, each at the start of a
    word: "GPUs" and "CIFAR-10" count, the "tpu" inside "output" does not), in that order."""
    import re

    return [w for w in UNRUN_SCALE_WORDS if re.search(rf"\b{re.escape(w)}", text, flags=re.IGNORECASE)]


def unrun_scale_parts(scale: str, analogue: dict[str, ClaimVerdict]) -> dict[str, ClaimVerdict]:
    """The parts of a row whose published figure was measured at ``scale`` (e.g. ``"ImageNet"``): first
    ``"published figure (<scale>)"``, *not measurable at this scale*, then the analogue's parts, judged on the
    course's own threshold. The row's verdict is :func:`~nodecourse.claims.combine` of them: the published
    part never decides anything, so the row holds at most in part."""
    if not scale.strip():
        raise ValueError("unrun_scale_parts: scale is empty; name the data set or hardware of the published figure")
    if not analogue:
        raise ValueError("unrun_scale_parts: analogue is empty; judge the course's analogue beside the figure")
    return {f"{PUBLISHED_PART} ({scale})": ClaimVerdict.NOT_MEASURABLE, **analogue}


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
    published_scale: str = ""
    """The data set or hardware of the published figure where the course does not run it ("" otherwise)."""


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


def claim(
    *, id: str, claim: str, source: str, published: str, lesson: str, threshold: Threshold, published_scale: str = ""
):
    """Register ``measure(quick: bool) -> Measurement`` as the ledger row ``id``, judged against
    ``threshold`` (declared here, before the row ever runs).

    ``published_scale``: the data set or hardware of the published figure when this machine cannot run it
    (WikiText-103, ImageNet, a GPU's wall clock). Such a row's threshold is the course's own, for the
    analogue (kind ``course``, saying why), and its text says the published figure is not measurable here.
    """
    if not isinstance(threshold, Threshold):
        raise TypeError(f"claim {id!r}: threshold must be a Threshold, got {type(threshold).__name__}")
    if published_scale:
        if threshold.kind != "course":
            raise ValueError(
                f"claim {id!r}: published_scale={published_scale!r} needs the analogue's own threshold "
                f"(kind='course', saying why), got kind={threshold.kind!r}"
            )
        if "not measurable" not in threshold.text:
            raise ValueError(
                f"claim {id!r}: published_scale={published_scale!r}: the threshold's text must say the published "
                "figure is not measurable here (and what the analogue is judged on)"
            )

    def register(measure: Callable[[bool], Measurement]):
        if id in REGISTRY and not _same_definition(REGISTRY[id].measure, measure):
            old = REGISTRY[id].measure
            raise ValueError(
                f"claim id {id!r} is registered twice: by {_where(old)} and by {_where(measure)}; "
                "give one of the rows another id"
            )
        # A reload of the row's own module (importlib.reload, IPython's %autoreload) defines the
        # same function again: the new definition replaces the old one.
        REGISTRY[id] = ClaimSpec(id, claim, source, published, lesson, measure, threshold, published_scale)
        return measure

    return register


def _where(measure: Callable) -> str:
    return f"{getattr(measure, '__module__', '?')}.{getattr(measure, '__qualname__', '?')}"


def _same_definition(old: Callable, new: Callable) -> bool:
    """Whether ``new`` is ``old`` defined again (same module, same qualified name), as when the
    module that holds the row is reloaded; a row from another module or another function is not."""
    return _where(old) == _where(new) and "?" not in _where(new)


def check_unrun_scale(spec: ClaimSpec, m: Measurement) -> None:
    """Raise ``ValueError`` unless a row with ``published_scale`` measured by the rule: its
    ``details["parts"]`` (part -> verdict text) has the published figure's part *not measurable at this
    scale* (:func:`unrun_scale_parts`) and its verdict is those parts combined. Rows without
    ``published_scale`` pass."""
    if not spec.published_scale:
        return
    parts = m.details.get("parts")
    fix = "build the parts with nodecourse.claims.unrun_scale_parts and return them in details['parts']"
    if not isinstance(parts, dict):
        raise ValueError(f"claim {spec.id!r} (published at {spec.published_scale}) returned no details['parts']: {fix}")
    verdicts = {k: ClaimVerdict(v) for k, v in parts.items()}
    published = [k for k in verdicts if k.startswith(PUBLISHED_PART)]
    if not published or any(verdicts[k] is not ClaimVerdict.NOT_MEASURABLE for k in published):
        raise ValueError(
            f"claim {spec.id!r} (published at {spec.published_scale}) must give its published figure the verdict "
            f"'not measurable at this scale'; parts were {parts}: {fix}"
        )
    if m.verdict is not combine(verdicts):
        raise ValueError(
            f"claim {spec.id!r}: verdict {m.verdict.value!r} is not its parts combined ({combine(verdicts).value!r})"
        )


def load_rows() -> dict[str, ClaimSpec]:
    """Import every lesson module (in lesson order) so its rows register; return the registry."""
    import pkgutil

    package = importlib.import_module(_ROW_PACKAGE)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("lesson"):
            importlib.import_module(f"{_ROW_PACKAGE}.{info.name}")
    return REGISTRY
