"""Lesson 8's findings, built from small hand-made study results: the sentence follows the numbers."""

import torch

from nodecourse.lessons import lesson08 as L


def _study(
    bias_z=(0.5, -1.0, 0.2), variances=(0.8, 0.4, 0.2), predicted_single=0.8, slope=-1.0, noise="rademacher"
) -> L.TraceStudy:
    ms = (1, 2, 4)
    rows = tuple(
        L.ProbeRow(m, -0.2, v, (v / 100) ** 0.5, z, predicted_single / m) for m, v, z in zip(ms, variances, bias_z)
    )
    config = L.TraceStudyConfig(repeats=100, probes=ms, noise=noise)
    return L.TraceStudy(config, -0.21, rows, slope, predicted_single)


def test_linear_flow_findings_say_match_and_visibly_wrong():
    good = L.LinearFlowFindings(L.LinearFlowCheck(1.3e-7, 1.48, 1.477, 128, 1e-9))
    text = good.markdown()
    assert good.matches and good.dropping_is_wrong
    assert "1.3e-07" in text and "1.48" in text and "128 evaluations" in text and "matches it" in text


def test_linear_flow_findings_report_a_wrong_cnf():
    bad = L.LinearFlowFindings(L.LinearFlowCheck(0.3, 0.05, 0.2, 40, 1e-9))
    text = bad.markdown()
    assert not bad.matches and "wrong here" in text and "too little to tell apart" in text


def test_logdet_findings_agree_and_disagree():
    assert "agree" in L.LogdetFindings(L.LogdetCheck(3.4e-10, 0.45, 44, 3)).markdown()
    off = L.LogdetFindings(L.LogdetCheck(0.02, 0.45, 44, 3))
    assert not off.agree and "disagree" in off.markdown() and "2.0e-02" in off.markdown()


def test_hutchinson_findings_holding():
    f = L.HutchinsonFindings.from_study(_study())
    text = f.markdown()
    assert f.holds and f.formula_ratio == 1.0
    assert "**Unbiased**" in text and "falls" in text and "predicts" in text
    assert "| 4 |" in text and "1.0 standard errors" in text and "-1.00" in text and "within 20 %" in text


def test_hutchinson_findings_name_each_failure():
    f = L.HutchinsonFindings.from_study(_study(bias_z=(0.5, 9.0, 0.2), slope=-0.5, predicted_single=0.5))
    text = f.markdown()
    assert not (f.unbiased or f.slope_ok or f.formula_ok) and not f.holds
    assert "**Biased**" in text and "9.0 standard errors" in text
    assert "does not fall" in text and "-0.50" in text
    assert "misses" in text and "1.60" in text


def test_probe_noise_findings_either_way():
    rad, gauss = _study(), _study(variances=(0.95, 0.5, 0.25), predicted_single=0.9, noise="gaussian")
    text = L.ProbeNoiseFindings(rad, gauss).markdown()
    assert "Rademacher 0.800" in text and "Gaussian 0.950" in text and "less noisy" in text
    flipped = L.ProbeNoiseFindings(gauss, rad)
    assert not flipped.rademacher_lower and "sampling noise" in flipped.markdown()


def _run(test_nll, gaussian, nfe=(20, 26, 32), iterations=3) -> L.FlowRun:
    config = L.FlowConfig(iterations=iterations, batch=8)
    return L.FlowRun(
        config,
        "adjoint",
        model=torch.nn.Linear(1, 1),
        losses=[2.0, 1.9, 1.8],
        nfe_forward=list(nfe),
        nfe_backward=[30, 31, 33],
        seconds=2.0,
        test_nll=test_nll,
        gaussian_test_nll=gaussian,
        test_nfe=20,
    )


def test_flow_findings_beat_or_not():
    good = L.FlowFindings(_run(1.829, 2.719))
    text = good.markdown()
    assert good.beats_gaussian and good.work_logged
    assert "**beats**" in text and "1.829" in text and "2.719" in text and "from 20 to 32" in text
    bad = L.FlowFindings(_run(2.9, 2.719))
    assert "**does not beat**" in bad.markdown()


def test_flow_findings_notice_missing_work_logs():
    assert not L.FlowFindings(_run(1.8, 2.7, nfe=(20, 0, 30))).work_logged
    assert not L.FlowFindings(_run(1.8, 2.7, nfe=(20, 30), iterations=3)).work_logged
