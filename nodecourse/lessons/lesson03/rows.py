"""Ledger rows of lesson 3 (what a flow cannot represent): thin adapters over the studies and findings.

- ``annulus`` (Dupont et al. 2019): across seeds, a plain 2-D neural ODE with a linear readout leaves a
  misclassified arc on the circle |x| = 1.25 (beside its sample accuracy), the augmented ODE and a ResNet of
  matched size have a positive margin on the whole circle, and the plain ODE's forward NFE is higher than the
  augmented one's (by the median of the per-seed ratio; strictly higher: a tie at ratio 1 is not higher).
- ``augmentation-2p`` (Zhang et al. 2020, first half): h(x) = -x on [-1, 1].
- ``flow-readout-noninvertible`` (Zhang et al. 2020, second half): h(x) = |x|.

Every flow is judged as a flow: the trained field is solved again with dopri5 at a tight tolerance (in
float64), and the as-trained number is shown beside it.
"""

from __future__ import annotations

from dataclasses import asdict

from nodecourse.claims import Measurement, claim, parts_text
from nodecourse.lessons.lesson03.config import (
    ANNULUS_THRESHOLD,
    FLOW_READOUT_THRESHOLD,
    FULL_ABS,
    FULL_ANNULUS,
    FULL_NEGATION,
    NEGATION_THRESHOLD,
    QUICK_ABS,
    QUICK_ANNULUS,
    QUICK_NEGATION,
)
from nodecourse.lessons.lesson03.findings import (
    AbsFindings,
    AnnulusFindings,
    NegationFindings,
    _interval_text,
    _range,
)
from nodecourse.lessons.lesson03.studies import abs_study, annulus_study, negation_study

__all__ = ["measure_annulus", "measure_negation", "measure_flow_readout"]


def _intervals(iv: dict) -> dict:
    return {k: None if i is None else asdict(i) for k, i in iv.items()}


@claim(
    id="annulus",
    claim="A plain 2-D neural ODE cannot separate disk from ring: its boundary leaves a wrong arc on |x|=1.25 "
    "(whatever its sample accuracy); augmented ODE and ResNet have a positive margin there; NODE needs "
    "more NFE than ANODE (a tie is not more)",
    source="Dupont et al. 2019 (Augmented Neural ODEs), sec. 3-4",
    published="NODE cannot represent g (proof); ANODE fits it; NODE flows complex, higher NFE; ANODE simpler and "
    "faster (dopri5, tol 1e-3, MLP 32-32, SmoothL1)",
    lesson="03",
    threshold=ANNULUS_THRESHOLD,
)
def measure_annulus(quick: bool) -> Measurement:
    config = QUICK_ANNULUS if quick else FULL_ANNULUS
    f = AnnulusFindings.from_runs(annulus_study(config))
    j = f.judged
    details = {
        "config": asdict(config),
        "per_seed": {k: {str(s): x for s, x in d.items()} for k, d in f.values.items()},
        "intervals": _intervals(j.intervals),
        "subparts": {k: s.value for k, s in j.subparts.items()},
        "reasons": j.reasons,
        "parts": {k: s.value for k, s in j.parts.items()},
    }
    return Measurement(f.measured(), f.verdict, details, seeds=len(f.seeds))


@claim(
    id="augmentation-2p",
    claim="h(x)=-x on [-1,1]: a 1-D flow cannot go below the best order-preserving fit (MSE about 1/3); "
    "a flow on R^2 with a projection readout fits",
    source="Zhang et al. 2020 (Approximation capabilities of neural ODEs), homeomorphisms of R^p on R^2p; "
    "Dupont et al. 2019",
    published="any homeomorphism of R^p is approximated by a neural ODE on R^2p (a theorem, no figure)",
    lesson="03",
    threshold=NEGATION_THRESHOLD,
)
def measure_negation(quick: bool) -> Measurement:
    config = QUICK_NEGATION if quick else FULL_NEGATION
    f = NegationFindings.from_study(negation_study(config), config.n_points)
    r, t, j = f.mse_resolved, f.mse, f.judged
    measured = (
        f"{len(f.seeds)} seeds, re-solved MSE: 1-D flow {_range(r['1-D flow'], '.5f')} (floor "
        f"{f.floor:.5f}); flow on R^2 {_interval_text(j.intervals['R^2 flow fits'], '.2g')} (as trained "
        f"{_range(t['R^2 flow + projection'], '.2g')}); beside them, a 1-D flow + linear layer "
        f"{_range(r['1-D flow + linear'], '.2g')}. " + parts_text(j.parts)
    )
    details = {
        "config": asdict(config),
        "floor": f.floor,
        "mse_trained": t,
        "mse_resolved": r,
        "resolve_error": f.resolve_error,
        "reasons": j.reasons,
        "parts": {k: v.value for k, v in j.parts.items()},
        "intervals": _intervals(j.intervals),
    }
    return Measurement(measured, f.verdict, details, seeds=len(f.seeds))


@claim(
    id="flow-readout-noninvertible",
    claim="h(x)=|x| on [-1,1]: a flow on R^2 + linear readout approximates it (MSE < 1e-4); a 1-D flow + linear "
    "readout cannot beat the best monotone fit; trained with fixed RK4 steps, the same 1-D model can "
    "(its one-step map is invertible only while h*Lip(f) is small)",
    source="Zhang et al. 2020 (Approximation capabilities of neural ODEs), flow + one linear layer",
    published="a neural ODE capped with a single linear layer is a universal approximator of non-invertible "
    "continuous functions (a theorem, no figure)",
    lesson="03",
    threshold=FLOW_READOUT_THRESHOLD,
)
def measure_flow_readout(quick: bool) -> Measurement:
    config = QUICK_ABS if quick else FULL_ABS
    f = AbsFindings.from_study(abs_study(config), config.step_size)
    v, j = f.values, f.judged
    n = len(f.seeds)
    k, (lo, hi) = j.below_bound, j.rate_interval
    hl = [v["1-D h*Lip(f)"][i] for i in f.folded]
    measured = (
        f"{n} seeds, MSE re-solved: flow on R^2 + linear {_interval_text(j.intervals['R^2 + linear'], '.2g')}; "
        f"1-D flow + linear {_range(v['1-D + linear re-solved'], '.3f')} (monotone bound {f.bound:.4f}). "
        f"As trained with RK4 step {config.step_size:g}, the 1-D model went below the bound on {k}/{n} seeds "
        f"(rate 95 % interval {lo:.2f}-{hi:.2f}; best {min(v['1-D + linear as trained']):.2g}"
        + (
            f"; h*Lip(f) {_range(hl, '.2f')} vs {f.rk4_invertible_hlip:.2f} that guarantees an invertible step"
            if hl
            else ""
        )
        + "). "
        + parts_text(j.parts)
    )
    details = {
        "config": asdict(config),
        "bound": f.bound,
        "per_seed": {k2: list(x) for k2, x in v.items()},
        "seeds": list(f.seeds),
        "resolve_error": f.resolve_error,
        "rk4_invertible_hlip": f.rk4_invertible_hlip,
        "below_bound": k,
        "rate_interval": [lo, hi],
        "reasons": j.reasons,
        "parts": {k2: x.value for k2, x in j.parts.items()},
        "intervals": _intervals(j.intervals),
    }
    return Measurement(measured, f.verdict, details, seeds=n)
