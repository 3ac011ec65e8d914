"""Lesson 4's findings classes: markdown() built from small hand-made study results carries the verdict
words and the numbers, including the edge cases (a failed solve, a count that is missing, no underflow)."""

import math

import pytest

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
    text = L.ReversalFindings.from_study(_counts(497_430, 502_563), GONE).markdown()
    for needle in (
        "497,430",
        "502,563",
        "500,000",
        "450,000 to 550,000",
        "200,000",
        "quoted with ANODE",
        "5,001 to 7,072",
        "Solver runs confirm 1 of 1",
        "**holds**",
        "z(0) = 0",
    ):
        assert needle in text, needle
    for word in ("unlocated", "seed figure", "course plan"):  # words a learner cannot place (issue 38)
        assert word not in text.lower(), word
    # the error the quoted figure would leave: forward Euler under-amplifies, backward Euler over-amplifies
    assert "-2.5%" in text and "+2.5%" in text


def test_reversal_markdown_with_a_missing_count_and_no_underflow():
    kept = L.UnderflowCase(-1e4, 1e-300, 53, None)
    f = L.ReversalFindings.from_study(_counts(None, 502_563, verified=False), kept)
    text = f.markdown()
    assert "forward Euler needs none steps" in text and "(not run)" in text
    assert f.verdict is ClaimVerdict.HOLDS_IN_PART and "holds in part" in text


def test_memory_markdown():
    f = L.MemoryFindings((8, 16, 32), {"backprop": 3.9, "checkpoint": 1.4, "adjoint": 1.0}, True, True, False)
    text = f.markdown()
    assert "8 to 32" in text and "backprop 3.90x" in text and "checkpoint between: does not hold" in text
    assert f.verdict is ClaimVerdict.HOLDS_IN_PART


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
    text = f.markdown()
    assert "atol = tol" in text and "1.0e+11x" in text and "less than 100x" in text
    assert f.verdict is ClaimVerdict.DOES_NOT_HOLD and "**does not hold**" in text


def test_gradient_error_markdown_names_a_failed_solve_instead_of_a_number():
    f = L.GradientErrorFindings.from_sweep(_sweep(long_at_1e8=math.inf, atol=1e-20), CFG)
    assert f.failed == [1e-8] and f.growth[1e-8] is None
    text = f.markdown()
    assert "atol = 1e-20" in text and "failed (step-underflow)" in text and "no error is reported" in text
    assert "inf" not in f.sweep_text()
    # one of the two horizons failed: the sentence counts it (it said "at some horizon" whatever the count)
    assert "fails at 1 of the 2 horizons" in text and "some horizon" not in text
    assert "legend counts it as failed" in text


def test_gradient_error_markdown_says_every_horizon_when_every_one_failed():
    rows = _sweep(atol=1e-20)
    for r in rows:
        if r["route"] == "adjoint" and r["tol"] == 1e-8:
            r.update(rel_error=math.inf, status="failed", note="backward status STEP_UNDERFLOW")
    text = L.GradientErrorFindings.from_sweep(rows, CFG).markdown()
    assert "fails at every horizon (T = 0.5: failed (step-underflow), T = 3: failed (step-underflow))" in text
    assert "legend counts them as failed" in text


def _probe(adj_loose, adj_tight, ck, angle=0.0):
    p = L.PROBE
    return (
        L.ProbeResult(p.rtol, angle, "adjoint", adj_loose, adj_loose, 100, 300, "success"),
        L.ProbeResult(p.rtol, angle, "checkpoint", ck, ck, 100, 100, "success"),
        L.ProbeResult(p.tight_atol, angle, "adjoint", adj_tight, adj_tight, 150, 400, "success"),
        L.ProbeResult(p.tight_atol, angle, "checkpoint", ck, ck, 150, 150, "success"),
    )


def test_probe_markdown_says_whether_the_error_falls():
    assert "falls from 4e+03 to 2e-07" in L.ProbeFindings.from_probe(_probe(4e3, 2e-7, 1e-9)).markdown()
    assert "does not fall" in L.ProbeFindings.from_probe(_probe(1e-3, 1e-2, 1e-9)).markdown()


def test_rotated_markdown_with_and_without_torchdiffeq():
    f = L.RotatedFindings.from_probe(_probe(3.0, 0.5, 1e-8, angle=0.7), torchdiffeq=0.4)
    text = f.markdown()
    assert "5e-01" in text and "3e+00" in text and "4e-01" in text and "1e-08" in text
    assert f.verdict is ClaimVerdict.HOLDS
    wrong = L.RotatedFindings.from_probe(_probe(3.0, 1e-5, 1e-3, angle=0.7))
    assert "torchdiffeq" not in wrong.markdown() and wrong.verdict is ClaimVerdict.DOES_NOT_HOLD
    assert "checkpoint at solver accuracy: does not hold" in wrong.markdown()


def test_underflow_case_prints_its_bits_and_the_reversal():
    assert "0 significant bits), reversal returns z(0) = 0" in str(GONE)
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
