"""Lesson 5's findings render the numbers and verdicts they hold, built from small hand-made study results."""

from __future__ import annotations

import pytest
from physionet_fixtures import synthetic_set
from snapshot_support import assert_snapshot

from conftest import subprocess_timeout
from nodecourse.claims import ClaimVerdict
from nodecourse.lessons import lesson05 as L
from nodecourse.lessons.lesson05 import curve
from nodecourse.lessons.study import Findings


def _study(aucs: dict[str, list[float]], source: str = "shared", config=L.QUICK_STUDY) -> L.AUCStudy:
    runs = tuple(
        L.ModelRun(m, seed, a, 2.0 + seed, 1.0, 1, 400, 120) for m, v in aucs.items() for seed, a in enumerate(v)
    )
    return L.AUCStudy(config, source, 4000, runs)


def test_data_findings_quote_counts_variables_and_the_published_scale():
    f = L.DataFindings("shared", 4000, 554, 1.0, 49, ("HR", "pH"), ("Age", "Gender"))
    assert isinstance(f, Findings)
    assert (f.n_patients, f.n_deaths, f.variables, f.descriptors) == (4000, 554, ("HR", "pH"), ("Age", "Gender"))
    assert not f.synthetic and L.PUBLISHED_PATIENTS == 3200
    split = L.split_sizes(4000, L.FULL_STUDY.test_fraction, L.FULL_STUDY.val_fraction)
    assert (split["train"], split["val"], split["train"] + split["val"]) == (2800, 400, 3200)  # 400 fewer
    text = f.markdown()
    # the sentence that said the number of patients cannot explain a gap is gone: no full learning curve decides it
    assert "does not explain a gap" not in text and "published scale" not in text
    assert "SYNTHETIC" not in text and f._repr_markdown_() == text
    assert_snapshot("lesson05.data-shared", text)


def test_data_findings_warn_loudly_on_the_synthetic_stand_in():
    f = L.DataFindings("synthetic", 300, 40, 1.0, 49, ("HR",), ("Age",))
    assert f.synthetic and f.markdown().startswith("## ⚠ SYNTHETIC DATA")  # the warning comes first
    split = L.split_sizes(300, L.FULL_STUDY.test_fraction, L.FULL_STUDY.val_fraction)
    assert (split["train"], split["train"] + split["val"]) == (210, 240)
    assert_snapshot("lesson05.data-synthetic", f.markdown())


def test_data_findings_count_the_split_the_study_makes(tmp_path):
    """The patients quoted are those PhysioNetSet.split gives at the full study's fractions, not rounded shares."""
    data = synthetic_set(tmp_path, 57, seed=0, quantization=1.0)
    sizes = L.split_sizes(len(data), L.FULL_STUDY.test_fraction, L.FULL_STUDY.val_fraction)
    parts = data.split(test=L.FULL_STUDY.test_fraction, val=L.FULL_STUDY.val_fraction, seed=3)
    assert {k: len(v) for k, v in parts.items()} == sizes and sum(sizes.values()) == 57
    text = L.DataFindings.from_data(data).markdown()
    assert f"trains on **{sizes['train']} patients**" in text and f"sets {sizes['val']} of them aside" in text


def test_scaling_findings_table_has_one_row_per_variable():
    f = L.ScalingFindings.from_rows(
        [L.ScalingRow("Na", 100.0, 200.0, 0.5, 0.1, 0.2), L.ScalingRow("pH", 1.0, 7.8, 0.872, 0.05, 0.058)]
    )
    assert [r.variable for r in f.rows] == ["Na", "pH"]
    assert_snapshot("lesson05.scaling-table", f.markdown())  # one row per variable, in that order


def test_auc_findings_show_table_gaps_and_verdicts_per_scale():
    aucs = {"odernn": [0.80, 0.82, 0.81], "gru-d": [0.81, 0.83, 0.825], "gru-dt": [0.70, 0.72, 0.71]}
    f = L.AUCFindings.from_study(_study(aucs), "quick")
    assert (f.mode, f.n_patients, f.synthetic) == ("quick", 600, False)
    rows = {m.model: (round(m.mean, 3), round(m.sd, 3), m.n_seeds, m.seconds_per_run) for m in f.models}
    assert rows["odernn"] == (0.81, 0.01, 3, 3.0) and set(rows) == {"odernn", "gru-d", "gru-dt"}
    gaps = {g.baseline: g for g in f.gaps}
    # ODE-RNN − GRU-D = [-0.01, -0.01, -0.015]: wholly below the published range +0.003 to +0.027
    assert gaps["gru-d"].verdict is ClaimVerdict.DOES_NOT_HOLD and gaps["gru-d"].published_gap == pytest.approx(0.015)
    # ODE-RNN − GRU-Δt = +0.10 on every seed: above 0 (the course's model, judged against 0), though well above
    # the paper's RNN-Δt range (+0.029 to +0.063), which is shown, not judged
    assert gaps["gru-dt"].verdict is ClaimVerdict.HOLDS and gaps["gru-dt"].published is None
    assert gaps["gru-dt"].reference.gap == pytest.approx(0.046)
    assert gaps["gru-d"].interval.mean == pytest.approx(-0.0117, abs=1e-4)
    assert gaps["gru-dt"].interval.mean == pytest.approx(0.1)
    # the table beside the published one, the gaps' rows and the quick-mode note (the ledger says undecided)
    assert_snapshot("lesson05.auc-quick", f.markdown())


def test_auc_findings_with_one_seed_say_too_few_seeds_and_undecided():
    f = L.AUCFindings.from_study(_study({"odernn": [0.8], "gru-d": [0.79]}, config=L.FULL_STUDY), "full")
    assert (f.mode, f.n_patients) == ("full", 4000)
    (gap,) = f.gaps
    assert gap.interval is None and gap.n_seeds == 1 and gap.verdict is ClaimVerdict.UNDECIDED
    assert [(m.model, m.mean, m.sd, m.n_seeds) for m in f.models][0] == ("odernn", 0.8, 0.0, 1)
    assert "quick rows" not in f.markdown()
    assert_snapshot("lesson05.auc-one-seed-full", f.markdown())


def test_auc_findings_without_odernn_show_no_gaps():
    f = L.AUCFindings.from_study(_study({"latent-ode": [0.7, 0.75]}, source="synthetic"), "quick")
    assert f.gaps == () and f.synthetic and "paired per seed" not in f.markdown()
    assert_snapshot("lesson05.auc-synthetic-no-odernn", f.markdown())


def _curve_result(sizes=(20, 40)) -> curve.CurveResult:
    config = curve.CurveConfig(sizes=sizes, seeds=(0, 1), models=("gru-d",), settings="course", epochs=1)
    # AUCs in (0, 1) at any sizes: 0.6, rising 0.05 a size, 0.01 a seed
    points = tuple(
        curve.CurvePoint("gru-d", n, s, 0.6 + 0.05 * i + 0.01 * s, 50, 1.0) for i, n in enumerate(sizes) for s in (0, 1)
    )
    return curve.CurveResult(config, points, "shared", 1.0, "x86_64, Linux, torch threads 1", 12.0)


def test_curve_findings_say_quick_sizes_and_that_the_full_curve_is_not_measured():
    f = L.CurveFindings.from_curve(_curve_result(), "quick")
    assert (f.mode, f.full_measured) == ("quick", False)
    assert (f.result.config.sizes, f.result.config.settings) == ((20, 40), "course")
    assert [(s.n_train, s.n_seeds, round(s.mean, 3)) for s in f.result.summary()] == [(20, 2, 0.605), (40, 2, 0.655)]
    text = f.markdown()
    # the "not measured" statement a quick run must make, with the command that measures it
    assert "Not measurable at this scale: the curve at the published settings" in text and L.FULL_CURVE_COMMAND in text
    assert_snapshot("lesson05.curve-gru-d-quick", text)
    assert "python -m nodecourse.lessons.lesson05.curve --full" in L.FULL_CURVE_COMMAND


def test_curve_findings_of_a_full_run_do_not_claim_it_is_missing():
    f = L.CurveFindings.from_curve(_curve_result((1000, 2000)), "full", full_measured=True)
    assert f.full_measured and f.result.config.sizes == (1000, 2000) and "not measured" not in f.markdown()
    assert_snapshot("lesson05.curve-gru-d-full", f.markdown())


def test_published_settings_render_their_sources():
    from nodecourse.models import PHYSIONET_PUBLISHED

    text = PHYSIONET_PUBLISHED._repr_markdown_()
    assert "train_patients" in text and "3200" in text and "parse_datasets.py" in text


def test_lesson_studies_share_the_one_cache():
    from nodecourse.lessons.study import cached_studies

    assert L.auc_study in cached_studies() and L.curve_study in cached_studies()
    with pytest.raises(TypeError, match="hashable"):
        L.auc_study({"seeds": [0]})


def test_auc_study_merges_only_studies_on_the_same_splits():
    a = _study({"odernn": [0.8, 0.81, 0.82]})
    b = _study({"latent-ode": [0.79, 0.8, 0.78]})
    merged = a.merged(b)
    assert merged.models == ("odernn", "latent-ode") and merged.aucs("latent-ode") == (0.79, 0.8, 0.78)
    with pytest.raises(ValueError, match="share seeds"):
        a.merged(_study({"latent-ode": [0.7]}, config=L.FULL_STUDY))


def test_the_curve_command_runs_as_a_module_without_warnings():
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-m", "nodecourse.lessons.lesson05.curve", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=subprocess_timeout(),
    )
    assert out.returncode == 0, out.stderr
    assert "--full" in out.stdout
