"""Lesson 4's findings classes: markdown() built from small hand-made study results carries the verdict
words and the numbers, including the edge cases (a failed solve, a count that is missing, no underflow)."""

import math

import pytest
from snapshot_support import assert_snapshot

from nodecourse.claims import ClaimVerdict
from nodecourse.lessons import lesson04 as L

GONE = L.UnderflowCase(-1e4, 0.0, 0, 0.0)


def _counts(euler, implicit, verified=True):
    return (
        L.ReversalCount("euler", -100.0, euler, "amplification factor", verified),
        L.ReversalCount("implicit_euler", -100.0, implicit, "amplification factor"),
        L.ReversalCount("midpoint", -100.0, 7_072, "amplification factor"),
        L.ReversalCount("trapezoid", -100.0, 5_001, "amplification factor"),
    )


def test_reversal_markdown_quotes_counts_derived_figure_and_the_quoted_one():
    f = L.ReversalFindings.from_study(_counts(497_430, 502_563), GONE)
    assert f.counts == {"euler": 497_430, "implicit_euler": 502_563}
    assert f.second_order == {"midpoint": 7_072, "trapezoid": 5_001}
    assert f.derived == 500_000 == L.DERIVED_REVERSAL_STEPS and f.tolerance == pytest.approx(0.1)  # band ±10 %
    assert f.checks == (1, 1) and (f.underflow.z1, f.underflow.recovered) == (0.0, 0.0)
    assert f.verdict is ClaimVerdict.HOLDS
    text = f.markdown()
    for word in ("unlocated", "seed figure", "course plan"):  # words a learner cannot place (issue 38)
        assert word not in text.lower(), word
    # the error the quoted figure would leave: forward Euler under-amplifies, backward Euler over-amplifies
    quoted = L.UNLOCATED_REVERSAL_STEPS
    assert quoted == 200_000 and "quoted with ANODE" in text  # the figure is named with its source
    assert L.reversal_signed_error("euler", L.REVERSAL_LAMBDA, quoted) == pytest.approx(-0.025, abs=5e-4)
    assert L.reversal_signed_error("implicit_euler", L.REVERSAL_LAMBDA, quoted) == pytest.approx(0.025, abs=5e-4)
    assert_snapshot("lesson04.reversal-holds", text)


def test_reversal_markdown_with_a_missing_count_and_no_underflow():
    kept = L.UnderflowCase(-1e4, 1e-300, 53, None)
    f = L.ReversalFindings.from_study(_counts(None, 502_563, verified=False), kept)
    assert f.counts["euler"] is None and f.ratio("euler") is None and f.underflow.recovered is None
    assert f.checks == (0, 1) and f.parts["solver confirms the counts"] is ClaimVerdict.DOES_NOT_HOLD
    assert f.verdict is ClaimVerdict.HOLDS_IN_PART
    assert_snapshot("lesson04.reversal-count-missing", f.markdown())


def test_memory_markdown():
    f = L.MemoryFindings((8, 16, 32), {"backprop": 3.9, "checkpoint": 1.4, "adjoint": 1.0}, True, True, False)
    assert (f.steps[0], f.steps[-1]) == (8, 32) and f.growth["backprop"] == 3.9
    assert f.parts["checkpoint between"] is ClaimVerdict.DOES_NOT_HOLD and f.verdict is ClaimVerdict.HOLDS_IN_PART
    assert_snapshot("lesson04.memory-checkpoint-not-between", f.markdown())


CFG = L.GradientErrorConfig(horizons=(0.5, 3.0), tolerances=(1e-4, 1e-8))


def _sweep(long_at_1e8=1e-7, atol=None):
    rows = []
    for tol, (short, long) in ((1e-4, (2e-4, 2e7)), (1e-8, (1e-8, long_at_1e8))):
        for T, err in ((0.5, short), (3.0, long)):
            failed = not math.isfinite(err)
            rows.append(
                {
                    "T": T,
                    "tol": tol,
                    "atol": tol if atol is None else atol,
                    "angle": 0.0,
                    "route": "adjoint",
                    "rel_error": err,
                    "status": "failed" if failed else "success",
                    "note": "backward status STEP_UNDERFLOW" if failed else "",
                }
            )
            rows.append(
                {
                    "T": T,
                    "tol": tol,
                    "atol": tol if atol is None else atol,
                    "angle": 0.0,
                    "route": "checkpoint",
                    "rel_error": tol / 10,
                    "status": "success",
                    "note": "",
                }
            )
    return rows


def test_gradient_error_markdown_names_growth_and_verdict():
    f = L.GradientErrorFindings.from_sweep(_sweep(), CFG)
    assert f.atol is None and f.factor == 100 and f.failed == []  # atol = tol
    assert f.growth[1e-4] == pytest.approx(1e11) and f.growth[1e-8] == pytest.approx(10.0)
    assert f.adjoint_grows == {1e-4: True, 1e-8: False} and f.checkpoint_at_solver_accuracy
    assert f.verdict is ClaimVerdict.DOES_NOT_HOLD
    assert_snapshot("lesson04.gradient-error-does-not-hold", f.markdown())


def test_gradient_error_markdown_names_a_failed_solve_instead_of_a_number():
    f = L.GradientErrorFindings.from_sweep(_sweep(long_at_1e8=math.inf, atol=1e-20), CFG)
    assert f.failed == [1e-8] and f.growth[1e-8] is None and f.atol == 1e-20
    assert f.failures == {(1e-8, 3.0): "failed (step-underflow)"}  # named by its status, not a number
    assert "inf" not in f.sweep_text()
    # one of the two horizons failed: the sentence counts it (it said "at some horizon" whatever the count)
    assert "some horizon" not in f.markdown()
    assert_snapshot("lesson04.gradient-error-one-horizon-failed", f.markdown())


def test_gradient_error_markdown_says_every_horizon_when_every_one_failed():
    rows = _sweep(atol=1e-20)
    for r in rows:
        if r["route"] == "adjoint" and r["tol"] == 1e-8:
            r.update(rel_error=math.inf, status="failed", note="backward status STEP_UNDERFLOW")
    f = L.GradientErrorFindings.from_sweep(rows, CFG)
    assert f.failed == [1e-8] and set(f.failures) == {(1e-8, 0.5), (1e-8, 3.0)}
    assert set(f.failures.values()) == {"failed (step-underflow)"}
    assert_snapshot("lesson04.gradient-error-every-horizon-failed", f.markdown())


def _probe(adj_loose, adj_tight, ck, angle=0.0):
    p = L.PROBE
    return (
        L.ProbeResult(p.rtol, angle, "adjoint", adj_loose, adj_loose, 100, 300, "success"),
        L.ProbeResult(p.rtol, angle, "checkpoint", ck, ck, 100, 100, "success"),
        L.ProbeResult(p.tight_atol, angle, "adjoint", adj_tight, adj_tight, 150, 400, "success"),
        L.ProbeResult(p.tight_atol, angle, "checkpoint", ck, ck, 150, 150, "success"),
    )


def test_probe_markdown_says_whether_the_error_falls():
    falls = L.ProbeFindings.from_probe(_probe(4e3, 2e-7, 1e-9))
    assert (falls.theta_error_loose, falls.theta_error_tight) == (4e3, 2e-7)
    assert_snapshot("lesson04.probe-falls", falls.markdown())
    rises = L.ProbeFindings.from_probe(_probe(1e-3, 1e-2, 1e-9))
    assert rises.theta_error_tight > rises.theta_error_loose and "does not fall" in rises.markdown()
    assert_snapshot("lesson04.probe-does-not-fall", rises.markdown())


def test_rotated_markdown_with_and_without_torchdiffeq():
    f = L.RotatedFindings.from_probe(_probe(3.0, 0.5, 1e-8, angle=0.7), torchdiffeq=0.4)
    assert (f.adjoint, f.adjoint_loose, f.torchdiffeq, f.checkpoint) == (0.5, 3.0, 0.4, 1e-8)
    assert f.verdict is ClaimVerdict.HOLDS
    assert_snapshot("lesson04.rotated-holds-with-torchdiffeq", f.markdown())
    wrong = L.RotatedFindings.from_probe(_probe(3.0, 1e-5, 1e-3, angle=0.7))
    assert wrong.torchdiffeq is None and "torchdiffeq" not in wrong.markdown()
    assert wrong.parts["checkpoint at solver accuracy"] is ClaimVerdict.DOES_NOT_HOLD
    assert wrong.verdict is ClaimVerdict.DOES_NOT_HOLD
    assert_snapshot("lesson04.rotated-does-not-hold", wrong.markdown())


def test_underflow_case_prints_its_bits_and_the_reversal():
    assert (GONE.significant_bits, GONE.recovered) == (0, 0.0)
    assert_snapshot("lesson04.underflow-case-gone", str(GONE))
    assert "reversal" not in str(L.UnderflowCase(-700.0, 9.86e-305, 53, None))


def test_nfe_table_keeps_one_tolerance():
    rows = [
        {"T": 0.5, "tol": 1e-8, "route": "adjoint", "nfe": 20, "nfe_backward": 40},
        {"T": 0.5, "tol": 1e-4, "route": "adjoint", "nfe": 8, "nfe_backward": 9},
    ]
    table = L.nfe_table(rows, tol=1e-8)
    assert "tolerance 1e-08" in table and "40" in table and " 9\n" not in table + "\n"


@pytest.mark.parametrize(
    "cls", [L.ReversalFindings, L.MemoryFindings, L.GradientErrorFindings, L.ProbeFindings, L.RotatedFindings]
)
def test_findings_are_frozen(cls):
    import dataclasses

    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
