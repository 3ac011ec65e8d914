"""One rule for published figures measured at a scale this machine cannot run (ImageNet, WikiText-103, MNIST
at FFJORD's scale, a GPU's wall clock, ...): the row declares it (``published_scale``), the published figure's
part is "not measurable at this scale", and the course's analogue is judged beside it on the course's own
threshold. Checked over every registered row, without running any (the runner checks each such row's parts
when it runs: ``check_unrun_scale``)."""

from __future__ import annotations

import pytest

from nodecourse.claims import (
    UNRUN_SCALE_WORDS,
    ClaimVerdict,
    Measurement,
    Threshold,
    check_unrun_scale,
    claim,
    combine,
    load_rows,
    run_claims,
    unrun_scale_parts,
    unrun_scale_words,
)
from nodecourse.claims._registry import REGISTRY, ClaimSpec

# The rows whose published figures are at a scale the course does not run, as of this rule: a new row that
# quotes such a figure joins the list below by declaring published_scale (and this test says so if it does not).
EXPECTED = {
    "jacobian-regularization": "WikiText-103",
    "mdeq-truncation": "ImageNet",
    "capstone-accuracy-parity": "MNIST",
    "deq-inference-cost": "WikiText-103 and ImageNet",
    "deq-memory-reduction": "WikiText-103",
    "kinetic-regularization-nfe": "FFJORD on MNIST, GPU wall clock",
    "ncde-vs-odernn": "CharacterTrajectories, PhysioNet 2019 sepsis and Speech Commands",
}


def _texts(spec: ClaimSpec) -> str:
    """Where a row quotes its published figure: the published column and the claim itself."""
    return f"{spec.published} {spec.claim}"


def test_every_row_that_quotes_an_unrun_scale_declares_it():
    registry = load_rows()
    undeclared = {
        rid: unrun_scale_words(_texts(spec))
        for rid, spec in registry.items()
        if unrun_scale_words(_texts(spec)) and not spec.published_scale
    }
    assert not undeclared, (
        f"rows quote a published figure at a scale the course does not run without published_scale=: {undeclared}"
    )
    declared = {rid: spec.published_scale for rid, spec in registry.items() if spec.published_scale}
    assert declared == EXPECTED


@pytest.mark.parametrize("rid", sorted(EXPECTED))
def test_each_declared_row_follows_the_rule(rid):
    spec = load_rows()[rid]
    # the scale it declares names every data set / hardware word its published text quotes
    for word in unrun_scale_words(_texts(spec)):
        assert word.lower() in spec.published_scale.lower(), (rid, word)
    # the analogue is judged on the course's own threshold, which says why and that the figure is not measured
    assert spec.threshold.kind == "course" and spec.threshold.why.strip()
    assert "not measurable" in spec.threshold.text


def test_the_word_list_names_data_sets_and_hardware_and_matches_any_case():
    assert {"ImageNet", "WikiText", "CIFAR", "MNIST", "GPU"} <= set(UNRUN_SCALE_WORDS)
    assert unrun_scale_words("a gpu's wall clock on cifar-10") == ["CIFAR", "GPU"]
    assert unrun_scale_words("sklearn's 8x8 digits on this CPU") == []
    assert unrun_scale_words("the solver's output on TPUs") == ["TPU"]  # a word's start, not inside "output"


def test_unrun_scale_parts_put_the_published_figure_first_and_never_let_it_hold():
    parts = unrun_scale_parts("ImageNet", {"analogue": ClaimVerdict.HOLDS})
    assert list(parts.items())[0] == ("published figure (ImageNet)", ClaimVerdict.NOT_MEASURABLE)
    assert combine(parts) is ClaimVerdict.HOLDS_IN_PART  # at most "holds in part": the figure is not measured
    assert combine(unrun_scale_parts("ImageNet", {"analogue": ClaimVerdict.DOES_NOT_HOLD})) is (
        ClaimVerdict.DOES_NOT_HOLD
    )
    with pytest.raises(ValueError, match="analogue"):
        unrun_scale_parts("ImageNet", {})
    with pytest.raises(ValueError, match="scale"):
        unrun_scale_parts(" ", {"analogue": ClaimVerdict.HOLDS})


def _fake_spec(measure, scale="ImageNet"):
    return ClaimSpec(
        "fake",
        "a claim",
        "a paper",
        "ImageNet: 77 %",
        "99",
        measure,
        Threshold("the ImageNet figure is not measurable here; the analogue ...", "course", why="because"),
        scale,
    )


def test_check_unrun_scale_refuses_a_row_that_judges_the_published_figure_from_a_toy():
    judged_from_toy = Measurement("toy 80 %", ClaimVerdict.HOLDS, {})
    with pytest.raises(ValueError, match="details\\['parts'\\]"):
        check_unrun_scale(_fake_spec(None), judged_from_toy)
    no_published_part = Measurement("toy", ClaimVerdict.HOLDS, {"parts": {"analogue": "holds"}})
    with pytest.raises(ValueError, match="not measurable at this scale"):
        check_unrun_scale(_fake_spec(None), no_published_part)
    parts = unrun_scale_parts("ImageNet", {"analogue": ClaimVerdict.HOLDS})
    wrong_verdict = Measurement("toy", ClaimVerdict.HOLDS, {"parts": {k: v.value for k, v in parts.items()}})
    with pytest.raises(ValueError, match="parts combined"):
        check_unrun_scale(_fake_spec(None), wrong_verdict)
    good = Measurement("toy", ClaimVerdict.HOLDS_IN_PART, {"parts": {k: v.value for k, v in parts.items()}})
    check_unrun_scale(_fake_spec(None), good)  # follows the rule: no error
    check_unrun_scale(_fake_spec(None, scale=""), judged_from_toy)  # a row at our own scale: not this rule


def test_claim_refuses_a_published_threshold_for_a_figure_at_an_unrun_scale():
    with pytest.raises(ValueError, match="kind='course'"):
        claim(
            id="fake-published",
            claim="c",
            source="s",
            published="ImageNet 77 %",
            lesson="99",
            threshold=Threshold("77 % top-1", "published"),
            published_scale="ImageNet",
        )
    with pytest.raises(ValueError, match="not measurable"):
        claim(
            id="fake-silent",
            claim="c",
            source="s",
            published="ImageNet 77 %",
            lesson="99",
            threshold=Threshold("toy accuracy >= 90 %", "course", why="w"),
            published_scale="ImageNet",
        )


def test_the_runner_checks_the_rule_when_a_row_runs(monkeypatch):
    load_rows()
    monkeypatch.setitem(REGISTRY, "fake", _fake_spec(lambda quick: Measurement("toy 80 %", ClaimVerdict.HOLDS, {})))
    with pytest.raises(ValueError, match="not measurable at this scale|details"):
        run_claims(["fake"])
    (result,) = run_claims(["fake"], keep_going=True)
    assert result.verdict is ClaimVerdict.ERROR
