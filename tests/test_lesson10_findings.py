"""Lesson 10's findings render what the lesson's paragraphs say, from small hand-made study results:
the tests assert the verdicts and numbers the sentences quote, and keep each Markdown whole in one snapshot
per variant (tests/snapshots/lesson10.*.md), edge cases included (too few seeds, an undecided reading, an
overflowing solve, a seminorm that costs steps)."""

from __future__ import annotations

import math

import pytest
import torch
from snapshot_support import assert_snapshot

from nodecourse.claims import ClaimResult, ClaimVerdict
from nodecourse.lessons import lesson10 as L


def _runs(setting, nfe_by_seed, acc=0.9, seconds=1.0):
    return tuple(
        L.MoonsRun(setting, 0.0, 0.0, s, tuple(nfe), acc, nfe[-1], seconds) for s, nfe in enumerate(nfe_by_seed)
    )


CLIMBING = _runs("none", [[20] * 10 + [40 + k] * 90 for k in range(4)], acc=0.95, seconds=1.0)
REGULARISED = _runs("kinetic+Jacobian", [[20] * 10 + [25 + k] * 90 for k in range(4)], acc=0.94, seconds=2.0)


def test_growth_quotes_the_nfe_the_ratios_and_the_verdict():
    f = L.NFEGrowthFindings.from_runs(CLIMBING)
    assert set(f.first) == {20} and f.last == (40, 41, 42, 43)
    assert f.ratios == pytest.approx((2.0, 2.05, 2.10, 2.15)) and f.verdict is ClaimVerdict.HOLDS
    assert_snapshot("lesson10.nfe-growth-holds", f.markdown())


def test_growth_with_two_seeds_has_no_interval_and_is_undecided():
    f = L.NFEGrowthFindings.from_runs(CLIMBING[:2])
    assert f.verdict is ClaimVerdict.UNDECIDED and f.interval is None
    assert len(f.ratios) == 2
    # the words are the contract: a missing interval is said to be missing, with why
    assert "no interval (too few seeds)" in f.markdown()
    assert_snapshot("lesson10.nfe-growth-two-seeds", f.markdown())


def test_training_table_and_regularisation_parts():
    f = L.RegularisationFindings.from_runs(CLIMBING + REGULARISED)
    assert [s.setting for s in f.table.settings] == ["none", "kinetic+Jacobian"]
    none, reg = f.table["none"], f.table["kinetic+Jacobian"]
    assert (none.nfe_first, none.nfe_last, none.test_nfe, none.accuracy, none.seconds) == (20, 41.5, 41.5, 0.95, 1.0)
    assert (reg.accuracy, reg.seconds) == (0.94, 2.0)
    assert_snapshot("lesson10.training-table", f.table.markdown())
    assert f.nfe_ratio == pytest.approx((40 / 25, 41 / 26, 42 / 27, 43 / 28))
    # the drop in percentage points, the unit of its 2-point margin (never a fraction beside points)
    assert f.accuracy_drop == pytest.approx((0.01,) * 4)
    assert (f.intervals[1].lo, f.intervals[1].hi) == pytest.approx((0.01, 0.01)) and "+0.010" not in f.markdown()
    # four seeds are too few for a median's interval: the clause says so, never "slower" from the values alone
    assert dict(f.parts)[L.FASTER_PART] is ClaimVerdict.UNDECIDED and f.part(3) == "undecided (4 seeds)"
    # the words are the contract: the published 2.8x is named and said to be not measurable here
    assert f.parts[0][1] is ClaimVerdict.NOT_MEASURABLE
    assert "2.8x faster training (FFJORD on MNIST, days of GPU time): not measurable at this scale" in f.markdown()
    assert_snapshot("lesson10.regularisation-time-undecided", f.markdown())


def _speed_findings(speedups):
    """Findings whose per-seed wall-clock speed-ups (unregularised time over regularised) are ``speedups``."""
    n = len(speedups)
    base = _runs("none", [[20] * 10 + [40 + k] * 90 for k in range(n)], acc=0.95, seconds=1.0)
    reg = tuple(
        L.MoonsRun("kinetic+Jacobian", 0.0, 0.0, s, tuple([20] * 10 + [25 + s] * 90), 0.95, 25 + s, 1.0 / v)
        for s, v in enumerate(speedups)
    )
    return L.RegularisationFindings.from_runs(base + reg)


def test_time_clause_follows_the_interval_not_the_mean():
    # mean speed-up 0.79 (below 1), but the median's interval [0.36, 1.26] contains 1: no clear difference
    mixed = _speed_findings([0.36, 0.53, 0.85, 0.95, 1.26])
    assert sum(mixed.speedup) / len(mixed.speedup) < 1
    assert dict(mixed.parts)[L.FASTER_PART] is ClaimVerdict.UNDECIDED
    for text in (mixed.markdown(), mixed.time_clause):
        assert "no clear difference" in text and "is slower" not in text and "costs more" not in text
    # the same with a mean above 1: still no clear difference, never "faster"
    above = _speed_findings([0.53, 1.02, 1.3, 1.4, 1.5])
    assert "no clear difference" in above.time_clause and "faster:" not in above.time_clause
    # wholly below 1: slower, with the reason; wholly above: faster
    slower = _speed_findings([0.4, 0.45, 0.5, 0.55, 0.6])
    assert dict(slower.parts)[L.FASTER_PART] is ClaimVerdict.DOES_NOT_HOLD
    assert slower.time_clause.startswith("training is slower") and "costs more" in slower.markdown()
    assert _speed_findings([1.2, 1.3, 1.4, 1.5, 1.6]).time_clause.startswith("training is faster")
    # a tie on every seed is not "faster"
    assert dict(_speed_findings([1.0] * 5).parts)[L.FASTER_PART] is ClaimVerdict.DOES_NOT_HOLD


def test_regulariser_check_from_tensors():
    ts = torch.linspace(0.0, 1.0, 5, dtype=torch.float64)
    slopes = torch.ones(5, 3, 2, dtype=torch.float64)  # |f|^2 = 2 at every time: kinetic energy 2
    frob2 = torch.full((5, 3), 4.0, dtype=torch.float64)
    check = L.RegulariserCheck.from_trajectory(
        torch.full((3,), 2.0, dtype=torch.float64),
        torch.tensor([3.0, 4.0, 5.0], dtype=torch.float64),
        slopes,
        frob2,
        ts,
        26,
        26,
    )
    assert check.kinetic_error == 0.0 and check.trapezoid_error == 0.0 and check.batch_error == 0.0
    assert (check.per_sample_min, check.per_sample_max) == pytest.approx((-0.25, 0.25))
    assert check.n_times == 5 and check.nfe_with == check.nfe_without == 26
    assert_snapshot("lesson10.regulariser-check-same-work", check.markdown())
    more = L.RegulariserCheck.from_trajectory(
        torch.full((3,), 2.0, dtype=torch.float64),
        torch.tensor([3.0, 4.0, 5.0], dtype=torch.float64),
        slopes,
        frob2,
        ts,
        32,
        26,
    )
    assert more.nfe_with - more.nfe_without == 6
    assert_snapshot("lesson10.regulariser-check-more-work", more.markdown())


def _route(name, closed=1e-8, fd=1e-9, fwd=68, bwd=68, kib=0.1):
    return L.Route(name, closed, fd, fwd, bwd, kib, 0.01)


ROUTES = (
    _route("backprop (dopri5)", bwd=0, kib=1.1),
    _route("adjoint (dopri5)", bwd=68),
    _route("adjoint + seminorm", bwd=51),
    _route("backprop (reversible Heun)", 7.8e-6, 1.4e-10, 101, 0, 1.6),
    _route("reversible (reversible Heun)", 7.8e-6, 1.4e-10, 101, 101, 0.1),
)


def test_controlled_seminorm_and_route_table():
    controlled = L.ControlledSeminorm.from_routes(ROUTES)
    assert (controlled.full.nfe_backward, controlled.seminorm.nfe_backward) == (68, 51)
    assert (controlled.full.name, controlled.seminorm.name) == ("adjoint (dopri5)", "adjoint + seminorm")
    assert_snapshot("lesson10.controlled-seminorm", controlled.markdown())
    routes = L.ReversibleRouteFindings(ROUTES, heun_steps=100)
    assert routes.heun_steps == 100 and [r.name for r in routes.routes] == [r.name for r in ROUTES]
    assert_snapshot("lesson10.reversible-routes", routes.markdown())


def _task(name, ours, torchdiffeq, kind="mlp", full=100):
    counts = tuple(
        L.SeminormCount(s, full, round(full * (1 - a)), full, round(full * (1 - b)))
        for s, (a, b) in enumerate(zip(ours, torchdiffeq))
    )
    return L.SeminormTaskResult(L.SeminormTask(name, kind), counts)


def test_seminorm_table_and_an_undecided_median_over_tasks():
    results = tuple(_task(f"task {k}", [0.2 + 0.05 * k] * 2, [0.3 + 0.05 * k] * 2) for k in range(5))
    f = L.SeminormFindings.from_results(results)
    assert f.n_tasks == 5 and len(f.results[0].counts) == 2
    assert (f.results[0].reduction("nodecourse"), f.results[0].reduction("torchdiffeq")) == pytest.approx((0.2, 0.3))
    ours = f.medians[0]  # five values: the interval is their range
    assert (ours.median, ours.lo, ours.hi) == pytest.approx((0.3, 0.2, 0.4))
    assert [v for _, v in f.readings] == [ClaimVerdict.UNDECIDED] * 2 and f.reading(
        "nodecourse"
    ) == "undecided (5 tasks)"
    assert f.verdict is ClaimVerdict.UNDECIDED
    assert_snapshot("lesson10.seminorm-undecided", f.markdown())


def test_seminorm_that_saves_everywhere_holds_and_too_few_tasks_say_so():
    results = tuple(_task(f"task {k}", [0.5 + 0.01 * k], [0.6]) for k in range(5))
    holds = L.SeminormFindings.from_results(results)
    assert [v for _, v in holds.readings] == [ClaimVerdict.HOLDS] * 2 and holds.verdict is ClaimVerdict.HOLDS
    assert_snapshot("lesson10.seminorm-holds", holds.markdown())
    few = L.SeminormFindings.from_results(results[:2])
    assert few.medians == (None, None) and few.verdict is ClaimVerdict.UNDECIDED
    assert "too few tasks" in few.markdown()  # the words are the contract: no median is said to be missing
    assert_snapshot("lesson10.seminorm-too-few-tasks", few.markdown())


def test_seminorm_moons_reading_names_the_seeds_that_cost_steps():
    costly = L.SeminormTaskResult(
        L.SeminormTask("two moons, mean loss", "moons"),
        (L.SeminormCount(0, 57, 61, 60, 60), L.SeminormCount(1, 57, 57, 60, 60)),
    )
    costs = L.SeminormMoonsReading(costly, n_state=288, n_params=227)
    assert (costs.n_state, costs.n_params) == (288, 227)
    # the snapshot names seed 0 (61 against 57) and says torchdiffeq's counts are identical on every seed
    assert_snapshot("lesson10.seminorm-moons-costs-steps", costs.markdown())
    cheaper = L.SeminormTaskResult(costly.task, (L.SeminormCount(0, 60, 50, 60, 48),))
    # no seed needed more, and torchdiffeq's counts differ
    assert_snapshot(
        "lesson10.seminorm-moons-saves", L.SeminormMoonsReading(cheaper, n_state=288, n_params=227).markdown()
    )


def test_round_trip_and_exactness():
    trip = L.RoundTrip(((10, 2e-16, 3e-4), (50, 4e-16, 2e-6)))
    assert [n for n, _, _ in trip.trips] == [10, 50] and max(a for _, a, _ in trip.trips) == 4e-16
    assert_snapshot("lesson10.round-trip", trip.markdown())
    rows = tuple(L.ExactRow(s, 1e-16 * (1 + s), 1e-7, 101, 300) for s in range(4))
    f = L.ExactFindings.from_rows(rows, 1e-6, 50)
    assert f.verdict is ClaimVerdict.HOLDS and (f.adjoint_tol, f.steps) == (1e-6, 50)
    assert [r.reversible_error for r in f.rows] == pytest.approx([1e-16, 2e-16, 3e-16, 4e-16])
    assert f.rows[0].reversible_nfe == 101
    assert_snapshot("lesson10.exact-holds", f.markdown())


def test_memory_findings():
    f = L.ReversibleMemoryFindings(
        (8, 16, 64),
        (("backprop", 5.7), ("reversible", 1.0)),
        (("backprop grows", ClaimVerdict.HOLDS), ("reversible flat", ClaimVerdict.HOLDS)),
        ClaimVerdict.HOLDS,
        256,
        (2, 64, 2),
    )
    assert f.steps[-1] / f.steps[0] == 8 and (f.growth_of("backprop"), f.growth_of("reversible")) == (5.7, 1.0)
    assert (f.batch, f.dims) == (256, (2, 64, 2))
    assert_snapshot("lesson10.reversible-memory", f.markdown())


def _case(lam, h, growth, heun, rk4, size):
    return L.StabilityCase(complex(lam), h, 10.0, 1.1, growth, size, heun, rk4)


def test_stability_says_what_the_error_is_relative_to_and_names_an_overflow():
    cases = (
        _case(-1, 0.1, 2.2e4, 3e3, 9e-6, 4.5e-5),
        _case(1, 0.1, 4.6e-5, 1.6e-2, 8e-6, 2.2e4),
        _case(-5, 0.1, 7.9e20, math.inf, 4e-2, 1.9e-22),
        _case(2j, 0.1, 1.0, 0.14, 2.7e-4, 1.0),
        _case(-1, 0.01, 2.2e4, 0.3, 8e-10, 4.5e-5),
        _case(1, 0.01, 4.5e-5, 1.7e-4, 8e-10, 2.2e4),
        _case(-5, 0.01, 5e21, 1e37, 2.7e-6, 1.9e-22),
        _case(2j, 0.01, 1.0, 1.3e-3, 2.7e-8, 1.0),
    )
    f = L.StabilityFindings(cases)
    table = f.table()
    assert not math.isfinite(f.case(-5, 0.1).heun_error) and "overflow" in table  # an overflow is named
    assert "|c|" not in table and "|μ|" not in table  # no unescaped pipes in a header
    s5 = f.case(-5, 0.01)
    assert s5.solution_size == 1.9e-22 and s5.heun_absolute_error == pytest.approx(1e37 * 1.9e-22)
    assert f.case(1, 0.1).parasitic_growth < 1  # at lambda = +1 the parasitic root shrinks
    # the growth against e^{|lam| T} follows the numbers: 5.2e21 / 7.9e20 = 6.6, 5.2e21 / 5e21 = 1.04
    bound = math.exp(5 * 10.0)
    assert bound / f.case(-5, 0.1).parasitic_growth == pytest.approx(6.6, abs=0.05)
    assert bound / s5.parasitic_growth == pytest.approx(1.04, abs=0.005)
    assert s5.parasitic_growth >= f.case(-5, 0.1).parasitic_growth  # smaller steps do not reduce it
    assert_snapshot("lesson10.stability", f.markdown())
    swapped = tuple(
        _case(c.lam, c.h, 8e20 if c.h == 0.01 else 5e21, c.heun_error, c.rk4_error, c.solution_size)
        if c.lam == -5
        else c
        for c in cases
    )
    less = L.StabilityFindings(swapped)
    assert less.case(-5, 0.01).parasitic_growth < less.case(-5, 0.1).parasitic_growth
    assert_snapshot("lesson10.stability-smaller-step-grows-less", less.markdown())


def test_trained_stability_table_has_a_clean_header():
    rows = tuple(
        L.TrainedStability(setting, s, -1.5 - s, 0.3, (10, 160), (1e-3 * (1 + s), 4e-6))
        for setting in ("none", "kinetic+Jacobian")
        for s in range(2)
    )
    f = L.TrainedStabilityFindings(rows)
    header = f.table().splitlines()[0]
    assert header.count("|") == 6  # five columns, no pipe inside a header
    assert min(r.most_contracting for r in f.rows) == -2.5
    # second order predicts (160 / 10)^2 = 256; every model's error falls at least half that
    assert min(r.errors[0] / r.errors[-1] for r in f.rows) > 256 / 2
    assert_snapshot("lesson10.trained-stability", f.markdown())


def test_explorer_and_closing_findings():
    grid = {
        (w, r): {
            "test NFE": 20 + int(100 * w),
            "accuracy": 0.9,
            "NFE fwd": 20,
            "NFE bwd": 20,
            "error vs accurate": 1e-4,
            "error vs own steps": 1e-15,
            "peak KiB": 100.0,
        }
        for w in (0.0, 0.1)
        for r in L.EXPLORER_ROUTES
    }
    explorer = L.ExplorerFindings.from_grid(grid)
    assert explorer.weights == (0.0, 0.1) and explorer.train_steps == 40
    assert (explorer.at(0.0, "reversible")["test NFE"], explorer.at(0.1, "reversible")["test NFE"]) == (20, 30)
    assert explorer.at(0.0, "backprop")["peak KiB"] == 100.0
    assert_snapshot("lesson10.explorer", explorer.markdown())
    runs = CLIMBING + REGULARISED
    seminorm = L.SeminormFindings.from_results(tuple(_task(f"t{k}", [0.2], [0.3]) for k in range(5)))
    exact = L.ExactFindings.from_rows(tuple(L.ExactRow(s, 1e-16, 1e-7, 101, 300) for s in range(3)), 1e-6, 50)
    memory = L.ReversibleMemoryFindings(
        (8, 64), (("backprop", 5.7), ("reversible", 1.0)), (), ClaimVerdict.HOLDS, 256, (2, 2)
    )
    results = tuple(
        ClaimResult(cid, "", "", "", "", verdict, 0.0, seeds=5)
        for cid, verdict in (
            ("ode-nfe-growth", ClaimVerdict.HOLDS),
            ("kinetic-regularization-nfe", ClaimVerdict.HOLDS_IN_PART),
            ("seminorm-backward-nfe", ClaimVerdict.DOES_NOT_HOLD),
            ("reversible-gradient-exact", ClaimVerdict.HOLDS),
            ("reversible-memory-flat", ClaimVerdict.UNDECIDED),
        )
    )
    closing = L.ClosingFindings(
        results, L.NFEGrowthFindings.from_runs(runs), L.RegularisationFindings.from_runs(runs), seminorm, exact, memory
    )
    assert closing.seminorm.n_tasks == 5 and max(closing.regularisation.accuracy_drop) == pytest.approx(0.01)
    assert closing.verdict("seminorm-backward-nfe") == "does not hold"
    assert closing.verdict("reversible-memory-flat") == "undecided (5 seeds)"
    # four seeds: no interval, so the regularised training's time is "no clear difference"
    assert dict(closing.regularisation.parts)[L.FASTER_PART] is ClaimVerdict.UNDECIDED
    assert_snapshot("lesson10.closing", closing.markdown())
