"""The claims ledger: small reproductions of the course's published figures.

Each row is a function registered with :func:`claim`. It runs a measurement
(smaller in quick mode), and returns a :class:`Measurement` whose verdict is
computed by code from what was measured, never written by hand.

``nodecourse claims [--quick] [--only ID] [--json]`` runs the rows and prints
one table; a lesson shows its own rows with ``run_claims(["annulus"])``.

Row modules live beside this file (one per lesson) and are listed in
``_ROW_MODULES``; importing them registers their rows.
"""
from __future__ import annotations

import enum
import importlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable


class Verdict(str, enum.Enum):
    HOLDS = "holds"
    DOES_NOT_HOLD = "does not hold"
    NOT_MEASURABLE = "not measurable at this scale"


@dataclass
class Measurement:
    """What one row measured: a short human-readable figure, the verdict, raw numbers."""

    measured: str
    verdict: Verdict
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ClaimSpec:
    id: str
    claim: str
    source: str
    published: str
    lesson: str
    measure: Callable[[bool], Measurement]


@dataclass
class ClaimResult:
    id: str
    claim: str
    source: str
    published: str
    measured: str
    verdict: Verdict
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "claim": self.claim,
            "source": self.source,
            "published": self.published,
            "measured": self.measured,
            "verdict": self.verdict.value,
            "seconds": round(self.seconds, 2),
            "details": self.details,
        }


REGISTRY: dict[str, ClaimSpec] = {}

# One module per lesson; each registers its rows on import.
_ROW_MODULES = (
    "nodecourse.claims.lesson01",
    "nodecourse.claims.lesson02",
    "nodecourse.claims.lesson03",
    "nodecourse.claims.lesson05",
)


def claim(*, id: str, claim: str, source: str, published: str, lesson: str):
    """Register ``measure(quick: bool) -> Measurement`` as the ledger row ``id``."""

    def register(measure: Callable[[bool], Measurement]):
        if id in REGISTRY:
            raise ValueError(f"claim id {id!r} is registered twice")
        REGISTRY[id] = ClaimSpec(id, claim, source, published, lesson, measure)
        return measure

    return register


def load_rows() -> dict[str, ClaimSpec]:
    """Import every row module that exists (lessons land one at a time) and return the registry."""
    for name in _ROW_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # a real missing dependency inside the module: surface it
                raise
    return REGISTRY


def run_claims(
    only: Iterable[str] | None = None, *, quick: bool = True, progress: bool = False
) -> list[ClaimResult]:
    """Run the selected rows (all when ``only`` is None) and return their results in ledger order."""
    registry = load_rows()
    ids = list(registry) if only is None else list(only)
    unknown = [i for i in ids if i not in registry]
    if unknown:
        raise ValueError(f"unknown claim id(s) {unknown}; valid ids: {sorted(registry)}")
    results = []
    iterator: Iterable[str] = ids
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(ids, desc="claims", unit="claim")
    for cid in iterator:
        spec = registry[cid]
        start = time.perf_counter()
        m = spec.measure(quick)
        if not isinstance(m.verdict, Verdict):
            raise TypeError(f"claim {cid!r} returned verdict {m.verdict!r}; expected a Verdict")
        results.append(
            ClaimResult(
                spec.id, spec.claim, spec.source, spec.published, m.measured, m.verdict,
                time.perf_counter() - start, m.details,
            )
        )
    return results


def format_table(results: list[ClaimResult]) -> str:
    """A plain-text table: id, claim, source, published, measured, verdict."""
    headers = ["id", "claim", "source", "published", "measured", "verdict"]
    rows = [[r.id, r.claim, r.source, r.published, r.measured, r.verdict.value] for r in results]
    widths = [min(48, max(len(h), *(len(row[i]) for row in rows))) if rows else len(h)
              for i, h in enumerate(headers)]

    def fmt(cells):
        out = []
        for cell, w in zip(cells, widths):
            cell = cell if len(cell) <= w else cell[: w - 1] + "…"
            out.append(cell.ljust(w))
        return " | ".join(out).rstrip()

    lines = [fmt(headers), "-+-".join("-" * w for w in widths)]
    lines += [fmt(row) for row in rows]
    return "\n".join(lines)


def show(ids: Iterable[str], *, quick: bool | None = None):
    """Run rows and display them in a notebook as a small table (pandas-free HTML)."""
    from nodecourse.config import quick_mode

    results = run_claims(ids, quick=quick_mode() if quick is None else quick)
    try:
        from IPython.display import HTML, display

        head = "".join(f"<th>{h}</th>" for h in ["claim", "source", "published", "measured", "verdict"])
        body = "".join(
            f"<tr><td>{r.claim}</td><td>{r.source}</td><td>{r.published}</td>"
            f"<td>{r.measured}</td><td><b>{r.verdict.value}</b></td></tr>"
            for r in results
        )
        display(HTML(f"<table><tr>{head}</tr>{body}</table>"))
    except ImportError:
        print(format_table(results))
    return results
