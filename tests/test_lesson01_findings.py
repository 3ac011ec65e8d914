"""Lesson 1's findings render the numbers and the verdict they were built from (hand-made comparisons)."""

from nodecourse.claims import ClaimVerdict
from nodecourse.lessons import lesson01 as L


def _run(euler=1e-15, midpoint=1e-2, tolerance=2e-14, dtype="float64"):
    return L.ResnetEulerComparison(euler, midpoint, tolerance, 4, 4, dtype)


def test_agreement_with_a_distinct_baseline_holds_and_says_so():
    f = L.ResnetEulerFindings.from_runs([_run(dtype="float32", euler=1e-7, midpoint=0.5, tolerance=1e-5), _run()])
    assert f.verdict is ClaimVerdict.HOLDS
    text = f.markdown()
    assert "float32" in text and "float64" in text and "1.0e-15" in text and "holds" in text
    assert "within it" in text and "outside" not in text


def test_disagreement_does_not_hold_and_the_text_names_it():
    f = L.ResnetEulerFindings.from_runs([_run(euler=1e-6)])
    assert f.verdict is ClaimVerdict.DOES_NOT_HOLD
    assert "outside it" in f.markdown() and "does not hold" in f.markdown()


def test_a_baseline_that_agrees_cannot_tell_solvers_apart():
    f = L.ResnetEulerFindings.from_runs([_run(midpoint=1e-12)])
    assert f.verdict is ClaimVerdict.NOT_MEASURABLE
    assert f._repr_markdown_() == f.markdown() == str(f)
