"""Lesson 3's ledger rows: the judging logic on small fake inputs (fast), and the studies at
quick-mode size (slow): the annulus across seeds, h(x) = -x three ways, h(x) = |x| with a readout.

The fast tests check that each row's verdict is computed from its declared threshold and turns
when the evidence does; the slow ones check the lesson's "must show" statements on real runs.
"""

import math

import numpy as np
import pytest
import torch

from nodecourse.claims import REGISTRY, ClaimVerdict, Threshold, load_rows, run_claims
from nodecourse.lessons import lesson03 as L
from nodecourse.models._augment import plain_node

ROWS = ("annulus", "augmentation-2p", "flow-readout-noninvertible")


# --- bounds and constants -------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 16, 33, 64])
def test_best_increasing_fit_of_minus_x_is_the_mean_of_x_squared(n):
    x = np.linspace(-1, 1, n)
    assert L.best_monotone_mse(-x, increasing=True) == pytest.approx((n + 1) / (3 * (n - 1)))
    assert L.order_preserving_floor(n) == pytest.approx((n + 1) / (3 * (n - 1)))
    # a decreasing fit of a decreasing target is exact
    assert L.best_monotone_mse(-x, increasing=False) == pytest.approx(0.0, abs=1e-15)


def test_best_monotone_fit_of_abs_x():
    # on the row's 32-point grid (the figure quoted in the lesson) and towards the continuum
    assert L.ABS_MONOTONE_BOUND == pytest.approx(0.060693, abs=1e-6)
    a = math.sqrt(2) - 1  # the pooled block [-1, a] has mean a: a^2 + 2a - 1 = 0
    continuum = (1 / 3 - a + a * a + a**3 / 3) / 2
    fine = np.abs(np.linspace(-1, 1, 20001))
    assert L.best_monotone_mse(fine, increasing=None) == pytest.approx(continuum, rel=1e-3)
    # no monotone sequence does better: random sorted candidates, near the optimum and far from it
    rng = np.random.default_rng(0)
    y = np.abs(np.linspace(-1, 1, 9))
    best = L.best_monotone_mse(y, increasing=None)
    for _ in range(2000):
        g = np.sort(rng.uniform(0, 1, size=9) * rng.uniform(0.2, 1.0))
        assert np.mean((g - y) ** 2) >= best - 1e-12
        assert np.mean((g[::-1] - y) ** 2) >= best - 1e-12


def test_rk4_step_is_invertible_below_its_hlip_constant():
    c = L.rk4_invertible_hlip()
    assert c + c**2 / 2 + c**3 / 6 + c**4 / 24 == pytest.approx(1.0)
    assert 0.69 < c < 0.70
    # A 1-D field scaled so that h * Lip(f) is just below the constant: the RK4 map cannot fold.
    torch.manual_seed(0)
    model = plain_node(1, readout="linear", method="rk4", step_size=0.25)
    last = model.flow.field.net[-1]
    with torch.no_grad():
        last.weight.mul_(20.0)  # first a field strong enough to fold the step ...
        last.bias.mul_(20.0)
    slope, hlip = L.one_step_diagnostics(model, 0.25)
    assert hlip > c, hlip
    for _ in range(10):  # ... then scaled down (the states it visits move, so repeat) until h * Lip < c
        with torch.no_grad():
            last.weight.mul_(0.9 * c / hlip)
            last.bias.mul_(0.9 * c / hlip)
        slope, hlip = L.one_step_diagnostics(model, 0.25)
        if hlip < c:
            break
    assert hlip < c and slope > 0, (slope, hlip)


def test_clopper_pearson():
    assert L.clopper_pearson(0, 5)[0] == 0.0 and L.clopper_pearson(5, 5)[1] == 1.0
    lo, hi = L.clopper_pearson(1, 10)
    assert lo == pytest.approx(0.00253, abs=1e-4) and hi == pytest.approx(0.445, abs=1e-3)


# --- judging on fake values -----------------------------------------------------------------------


def test_judge_bound_checks_every_seed_and_its_own_error():
    assert L.judge_bound([0.40, 0.38, 0.39], 0.38, 1e-4)[0] is ClaimVerdict.HOLDS
    assert L.judge_bound([0.40, 0.37, 0.39], 0.38, 1e-4)[0] is ClaimVerdict.DOES_NOT_HOLD  # one seed is enough
    assert L.judge_bound([0.40, 0.39], 0.38, 1e-4)[0] is ClaimVerdict.UNDECIDED  # more seeds decide it
    assert L.judge_bound([0.40, 0.38, 0.39], 0.38, 1e-4, error=1e-3)[0] is ClaimVerdict.NOT_MEASURABLE


def _annulus_values(node=-1.0, anode=0.8, resnet=0.8, end=1.3, whole=1.2, n=5):
    wobble = [0.01 * i for i in range(n)]  # a spread, so the intervals have a width
    return {
        "NODE margin": {i: node + w for i, w in enumerate(wobble)},
        "ANODE margin": {i: anode + w for i, w in enumerate(wobble)},
        "ResNet margin": {i: resnet + w for i, w in enumerate(wobble)},
        "NFE ratio (end)": {i: end + w for i, w in enumerate(wobble)},
        "NFE ratio (whole)": {i: whole + w for i, w in enumerate(wobble)},
    }


def test_annulus_parts_turn_with_the_evidence():
    assert L.annulus_parts(_annulus_values()).verdict is ClaimVerdict.HOLDS
    j = L.annulus_parts(_annulus_values(node=+0.5))  # no wrong arc: the theorem's part fails
    assert j.parts["NODE wrong arc"] is ClaimVerdict.DOES_NOT_HOLD and j.verdict is ClaimVerdict.HOLDS_IN_PART
    j = L.annulus_parts(_annulus_values(resnet=-0.3))
    assert j.parts["ANODE and ResNet positive margin"] is ClaimVerdict.HOLDS_IN_PART
    # an NFE ratio whose median's interval contains 1 is undecided, not "holds"
    undecided = _annulus_values()
    undecided["NFE ratio (end)"] = {0: 0.8, 1: 1.3, 2: 1.0, 3: 1.2, 4: 0.9}
    j = L.annulus_parts(undecided)
    assert (
        j.subparts["NFE ratio (end)"] is ClaimVerdict.UNDECIDED
        and j.parts["NFE NODE > ANODE"] is j.subparts["NFE ratio (end)"]
    )
    # all parts fail: does not hold
    bad = L.annulus_parts(_annulus_values(node=0.5, anode=-0.5, resnet=-0.5, end=0.7, whole=0.7))
    assert bad.verdict is ClaimVerdict.DOES_NOT_HOLD


def test_annulus_nfe_end_of_training_reading_decides_and_whole_training_is_shown():
    j = L.annulus_parts(_annulus_values(end=1.3, whole=0.8))
    assert j.parts["NFE NODE > ANODE"] is ClaimVerdict.HOLDS
    assert j.subparts["NFE ratio (whole)"] is ClaimVerdict.DOES_NOT_HOLD  # reported, deciding nothing
    j = L.annulus_parts(_annulus_values(end=0.8, whole=1.3))
    assert j.parts["NFE NODE > ANODE"] is ClaimVerdict.DOES_NOT_HOLD


def test_annulus_nfe_ratio_is_judged_by_its_median_not_a_t_interval():
    """One seed at 0.00 and one at 5.08 make the t-interval contain 1; the median's interval does not."""
    from nodecourse.claims import judge

    ratios = [0.0, 1.1, 1.2, 1.25, 1.3, 1.3, 1.35, 1.4, 1.5, 5.08]
    assert judge(ratios, 1.0)[0] is ClaimVerdict.UNDECIDED
    values = _annulus_values(n=10)
    values["NFE ratio (end)"] = dict(enumerate(ratios))
    j = L.annulus_parts(values)
    assert j.parts["NFE NODE > ANODE"] is ClaimVerdict.HOLDS
    assert j.intervals["NFE ratio (end)"].median == pytest.approx(1.3)


def test_annulus_a_tie_is_not_higher_nfe():
    """Two seeds tie at ratio 1.00 and the median's interval ends exactly on 1: "higher" is strict, so the part
    is undecided (not "holds"); every seed tied does not hold; the sign test counts ties against the claim."""
    from nodecourse.claims import sign_test

    values = _annulus_values(n=8)
    values["NFE ratio (end)"] = dict(enumerate([1.0, 1.0, 1.2, 1.3, 1.3, 1.4, 1.5, 1.65]))
    j = L.annulus_parts(values)
    assert j.intervals["NFE ratio (end)"].lo == 1.0
    assert j.parts["NFE NODE > ANODE"] is ClaimVerdict.UNDECIDED and j.verdict is ClaimVerdict.HOLDS_IN_PART
    # the words are the contract here: the ledger's reason must say why a tie does not count for "higher"
    assert "a tie is not on the claimed side" in j.reasons["NFE ratio (end)"]
    tied = _annulus_values(n=8)
    tied["NFE ratio (end)"] = dict.fromkeys(range(8), 1.0)
    assert L.annulus_parts(tied).parts["NFE NODE > ANODE"] is ClaimVerdict.DOES_NOT_HOLD
    ratios = list(values["NFE ratio (end)"].values())
    assert sign_test(ratios, 1.0, ties="against") > sign_test(ratios, 1.0)  # ties count against, not dropped
    assert "strictly higher" in L.ANNULUS_THRESHOLD.text and "a tie" in L.ANNULUS_THRESHOLD.text


def test_annulus_parts_compare_with_the_declared_constants(monkeypatch):
    monkeypatch.setattr(L.config, "ANNULUS_NFE_RATIO", 2.0)  # the code reads the declared number, no other
    j = L.annulus_parts(_annulus_values(end=1.3, whole=1.2))
    assert j.parts["NFE NODE > ANODE"] is ClaimVerdict.DOES_NOT_HOLD


def test_annulus_threshold_says_which_reading_decides_and_names_the_condition():
    text = L.ANNULUS_THRESHOLD.text  # a declared threshold's words are its contract: literal asserts stay
    assert "median" in text and "that reading decides" in text and "decides nothing" in text
    assert "some point of the disk is classified correctly" in text


def test_negation_parts():
    ok = {"1-D flow": [0.379, 0.380, 0.381], "R^2 flow + projection": [1e-4, 2e-4, 3e-4]}
    assert L.negation_parts(ok, 0.3778).verdict is ClaimVerdict.HOLDS
    below = dict(ok, **{"1-D flow": [0.379, 0.30, 0.381]})  # a 1-D flow below the floor: not a flow
    assert L.negation_parts(below, 0.3778).parts["1-D flow cannot"] is ClaimVerdict.DOES_NOT_HOLD
    nofit = dict(ok, **{"R^2 flow + projection": [0.2, 0.3, 0.25]})
    j = L.negation_parts(nofit, 0.3778)
    assert j.parts["flow on R^2 fits"] is ClaimVerdict.DOES_NOT_HOLD and j.verdict is ClaimVerdict.HOLDS_IN_PART


def test_abs_parts():
    b = L.ABS_MONOTONE_BOUND
    fits, resolved = [1e-6, 3e-6, 5e-6], [0.061, 0.19, 0.17]
    j = L.abs_parts(fits, resolved, [0.0607, 4e-4, 1e-5])
    assert j.verdict is ClaimVerdict.HOLDS and j.below_bound == 2
    # no seed went below the bound: "can happen" is neither shown nor refuted
    j = L.abs_parts(fits, resolved, [b, b + 0.01, b + 0.02])
    assert j.parts["fixed-step 1-D model learns a non-invertible map"] is ClaimVerdict.UNDECIDED
    assert j.verdict is ClaimVerdict.HOLDS_IN_PART
    # a re-solved 1-D flow below the monotone bound would contradict the theorem: the part fails
    j = L.abs_parts(fits, [0.03, 0.19, 0.17], [1e-5, 1e-5, 1e-5])
    assert j.parts["1-D flow + linear cannot"] is ClaimVerdict.DOES_NOT_HOLD
    # the R^2 model not reaching the declared 1e-4
    j = L.abs_parts([2e-3, 3e-3, 4e-3], resolved, [1e-5, 1e-5, 1e-5])
    assert j.parts["flow on R^2 + linear approximates |x|"] is ClaimVerdict.DOES_NOT_HOLD


def test_rows_declare_their_thresholds_before_running():
    load_rows()
    assert set(ROWS) <= set(REGISTRY)
    kinds = {cid: REGISTRY[cid].threshold.kind for cid in ROWS}
    assert kinds == {"annulus": "published", "augmentation-2p": "course", "flow-readout-noninvertible": "course"}
    for cid in ROWS:
        t = REGISTRY[cid].threshold
        assert isinstance(t, Threshold) and t.why.strip(), cid
    # the numbers the code compares with are the ones the thresholds state
    assert f"{L.ABS_MONOTONE_BOUND:.4f}" in REGISTRY["flow-readout-noninvertible"].threshold.text
    assert f"{L.ABS_FIT_MSE:g}" in REGISTRY["flow-readout-noninvertible"].threshold.text
    assert f"{L.NEGATION_FIT_MSE:g}" in REGISTRY["augmentation-2p"].threshold.text
    assert "computed" in REGISTRY["flow-readout-noninvertible"].threshold.text


def test_unknown_model_names_raise():
    with pytest.raises(ValueError, match="'MLP'"):
        L.build_annulus_model("MLP", L.QUICK_ANNULUS)
    with pytest.raises(ValueError, match="'2-D flow'"):
        L.build_negation_model("2-D flow", L.QUICK_NEGATION)
    with pytest.raises(ValueError, match="'3-D flow'"):
        L.build_abs_model("3-D flow", L.QUICK_ABS)


# --- the studies at quick size (slow) ---------------------------------------------------------------


@pytest.fixture(scope="module")
def annulus_runs():
    return L.annulus_study(L.QUICK_ANNULUS)


@pytest.mark.slow
def test_plain_node_has_a_wrong_arc_on_every_seed(annulus_runs):
    node = [r for r in annulus_runs if r.model_name == "NODE"]
    assert len(node) == len(L.QUICK_ANNULUS.seeds) >= 3
    for r in node:
        assert r.probes[1.25].min_margin < 0 and r.probes[1.25].misclassified > 0, (r.seed, r.probes[1.25])
        # the theorem: every circle inside the ring carries a wrong arc
        assert all(r.probes[rad].min_margin < 0 for rad in (1.05, 1.45)), r.seed


@pytest.mark.slow
def test_anode_and_resnet_have_a_positive_margin_on_the_whole_circle(annulus_runs):
    for r in annulus_runs:
        if r.model_name in ("ANODE", "ResNet"):
            assert r.probes[1.25].min_margin > 0, (r.model_name, r.seed, r.probes[1.25].min_margin)


@pytest.mark.slow
def test_models_are_matched_in_size(annulus_runs):
    sizes = {r.model_name: r.n_parameters for r in annulus_runs}
    assert max(sizes.values()) / min(sizes.values()) < 1.1, sizes


@pytest.mark.slow
def test_swapping_node_and_anode_runs_breaks_the_row(annulus_runs):
    swapped = [
        L.AnnulusRun(
            {"NODE": "ANODE", "ANODE": "NODE"}.get(r.model_name, r.model_name),
            r.seed,
            r.model,
            r.log,
            r.n_parameters,
            r.sample_accuracy,
            r.probes,
        )
        for r in annulus_runs
    ]
    f = L.AnnulusFindings.from_runs(swapped)
    assert not f.holds
    assert f.judged.parts["NODE wrong arc"] is ClaimVerdict.DOES_NOT_HOLD


@pytest.mark.slow
def test_negation_flows_resolved():
    f = L.NegationFindings.from_study(L.negation_study(L.QUICK_NEGATION), L.QUICK_NEGATION.n_points)
    floor = (16 + 1) / (3 * 15)
    assert f.floor == pytest.approx(floor)
    assert min(f.mse_resolved["1-D flow"]) >= floor - L.RESOLVE_SLACK, f.mse_resolved
    assert max(f.mse_resolved["R^2 flow + projection"]) < L.NEGATION_FIT_MSE, f.mse_resolved
    assert f.resolve_error < L.RESOLVE_SLACK


@pytest.mark.slow
def test_abs_fits_and_the_fixed_step_fold():
    f = L.AbsFindings.from_study(L.abs_study(L.QUICK_ABS))
    v = f.values
    assert max(v["R^2 + linear re-solved"]) < L.ABS_FIT_MSE, v
    # a re-solved 1-D flow + linear readout is monotone: never below the bound (the theorem)
    assert min(v["1-D + linear re-solved"]) >= f.bound - L.RESOLVE_SLACK, v
    # a seed fitted below the bound as trained has a folding (non-invertible) RK4 map with h*Lip above
    # the constant that guarantees an invertible step
    for trained, slope, hlip in zip(v["1-D + linear as trained"], v["1-D min slope of the RK4 map"], v["1-D h*Lip(f)"]):
        if trained < f.bound:
            assert slope < 0 and hlip > f.rk4_invertible_hlip, (trained, slope, hlip)
    assert f.judged.below_bound >= 1


@pytest.mark.slow
def test_rows_run_from_the_cached_studies():
    results = run_claims(list(ROWS), quick=True)  # cached runs: no retraining after the tests above
    assert [r.id for r in results] == list(ROWS)
    for r in results:
        assert r.verdict is not ClaimVerdict.ERROR and r.threshold is REGISTRY[r.id].threshold
    assert "NODE min margin" in results[0].measured and "monotone bound" in results[2].measured
