"""Lesson 3's findings classes: markdown() built from small hand-made results carries the verdict words and
the numbers, including the edge cases (an undecided part, no seed that folds, the disk condition missed)."""

import dataclasses

import pytest

from nodecourse.claims import ClaimVerdict
from nodecourse.lessons import lesson03 as L


def _annulus_values(n=5, disk_right=1.0, end=1.3):
    seeds = range(n)
    return {
        "NODE margin": {s: -1.0 - 0.01 * s for s in seeds},
        "ANODE margin": {s: 0.8 + 0.01 * s for s in seeds},
        "ResNet margin": {s: 0.7 + 0.01 * s for s in seeds},
        "NFE ratio (end)": {s: end + 0.01 * s for s in seeds},
        "NFE ratio (whole)": {s: 0.9 + 0.01 * s for s in seeds},
        "NODE sample accuracy": {s: 0.98 for s in seeds},
        "NODE wrong fraction": {s: 0.02 for s in seeds},
        "NODE disk right fraction": {s: disk_right if s else 0.0 for s in seeds},
    }


def _annulus(values):
    return L.AnnulusFindings(tuple(sorted(values["NODE margin"])), values, L.annulus_parts(values))


def test_annulus_markdown_quotes_parts_readings_and_the_disk_condition():
    f = _annulus(_annulus_values())
    text = f.markdown()
    assert "5 of 5 seeds" in text and "holds on 4 of 5 seeds" in text  # seed 0 classifies no disk point right
    assert "the reading that decides" in text and "shown beside it" in text and "median 1.32" in text
    assert "**holds** (5 seeds)" in text
    measured = f.measured()
    assert "disk point classified right on 4/5 seeds, not on seeds [0]" in measured and "(decides)" in measured


def test_annulus_markdown_when_the_nfe_part_is_undecided():
    values = _annulus_values(end=0.98)  # median interval [0.98, 1.02] contains 1
    f = _annulus(values)
    assert f.judged.parts["NFE NODE > ANODE"] is ClaimVerdict.UNDECIDED
    assert "undecided, the reading that decides" in f.markdown() and f.verdict is ClaimVerdict.HOLDS_IN_PART


def test_negation_markdown_and_table():
    resolved = {
        "1-D flow": [0.379, 0.380, 0.381],
        "R^2 flow + projection": [1e-4, 2e-4, 3e-4],
        "1-D flow + linear": [1e-4, 1e-4, 2e-4],
    }
    f = L.NegationFindings((0, 1, 2), resolved, resolved, 0.3778, 1e-7, L.negation_parts(resolved, 0.3778))
    text = f.markdown()
    assert "0.3790-0.3810" in text and "0.3778" in text and "0.0001-0.0003" in text and "**holds**" in text
    assert "order-preserving floor on this grid: 0.3778" in f.table() and "R^2 flow + projection" in f.table()


def _abs(trained, resolved=(0.07, 0.19, 0.17), two=(1e-6, 3e-6, 5e-6)):
    values = {
        "R^2 + linear re-solved": list(two),
        "R^2 + linear as trained": list(two),
        "1-D + linear re-solved": list(resolved),
        "1-D + linear as trained": list(trained),
        "1-D min slope of the RK4 map": [-0.5, 0.2, 0.1],
        "1-D h*Lip(f)": [3.1, 0.4, 0.5],
    }
    judged = L.abs_parts(values["R^2 + linear re-solved"], values["1-D + linear re-solved"], list(trained))
    return L.AbsFindings((0, 1, 2), values, judged, L.ABS_MONOTONE_BOUND, 1e-8, L.rk4_invertible_hlip(), 0.25)


def test_abs_markdown_when_a_seed_folds():
    f = _abs([1e-5, 0.2, 0.3])
    text = f.markdown()
    assert "1 of 3 seeds" in text and "seed 0" in text and "3.1–3.1" in text
    assert f"{L.rk4_invertible_hlip():.2f}" in text
    assert "the flow itself is monotone" in text and "RK4 steps of 0.25" in text
    assert f.folded == [0] and "+0.20" in f.table()


def test_abs_markdown_when_no_seed_folds_is_undecided():
    f = _abs([0.2, 0.3, 0.4])
    assert "0 of 3 seeds" in f.markdown() and "no fixed-step model was seen to fold" in f.markdown()
    assert f.judged.parts["fixed-step 1-D model learns a non-invertible map"] is ClaimVerdict.UNDECIDED


def test_abs_markdown_flags_a_resolve_below_the_bound():
    f = _abs([1e-5, 0.2, 0.3], resolved=(0.01, 0.19, 0.17))
    assert "not accurate" in f.markdown() and f.verdict is ClaimVerdict.HOLDS_IN_PART


@pytest.mark.parametrize("cls", [L.AnnulusFindings, L.NegationFindings, L.AbsFindings, L.JudgedParts])
def test_findings_are_frozen(cls):
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
