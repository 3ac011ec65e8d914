"""Lesson 3's ledger rows, measured at quick-mode size: the annulus across three seeds and
h(x) = -x three ways. These are the lesson's "must show" statements, checked by code.

Seeds tried while choosing the quick sizes: 0-4 for the annulus (all five hold), 0-2 for h(x) = -x.
"""
import pytest
import torch

from nodecourse.claims import REGISTRY, Verdict, load_rows, run_claims
from nodecourse.lessons import lesson03 as L

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def annulus_runs():
    return L.annulus_study(L.QUICK_ANNULUS)


def test_plain_node_has_a_wrong_arc_on_every_seed_even_at_high_sample_accuracy(annulus_runs):
    node = [r for r in annulus_runs if r.model_name == "NODE"]
    assert len(node) >= 3
    for r in node:
        assert r.probes[1.25].min_margin < 0, (r.seed, r.probes[1.25])
        assert r.probes[1.25].misclassified > 0
        # the theorem: every circle inside the ring carries a wrong arc
        assert all(r.probes[rad].min_margin < 0 for rad in (1.05, 1.45)), r.seed
    # "even when its sample accuracy is high": at least one seed scores >= 97 % on its samples
    assert max(r.sample_accuracy for r in node) >= 0.97


def test_anode_and_resnet_have_a_positive_margin_on_the_whole_circle(annulus_runs):
    for r in annulus_runs:
        if r.model_name in ("ANODE", "ResNet"):
            assert r.probes[1.25].min_margin > 0, (r.model_name, r.seed, r.probes[1.25].min_margin)
            assert r.sample_accuracy == 1.0


def test_node_needs_at_least_the_nfe_of_anode_at_the_end(annulus_runs):
    f = L.annulus_findings(annulus_runs)
    assert all(f["node_nfe_at_least_anode"].values()), f
    assert f["holds"]


def test_models_are_matched_in_size(annulus_runs):
    sizes = {r.model_name: r.n_parameters for r in annulus_runs}
    assert max(sizes.values()) / min(sizes.values()) < 1.1, sizes


def test_negation_three_ways():
    results = L.negation_study(L.QUICK_NEGATION)
    mse = {name: results[name][2] for name in L.NEGATION_MODELS}
    assert mse["1-D flow"] >= 1 / 3 - 0.02, mse
    assert mse["R^2 flow + projection"] < 0.01, mse
    assert mse["1-D flow + linear"] < 0.01, mse


def test_rows_are_registered_and_their_verdicts_computed():
    load_rows()
    assert {"annulus", "augmentation-2p"} <= set(REGISTRY)
    results = run_claims(["annulus", "augmentation-2p"], quick=True)  # cached runs: no retraining
    assert [r.verdict for r in results] == [Verdict.HOLDS, Verdict.HOLDS], [r.measured for r in results]
    assert "NODE sample acc" in results[0].measured


def test_findings_turn_false_when_the_evidence_does():
    # The verdict is computed: swap the NODE and ANODE runs and the row must fail.
    runs = L.annulus_study(L.QUICK_ANNULUS)
    swapped = []
    for r in runs:
        name = {"NODE": "ANODE", "ANODE": "NODE"}.get(r.model_name, r.model_name)
        swapped.append(L.AnnulusRun(name, r.seed, r.model, r.log, r.n_parameters, r.sample_accuracy, r.probes))
    assert not L.annulus_findings(swapped)["holds"]
    bad = {name: (None, None, 0.5) for name in L.NEGATION_MODELS}
    assert not L.negation_findings(bad)["holds"]


def test_unknown_model_names_raise():
    with pytest.raises(ValueError, match="'MLP'"):
        L.build_annulus_model("MLP", L.QUICK_ANNULUS)
    with pytest.raises(ValueError, match="'2-D flow'"):
        L.build_negation_model("2-D flow", L.QUICK_NEGATION)
