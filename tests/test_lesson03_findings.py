"""Lesson 3's findings classes: markdown() built from small hand-made results carries the verdict words and
the numbers, including the edge cases (an undecided part, no seed that folds, the disk condition missed)."""

import dataclasses

import pytest
from snapshot_support import assert_snapshot

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
    assert f.seeds == (0, 1, 2, 3, 4) and all(f.node_has_wrong_arc.values())
    assert f.disk_condition == {0: False, 1: True, 2: True, 3: True, 4: True}  # seed 0: no disk point right
    sub = f.judged.subparts
    assert sub["NFE ratio (end)"] is f.judged.parts["NFE NODE > ANODE"] is ClaimVerdict.HOLDS  # end decides
    assert sub["NFE ratio (whole)"] is ClaimVerdict.DOES_NOT_HOLD  # shown beside it, deciding nothing
    assert f.judged.intervals["NFE ratio (end)"].median == pytest.approx(1.32)
    assert f.verdict is ClaimVerdict.HOLDS and f.holds
    assert_snapshot("lesson03.annulus-holds", f.markdown())
    assert_snapshot("lesson03.annulus-holds-measured", f.measured())  # the ledger's text names seed 0


def test_annulus_markdown_when_the_nfe_part_is_undecided():
    values = _annulus_values(end=0.98)  # median interval [0.98, 1.02] contains 1
    f = _annulus(values)
    assert f.judged.parts["NFE NODE > ANODE"] is ClaimVerdict.UNDECIDED
    assert f.judged.subparts["NFE ratio (end)"] is ClaimVerdict.UNDECIDED and f.verdict is ClaimVerdict.HOLDS_IN_PART
    assert_snapshot("lesson03.annulus-nfe-undecided", f.markdown())


def test_negation_markdown_and_table():
    resolved = {
        "1-D flow": [0.379, 0.380, 0.381],
        "R^2 flow + projection": [1e-4, 2e-4, 3e-4],
        "1-D flow + linear": [1e-4, 1e-4, 2e-4],
    }
    f = L.NegationFindings((0, 1, 2), resolved, resolved, 0.3778, 1e-7, L.negation_parts(resolved, 0.3778))
    assert f.floor == 0.3778 and f.verdict is ClaimVerdict.HOLDS and len(f.seeds) == 3
    assert (min(f.mse_resolved["1-D flow"]), max(f.mse_resolved["1-D flow"])) == (0.379, 0.381)
    assert (min(f.mse_resolved["R^2 flow + projection"]), max(f.mse_resolved["R^2 flow + projection"])) == (1e-4, 3e-4)
    assert_snapshot("lesson03.negation-holds", f.markdown())
    assert_snapshot("lesson03.negation-table", f.table())  # the floor and one line per model


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
    assert f.folded == [0] and f.judged.below_bound == 1 and f.step_size == 0.25
    assert f.values["1-D h*Lip(f)"][0] == 3.1 > f.rk4_invertible_hlip == L.rk4_invertible_hlip()
    assert f.values["1-D + linear re-solved"][0] >= f.bound - L.RESOLVE_SLACK  # the flow itself is monotone
    assert f.verdict is ClaimVerdict.HOLDS
    assert_snapshot("lesson03.abs-folds", f.markdown())
    assert "+0.20" in f.table()


def test_abs_markdown_when_no_seed_folds_is_undecided():
    f = _abs([0.2, 0.3, 0.4])
    assert f.folded == [] and f.judged.below_bound == 0
    assert f.judged.parts["fixed-step 1-D model learns a non-invertible map"] is ClaimVerdict.UNDECIDED
    assert_snapshot("lesson03.abs-no-fold", f.markdown())


def test_abs_markdown_flags_a_resolve_below_the_bound():
    f = _abs([1e-5, 0.2, 0.3], resolved=(0.01, 0.19, 0.17))
    assert f.values["1-D + linear re-solved"][0] < f.bound - L.RESOLVE_SLACK and f.folded == [0]
    assert f.judged.parts["1-D flow + linear cannot"] is ClaimVerdict.DOES_NOT_HOLD
    assert "not accurate" in f.markdown() and f.verdict is ClaimVerdict.HOLDS_IN_PART
    assert_snapshot("lesson03.abs-resolve-below-bound", f.markdown())


@pytest.mark.parametrize("cls", [L.AnnulusFindings, L.NegationFindings, L.AbsFindings, L.JudgedParts])
def test_findings_are_frozen(cls):
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
