"""Lesson 5's ledger rows say what they measure: the settings they ran with, the published gap with the
range the paper's spreads give it, and the course's GRU-Δt beside (never against) the paper's RNN-Δt."""

from __future__ import annotations

import math

import pytest
from physionet_fixtures import synthetic_set

from nodecourse.claims import ClaimVerdict
from nodecourse.lessons import lesson05 as L
from nodecourse.models import _physionet_settings as ps


def _study(aucs, config, *, n_train=2800, n_test=800, n_set=4000, source="shared"):
    runs = tuple(
        L.ModelRun(m, seed, a, 1.0, 1.0, 1, n_train, n_test) for m, v in aucs.items() for seed, a in enumerate(v)
    )
    return L.AUCStudy(config, source, n_set, runs)


ODE = [0.845, 0.838, 0.850, 0.836, 0.842]


def _aucs(gaps: dict[str, list[float]]) -> dict[str, list[float]]:
    return {"odernn": ODE} | {m: [round(o - g, 4) for o, g in zip(ODE, gs)] for m, gs in gaps.items()}


# --- the published gap and its range -------------------------------------------------------------


def test_published_gap_range_is_derived_from_the_published_spreads():
    """ODE-RNN − GRU-D: 0.833 − 0.818 ± sqrt(0.009² + 0.008²), the two ± combined as independent sds."""
    g = L.published_gap("odernn", "gru-d")
    (ma, sa), (mb, sb) = L.PUBLISHED["odernn"], L.PUBLISHED["gru-d"]
    assert g.gap == pytest.approx(ma - mb) and g.sd == pytest.approx(math.sqrt(sa**2 + sb**2))
    assert (g.lo, g.hi) == pytest.approx((0.015 - 0.012042, 0.015 + 0.012042), abs=1e-6)
    # the issue read the spreads as "about +0.004 to +0.026": this rule agrees to within 0.0011 at each end
    assert abs(g.lo - 0.004) < 0.0011 and abs(g.hi - 0.026) < 0.0011
    assert L.PUBLISHED_GAPS == {"gru-d": g} and g.text() == "+0.015 ± 0.012 (+0.003 to +0.027)"
    assert "sqrt(sd_a² + sd_b²)" in L.GAP_RULE and "sqrt(sd_a² + sd_b²)" in L.GRUD_THRESHOLD.text
    with pytest.raises(ValueError, match="b='gru-dt' has no published AUC"):
        L.published_gap("odernn", "gru-dt")


def test_the_published_text_states_the_range_and_the_test_set_selection():
    from nodecourse.claims import load_rows

    rows = load_rows()
    for rid in ("physionet-auc", "physionet-gru-d"):
        assert "+0.015 ± 0.012 (+0.003 to +0.027)" in rows[rid].published
        assert "selected on the test set" in rows[rid].published
    assert "another model" in rows["physionet-auc"].threshold.text


# --- judging against a range ---------------------------------------------------------------------

LO, HI = 0.003, 0.027


@pytest.mark.parametrize(
    "diffs, verdict, words",
    [
        ([0.012, 0.015, 0.013, 0.016, 0.014], ClaimVerdict.HOLDS, "overlaps"),  # inside the range
        ([0.02, 0.03, 0.025, 0.035, 0.028], ClaimVerdict.HOLDS, "overlaps"),  # overlaps its high end
        ([-0.01, 0.012, 0.004, -0.006, 0.01], ClaimVerdict.UNDECIDED, "contains 0"),  # overlaps it and 0
        ([-0.01, -0.012, -0.008, -0.011, -0.009], ClaimVerdict.DOES_NOT_HOLD, "wholly below"),  # outside, below
        ([0.05, 0.052, 0.048, 0.051, 0.049], ClaimVerdict.DOES_NOT_HOLD, "wholly above"),  # outside, above
        ([0.015, 0.016], ClaimVerdict.UNDECIDED, "too few"),
    ],
)
def test_a_paired_interval_is_judged_against_the_published_range(diffs, verdict, words):
    got, iv, reason = L.judge_gap_range(diffs, LO, HI)
    assert got is verdict and words in reason
    if iv is not None and verdict is ClaimVerdict.DOES_NOT_HOLD:
        assert iv.hi < LO or iv.lo > HI
    elif iv is not None:
        assert iv.hi >= LO and iv.lo <= HI  # overlaps: never "does not hold"


def test_a_range_given_high_end_first_is_refused():
    with pytest.raises(ValueError, match="lo=0.027 > hi=0.003"):
        L.judge_gap_range([0.01, 0.02, 0.03], HI, LO)


def test_an_interval_below_the_point_gap_but_overlapping_the_range_no_longer_fails():
    """The old reading (the published +0.015 as exact) failed this interval; against the range it is undecided."""
    diffs = [-0.03, 0.01, -0.02, 0.015, -0.025, 0.005, -0.012, 0.009]
    g = L.judge_gap(_paired("gru-d", diffs), "gru-d")
    assert g.interval.hi < g.published_gap and g.interval.hi > g.published.lo
    assert g.verdict is ClaimVerdict.UNDECIDED


def _paired(baseline, diffs):
    base = [0.82] * len(diffs)
    return {"odernn": [b + d for b, d in zip(base, diffs)], baseline: base}


# --- GRU-Δt is the course's model --------------------------------------------------------------------


@pytest.mark.parametrize(
    "diffs, verdict",
    [
        ([0.02, 0.025, 0.018, 0.022, 0.02], ClaimVerdict.HOLDS),  # wholly below RNN-Δt's range, above 0
        ([0.01, -0.012, 0.015, -0.009, 0.004], ClaimVerdict.UNDECIDED),  # contains 0
    ],
)
def test_gru_dt_is_judged_against_0_with_the_papers_rnn_dt_shown_not_judged(diffs, verdict):
    g = L.judge_gap(_paired("gru-dt", diffs), "gru-dt")
    ref = L.REFERENCE_GAPS["gru-dt"]
    assert g.published is None and g.published_gap is None and g.reference == ref
    assert ref == L.published_gap("odernn", "rnn-dt") and g.interval.hi < ref.lo  # below RNN-Δt's whole range
    assert g.verdict is verdict  # the same verdict judge() gives against 0
    assert g.as_dict()["reference_not_judged"]["gap"] == pytest.approx(0.046)
    text = L.rows.gap_text(g)
    assert "GRU-Δt (the course's model)" in text and "vs 0" in text and "RNN-Δt, another model" in text
    assert "(shown, not judged)" in text


def test_the_auc_row_never_fails_on_the_rnn_dt_gap(monkeypatch):
    """ODE-RNN ahead of GRU-Δt by +0.02 (half RNN-Δt's +0.046): the row holds, and says which model is whose."""
    aucs = _aucs({"gru-d": [0.02, 0.025, 0.018, 0.022, 0.02], "gru-dt": [0.02, 0.025, 0.018, 0.022, 0.02]})
    monkeypatch.setattr(L.studies, "auc_study", lambda config, progress=False: _study(aucs, config))
    m = L.measure_physionet_auc(False)
    assert m.verdict is ClaimVerdict.HOLDS
    assert m.details["ahead"]["gru-dt"]["published_gap"] is None
    assert "the paper's RNN-Δt, another model, trailed by +0.046" in m.measured


# --- the settings each row ran with ------------------------------------------------------------------


def test_full_row_text_says_the_settings_the_study_used(monkeypatch):
    aucs = _aucs({"gru-d": [0.02, 0.025, 0.018, 0.022, 0.02]})
    monkeypatch.setattr(L.studies, "auc_study", lambda config, progress=False: _study(aucs, config))
    m = L.measure_physionet_gru_d(False)
    st, cfg = ps.PHYSIONET_COURSE, L.FULL_STUDY
    assert cfg.training == ps.PHYSIONET_COURSE.quick(epochs=cfg.epochs)
    for piece in (
        "course settings",
        f"{cfg.quantization:g}-hour grid",
        f"{st.ode_rnn_hidden}-unit recurrent states",
        f"{st.ode_layers + 1} hidden layers × {st.ode_units} units",
        f"Adam lr {st.lr:g} with cosine decay",
        f"batches of {st.batch_size}",
        f"up to {cfg.epochs} epochs",
        "each seed trains on 2,800 of 4,000 patients of set A (400 choose the epoch, 800 are tested)",
        f"{len(cfg.seeds)} seeds",
        "published settings: 1-minute grid, 20-unit states, Adamax lr 0.01, 100 epochs, 3,200 training patients",
    ):
        assert piece in m.measured, piece
    assert "split 80/20 as published" not in m.measured
    assert m.details["settings"] == cfg.training.as_dict()


def test_row_text_follows_the_config_not_a_fixed_sentence(monkeypatch):
    """Another study config (published settings, 7 epochs, 5 seeds, 300 patients): the text changes with it."""
    cfg = L.AUCStudyConfig(
        seeds=tuple(range(5)), n_patients=300, epochs=7, val_fraction=0.1, settings="published", quantization=1 / 60
    )
    aucs = _aucs({"gru-d": [0.02, 0.025, 0.018, 0.022, 0.02]})
    monkeypatch.setattr(L.rows, "QUICK_STUDY", cfg)
    monkeypatch.setattr(
        L.studies, "auc_study", lambda config, progress=False: _study(aucs, config, n_train=210, n_test=60)
    )
    m = L.measure_physionet_gru_d(True)
    assert m.verdict is ClaimVerdict.UNDECIDED and m.seeds == 5
    for piece in (
        "quick mode (published settings: 1-minute grid",
        "20-unit recurrent states",
        "Adamax lr 0.01",
        "up to 7 epochs",
        "each seed trains on 210 of 300 patients of set A (30 choose the epoch, 60 are tested); 5 seeds",
    ):
        assert piece in m.measured, piece


def test_the_stand_in_is_named_in_the_row_text(monkeypatch):
    aucs = _aucs({"gru-d": [0.02, 0.025, 0.018, 0.022, 0.02]})
    monkeypatch.setattr(L.studies, "auc_study", lambda config, progress=False: _study(aucs, config, source="synthetic"))
    m = L.measure_physionet_gru_d(False)
    assert m.verdict is ClaimVerdict.NOT_MEASURABLE
    assert "patients of the synthetic stand-in" in m.measured and "patients of set A" not in m.measured


def test_the_study_trains_every_model_with_its_configs_settings(tmp_path, monkeypatch):
    """What the row text reads (``config.training``) is what ``fit_mortality`` receives, and the grid is the load's."""
    from nodecourse.data import physionet
    from nodecourse.models import latent

    data = synthetic_set(tmp_path, 40, seed=0, quantization=1.0)
    loads, fits = [], []
    monkeypatch.setattr(physionet, "load", lambda *a, **kw: loads.append(kw) or data)

    def fake_fit(name, train, test, **kw):
        fits.append((name, kw))
        return None, latent.FitResult(name, 0.5, len(train), len(test), 0.0, 1, kw["seed"])

    monkeypatch.setattr(latent, "fit_mortality", fake_fit)
    cfg = L.AUCStudyConfig(models=("gru-dt", "odernn"), seeds=(0, 1), epochs=4, val_fraction=0.1)
    study = L.studies._run_study(cfg, False)
    assert [kw["quantization"] for kw in loads] == [cfg.quantization]
    assert [n for n, _ in fits] == ["gru-dt", "odernn"] * 2
    assert all(kw["settings"] == cfg.training and kw["settings"].epochs == 4 for _, kw in fits)
    assert "epochs" not in fits[0][1]  # the epochs travel inside the settings, one source
    assert {r.n_train for r in study.runs} == {L.split_sizes(40, 0.2, 0.1)["train"]}


def test_a_study_config_whose_grid_is_not_its_settings_grid_is_refused():
    with pytest.raises(ValueError, match="quantization=1.0 h differs from the 'published' settings' grid"):
        L.AUCStudyConfig(settings="published")
    with pytest.raises(ValueError, match="settings='hourly': use one of"):
        L.AUCStudyConfig(settings="hourly")
    assert L.AUCStudyConfig(settings="published", quantization=1 / 60).training.optimizer == "adamax"
