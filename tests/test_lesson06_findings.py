"""Lesson 6's findings render their own Markdown: built here from small hand-made study results, each
checked for its verdict words and the numbers its sentences quote, including undecided verdicts (two seeds)
and failed solves (seeds stuck at the iteration cap)."""

import statistics

import pytest
from snapshot_support import assert_snapshot

from nodecourse.claims import ClaimVerdict
from nodecourse.deq._compare import SolverRun
from nodecourse.deq._training import DEQLog
from nodecourse.lessons import lesson06 as L

EPOCHS = 100


def log(iters, caps=None, rho_end=0.6, rho_max_end=0.9):
    return DEQLog(
        forward_iters=list(iters),
        cap_hits=list(caps or [0] * len(iters)),
        spectral=[
            {"epoch": 0, "rho_mean": 0.1, "rho_max": 0.2, "frac_above_1": 0.0, "converged": 1.0},
            {"epoch": EPOCHS, "rho_mean": rho_end, "rho_max": rho_max_end, "frac_above_1": 0.25, "converged": 1.0},
        ],
    )


def runs_for(seeds, *, reg_iters=8.0, reg_mse=0.11, trunc_mse=0.2, plain_end=30.0, stuck_seed=None):
    config = L.DEQTrainConfig(seeds=tuple(seeds), epochs=EPOCHS, jac_weights=(1.0,), max_iter=40)
    runs = []
    for s in seeds:
        j = 1 + 0.01 * s
        if s == stuck_seed:  # every solve of the last tenth at the cap: a failed solve
            plain = log([5.0] * 90 + [40.0] * 10, [0] * 90 + [1] * 10, rho_max_end=1.4)
        else:
            plain = log([5.0 * j] * 10 + [10.0] * 80 + [plain_end * j] * 10)
        regularised = log([reg_iters * j] * EPOCHS, rho_end=0.2)
        truncated = DEQLog(forward_iters=[5.0] * EPOCHS, cap_hits=[0] * EPOCHS)  # fixed steps: no spectral log
        runs += [
            L.TrainRun("DEQ", s, 0.0, plain, 0.10 * j, 20, 1e-4),
            L.TrainRun(L.reg_variant(1.0), s, 1.0, regularised, reg_mse * j, 8, 1e-4),
            L.TrainRun(L.truncated_variant(config), s, 0.0, truncated, trunc_mse * j, 33, 1e-2),
        ]
    return config, tuple(runs)


def test_growth_findings_quote_the_deciding_reading_and_the_failed_solves():
    config, runs = runs_for(range(5), stuck_seed=4)
    plain = [r for r in runs if r.variant == "DEQ"]
    g = L.GrowthFindings.from_runs(plain, config.max_iter)
    md = g.markdown()
    assert g.decisive is g.readings["first tenth"]
    assert g.seeds_at_cap_at_end == 1 and g.cap_hits["last tenth"] == 10
    assert (g.spectral[-1].seeds_above_1, g.spectral[-1].seeds, g.n_seeds, g.max_iter) == (1, 5, 5, 40)
    # the deciding reading, the failed solves counted and rho at the end, as the learner reads them
    assert_snapshot("lesson06.growth-failed-solves", md)


def test_growth_findings_with_two_seeds_are_undecided_not_judged():
    config, runs = runs_for((0, 1))
    g = L.GrowthFindings.from_runs([r for r in runs if r.variant == "DEQ"], config.max_iter)
    assert g.decisive.verdict is ClaimVerdict.UNDECIDED and g.decisive.lo is None
    assert g.n_seeds == 2 == g.decisive.seeds
    assert_snapshot("lesson06.growth-two-seeds", g.markdown())
    assert "95 % interval" not in g.decisive.text()  # no interval to quote from two seeds


def test_regularization_findings_judge_the_analogue_beside_the_wikitext_figure():
    config, runs = runs_for(range(5), reg_iters=8.0, reg_mse=0.102)  # 8/30 iterations: beyond 12/30
    f = L.RegularizationFindings.from_runs(runs, config, 1.0)
    assert f.parts["published figure (WikiText-103)"] is ClaimVerdict.NOT_MEASURABLE
    assert f.parts["analogue: fewer iterations"] is ClaimVerdict.HOLDS
    assert f.parts["analogue: slightly worse fit"] is ClaimVerdict.HOLDS
    assert f.verdict is ClaimVerdict.HOLDS_IN_PART  # the published part is never decided here
    assert f.weight == 1.0 and f.iters[1] < f.iters[0]
    assert f.fewer["fewer at all"].verdict is ClaimVerdict.HOLDS  # the analogue's reading, which decides
    assert f.fewer["by the published factor"].verdict is ClaimVerdict.HOLDS  # shown beside it, deciding nothing
    assert f.rho_end["with"].rho_mean < f.rho_end["without"].rho_mean  # it pushed f toward contraction
    assert_snapshot("lesson06.regularization-analogue-holds", f.markdown())


def test_regularization_short_of_the_published_factor_does_not_hold_and_a_better_fit_is_named():
    config, runs = runs_for(range(5), reg_iters=22.0, reg_mse=0.05)  # 22 of 30: fewer, but not 12/30; the fit better
    f = L.RegularizationFindings.from_runs(runs, config, 1.0)
    assert f.fewer["by the published factor"].verdict is ClaimVerdict.DOES_NOT_HOLD
    assert f.fewer["fewer at all"].verdict is ClaimVerdict.HOLDS  # the analogue's reading: it decides
    assert "by no more than the published +3.75 %" not in f.worse  # a better fit is not "slightly worse"
    assert f.parts["analogue: slightly worse fit"] is ClaimVerdict.DOES_NOT_HOLD
    assert f.verdict is ClaimVerdict.HOLDS_IN_PART  # fewer iterations holds; the published factor decides nothing
    assert f.worse["worse"].verdict is ClaimVerdict.DOES_NOT_HOLD  # the fit is better, not worse
    assert_snapshot("lesson06.regularization-better-fit", f.markdown())


def test_regularization_with_two_seeds_says_undecided_with_its_count():
    config, runs = runs_for((0, 1))
    f = L.RegularizationFindings.from_runs(runs, config, 1.0)
    assert f.verdict is ClaimVerdict.UNDECIDED
    assert f.seeds == 2 and f.parts["analogue: fewer iterations"] is ClaimVerdict.UNDECIDED
    assert f.fewer["fewer at all"].lo is None  # too few seeds for an interval
    assert_snapshot("lesson06.regularization-two-seeds", f.markdown())


def test_truncation_findings_against_the_published_direction():
    config, runs = runs_for(range(5), trunc_mse=0.05)  # the truncated block fits better on every seed
    t = L.TruncationFindings.from_runs(runs, config)
    assert t.ratio.verdict is ClaimVerdict.DOES_NOT_HOLD and t.truncated_better_on == 5
    assert t.parts["published figure (ImageNet)"] is ClaimVerdict.NOT_MEASURABLE
    assert (t.ratio.seeds, t.truncated_test_iters, t.max_iter) == (5, 33, 40)
    assert_snapshot("lesson06.truncation-against-published", t.markdown())


def test_published_comparison_and_variant_table_quote_every_variant():
    config, runs = runs_for((0, 1))
    growth = L.GrowthFindings.from_runs([r for r in runs if r.variant == "DEQ"], config.max_iter)
    comparison = L.PublishedComparison(
        growth, L.RegularizationFindings.from_runs(runs, config, 1.0), L.TruncationFindings.from_runs(runs, config)
    )
    verdicts = (growth.decisive.verdict, comparison.regularization.verdict, comparison.truncation.verdict)
    assert verdicts == (ClaimVerdict.UNDECIDED,) * 3
    md = comparison.markdown()  # the table, then the regulariser's and the truncation's sentences
    assert md.endswith("- " + comparison.truncation.markdown()) and "- " + comparison.regularization.markdown() in md
    assert_snapshot("lesson06.published-comparison-two-seeds", md)
    variants = L.VariantTable.from_runs(runs, config)
    assert [r.name for r in variants.rows] == ["DEQ", "DEQ + Jacobian reg. 1", L.truncated_variant(config)]
    assert variants.truncated_steps == 5 and variants.rows[-1].cap_hits is None  # n/a: fixed steps
    assert variants.rows[0].test_mse == statistics.median(r.test_mse for r in runs if r.variant == "DEQ")
    assert_snapshot("lesson06.variant-table", variants.markdown())


def test_solver_comparison_marks_unreached_solves_and_quotes_the_ratio():
    study = (
        L.SolverProblemRuns(
            "tanh",
            0.99,
            (SolverRun("nodecourse", "picard", 1500, False, 1e-6), SolverRun("nodecourse", "anderson", 40, True, 1e-9)),
        ),
    )
    c = L.SolverComparison.from_study(study)
    (p,) = c.problems
    assert p.cells == (">1500", "40") and not p.reached and not p.half_of_picard  # Picard never got there
    assert p.ratio == pytest.approx(40 / 1500) and c.verdict is ClaimVerdict.DOES_NOT_HOLD
    assert_snapshot("lesson06.solver-comparison-picard-unreached", c.markdown())


@pytest.mark.parametrize("ratios", [[1.0, 0.0], [float("nan"), 1.0]])
def test_ratios_must_be_positive_and_finite(ratios):
    with pytest.raises(ValueError):
        L.judge_ratio_effect(ratios, 0.4)


def test_ratios_are_judged_by_the_median_not_a_mean():
    # one failed seed (0.001x) drags a mean or a t-interval on logs down past 3x; the median's interval does not
    heavy = [3.4, 3.5, 3.6, 3.7, 3.8, 3.9, 4.0, 4.1, 4.2, 0.001]
    j = L.judge_ratio(heavy, 3.0)
    assert j.median == pytest.approx(3.75)
    # ten values: the interval is [x_(2), x_(9)] = [3.4, 4.1] (coverage 0.98), wholly above 3x
    assert (j.lo, j.hi) == (3.4, 4.1) and j.confidence == pytest.approx(0.9785, abs=1e-4)
    assert j.verdict is ClaimVerdict.HOLDS
    assert_snapshot("lesson06.ratio-median-interval", j.text())


def test_a_tie_is_not_fewer_nor_worse():
    # "fewer" and "worse" are strict: an interval ending exactly on 1 is undecided, wholly at 1 does not hold
    assert L.judge_ratio([0.5, 0.6, 0.7, 0.8, 1.0], 1.0, above=False, strict=True).verdict is ClaimVerdict.UNDECIDED
    assert L.judge_ratio([1.0] * 5, 1.0, above=True, strict=True).verdict is ClaimVerdict.DOES_NOT_HOLD
    assert L.judge_ratio([1.0] * 5, 1.0, above=True).verdict is ClaimVerdict.HOLDS  # ">= 1" lets a tie pass


def test_effect_size_on_the_median_interval():
    assert L.judge_ratio_effect([0.7, 0.75, 0.8, 0.72, 0.78], 0.4).verdict is ClaimVerdict.DOES_NOT_HOLD
    assert L.judge_ratio_effect([0.3, 0.35, 0.5, 0.32, 0.38], 0.4).verdict is ClaimVerdict.HOLDS
    assert L.judge_ratio_effect([0.3, 1.2, 0.5, 0.32, 0.9], 0.4).verdict is ClaimVerdict.UNDECIDED
    assert L.judge_ratio_effect([0.3, 0.35], 0.4).lo is None  # two seeds: no interval
