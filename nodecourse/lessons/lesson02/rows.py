"""Lesson 2's ledger rows: convergence orders and the tolerance/NFE dial."""

from __future__ import annotations

from dataclasses import asdict

from nodecourse.claims import ClaimVerdict, Measurement, Threshold, claim
from nodecourse.lessons.lesson02.config import ORDER_STEPS, ORDER_TOLERANCE
from nodecourse.lessons.lesson02.studies import convergence, nfe_sweep

__all__ = ["measure_orders", "measure_tolerance_nfe"]


@claim(
    id="convergence-order",
    claim="Each solver converges at its declared order (error ∝ h^p)",
    source="Hairer, Nørsett & Wanner, Solving ODEs I; Butcher tableaux",
    published="euler 1, midpoint 2, bosh3 3, rk4 4, dopri5 5; implicit_euler 1, trapezoid 2",
    lesson="02",
    threshold=Threshold(
        f"fitted slope of log error against log h within ±{ORDER_TOLERANCE} of the declared order, for every solver",
        kind="course",
        value=ORDER_TOLERANCE,
        why="the declared order is exact only as h -> 0; a slope fitted over finite steps carries "
        "higher-order terms (dopri5's local extrapolation gives about 5.2)",
    ),
)
def measure_orders(quick: bool) -> Measurement:
    methods = ("euler", "midpoint", "rk4") if quick else tuple(ORDER_STEPS)
    methods = methods + (("bosh3", "dopri5") if quick else ())
    results = [convergence(m) for m in methods]
    off = [r for r in results if abs(r.measured - r.declared) > ORDER_TOLERANCE]
    verdict = ClaimVerdict.HOLDS if not off else ClaimVerdict.DOES_NOT_HOLD
    measured = ", ".join(f"{r.method} {r.measured:.2f}" for r in results)
    details = {"results": [_as_lists(asdict(r)) for r in results], "tolerance": ORDER_TOLERANCE}
    return Measurement(measured, verdict, details)


def _as_lists(fields: dict) -> dict:
    """The ledger's JSON form of a result: its tuples as lists (as the rows have always written them)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}


@claim(
    id="tolerance-nfe",
    claim="Loosening rtol never costs more function evaluations (the precision/speed dial)",
    source="Chen et al. 2018 (Neural ODEs), sec. 3 & fig. 3",
    published="NFE falls as tolerance loosens; error rises",
    lesson="02",
    threshold=Threshold(
        "NFE never rises from one rtol to the next looser one, and the final error at the "
        "loosest rtol exceeds the tightest's",
        kind="published",
        why="the published statement is qualitative: monotone NFE, rising error",
    ),
)
def measure_tolerance_nfe(quick: bool) -> Measurement:
    rtols = [10.0**-k for k in (range(10, 1, -2) if quick else range(10, 1, -1))]
    rows = nfe_sweep(rtols)
    nfes = [r.nfe for r in rows]  # ordered from tightest to loosest rtol
    monotone = all(a >= b for a, b in zip(nfes, nfes[1:]))
    # Baseline: the error must move the other way, or the dial would not be trading anything.
    errors_rise = rows[-1].error > rows[0].error
    verdict = ClaimVerdict.HOLDS if monotone and errors_rise else ClaimVerdict.DOES_NOT_HOLD
    measured = (
        f"dopri5 on Van der Pol: NFE {nfes[0]} → {nfes[-1]} as rtol {rtols[0]:.0e} → {rtols[-1]:.0e} "
        f"(monotone: {'yes' if monotone else 'no'}); error {rows[0].error:.1e} → {rows[-1].error:.1e}"
    )
    return Measurement(measured, verdict, {"rows": [asdict(r) for r in rows]})
