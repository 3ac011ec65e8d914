"""Lesson 10's findings render what the lesson's paragraphs say, from small hand-made study results:
the verdict words and the numbers are in the Markdown, and the edge cases (too few seeds, an undecided
reading, an overflowing solve, a seminorm that costs steps) say so in words."""

from __future__ import annotations

import math

import torch

from nodecourse.claims import ClaimResult, ClaimVerdict
from nodecourse.lessons import lesson10 as L


def _runs(setting, nfe_by_seed, acc=0.9, seconds=1.0):
    return tuple(
        L.MoonsRun(setting, 0.0, 0.0, s, tuple(nfe), acc, nfe[-1], seconds) for s, nfe in enumerate(nfe_by_seed)
    )


CLIMBING = _runs("none", [[20] * 10 + [40 + k] * 90 for k in range(4)], acc=0.95, seconds=1.0)
REGULARISED = _runs("kinetic+Jacobian", [[20] * 10 + [25 + k] * 90 for k in range(4)], acc=0.94, seconds=2.0)


def test_growth_quotes_the_nfe_the_ratios_and_the_verdict():
    text = L.NFEGrowthFindings.from_runs(CLIMBING).markdown()
    assert "from 20–20" in text and "to 40–43" in text
    assert "2.00, 2.05, 2.10, 2.15" in text and "**holds**" in text and "over 4 seeds" in text


def test_growth_with_two_seeds_has_no_interval_and_is_undecided():
    f = L.NFEGrowthFindings.from_runs(CLIMBING[:2])
    assert f.verdict is ClaimVerdict.UNDECIDED and f.interval is None
    assert "no interval (too few seeds)" in f.markdown() and "**undecided (2 seeds)**" in f.markdown()


def test_training_table_and_regularisation_parts():
    f = L.RegularisationFindings.from_runs(CLIMBING + REGULARISED)
    table = f.table.markdown()
    assert table.splitlines()[0].startswith("| regulariser | NFE first tenth")
    assert "| none | 20.0 | 41.5 | 41.5 | 0.950 | 1.00 |" in table
    text = f.markdown()
    assert "**Solver work.**" in text and "1.60, 1.58, 1.56, 1.54" in text
    # the drop in percentage points, the unit of its 2-point margin (never a fraction beside points)
    assert "Test accuracy 95.0% without, 94.0% with" in text and "drop per seed +1.0, +1.0, +1.0, +1.0 points" in text
    assert "interval [+1.0, +1.0] points against at most 2 points" in text and "+0.010" not in text
    assert "Training took 1.00 s without and 2.00 s with" in text
    # four seeds are too few for a median's interval: the clause says so, never "slower" from the values alone
    assert "training shows no clear difference in time" in text and "(undecided (4 seeds))" in text
    assert "2.8x faster training (FFJORD on MNIST, days of GPU time): not measurable at this scale" in text


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
    text = check.markdown()
    assert "from -25% to +25%" in text and "here they added no steps" in text and "on 5 times" in text
    more = L.RegulariserCheck.from_trajectory(
        torch.full((3,), 2.0, dtype=torch.float64),
        torch.tensor([3.0, 4.0, 5.0], dtype=torch.float64),
        slopes,
        frob2,
        ts,
        32,
        26,
    )
    assert "changed the work by +6 evaluations" in more.markdown()


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
    text = L.ControlledSeminorm.from_routes(ROUTES).markdown()
    assert "backward NFE 68 with the full norm, 51 with the seminorm (25% fewer)" in text
    routes = L.ReversibleRouteFindings(ROUTES, heun_steps=100).markdown()
    assert "| reversible (reversible Heun) | 7.8e-06 | 1.4e-10 | 101 | 101 | 0.1 | 10.0 |" in routes
    assert "the error of 100 second-order steps" in routes and "against backprop's 1.6" in routes


def _task(name, ours, torchdiffeq, kind="mlp", full=100):
    counts = tuple(
        L.SeminormCount(s, full, round(full * (1 - a)), full, round(full * (1 - b)))
        for s, (a, b) in enumerate(zip(ours, torchdiffeq))
    )
    return L.SeminormTaskResult(L.SeminormTask(name, kind), counts)


def test_seminorm_table_and_an_undecided_median_over_tasks():
    results = tuple(_task(f"task {k}", [0.2 + 0.05 * k] * 2, [0.3 + 0.05 * k] * 2) for k in range(5))
    f = L.SeminormFindings.from_results(results)
    text = f.markdown()
    assert "| task 0 | 2 | 100 → 80 | +20% | 100 → 70 | +30% |" in text
    assert "median +30%, interval [+20%, +40%]" in text  # five values: the interval is their range
    assert "**undecided (5 tasks)**" in text and "**holds**" not in text
    assert f.verdict is ClaimVerdict.UNDECIDED


def test_seminorm_that_saves_everywhere_holds_and_too_few_tasks_say_so():
    results = tuple(_task(f"task {k}", [0.5 + 0.01 * k], [0.6]) for k in range(5))
    assert "**holds**" in L.SeminormFindings.from_results(results).markdown()
    few = L.SeminormFindings.from_results(results[:2])
    assert "too few tasks" in few.markdown() and few.verdict is ClaimVerdict.UNDECIDED


def test_seminorm_moons_reading_names_the_seeds_that_cost_steps():
    costly = L.SeminormTaskResult(
        L.SeminormTask("two moons, mean loss", "moons"),
        (L.SeminormCount(0, 57, 61, 60, 60), L.SeminormCount(1, 57, 57, 60, 60)),
    )
    text = L.SeminormMoonsReading(costly, n_state=288, n_params=227).markdown()
    assert "seed 0 needed 61 backward evaluations with the seminorm against 57 without" in text
    assert "identical counts on every seed" in text and "227 in $g$" in text
    cheaper = L.SeminormTaskResult(costly.task, (L.SeminormCount(0, 60, 50, 60, 48),))
    text = L.SeminormMoonsReading(cheaper, n_state=288, n_params=227).markdown()
    assert "no seed needed more" in text and "where the counts differ" in text


def test_round_trip_and_exactness():
    text = L.RoundTrip(((10, 2e-16, 3e-4), (50, 4e-16, 2e-6))).markdown()
    assert "| 10 | 2.0e-16 | 3.0e-04 |" in text and "to rounding (4e-16)" in text
    assert "3.0e-04 with 10 steps and 2.0e-06 with 50 steps" in text
    rows = tuple(L.ExactRow(s, 1e-16 * (1 + s), 1e-7, 101, 300) for s in range(4))
    f = L.ExactFindings.from_rows(rows, 1e-6, 50)
    assert f.verdict is ClaimVerdict.HOLDS
    assert "relative error 1.0e-16 to 4.0e-16" in f.markdown() and "101 evaluations" in f.markdown()


def test_memory_findings():
    f = L.ReversibleMemoryFindings(
        (8, 16, 64),
        (("backprop", 5.7), ("reversible", 1.0)),
        (("backprop grows", ClaimVerdict.HOLDS), ("reversible flat", ClaimVerdict.HOLDS)),
        ClaimVerdict.HOLDS,
        256,
        (2, 64, 2),
    )
    text = f.markdown()
    assert "From 8 to 64 steps (8x more)" in text and "grows 5.7x" in text and "1.00x" in text
    assert "MLP 2-64-2" in text


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
    assert "| -5 | 0.1 | 1.1000 | 7.9e+20 | overflow |" in table
    assert "|c|" not in table and "|μ|" not in table  # no unescaped pipes in a header
    text = f.markdown()
    assert "relative to a solution of size $e^{-50} = 2e-22$" in text
    assert "in absolute terms the error is 2e+15" in text
    assert "$\\sqrt{1 + x^2} - x < 1$: over the horizon it shrinks to 4.6e-05" in text
    assert "1.6e-02 and 1.7e-04" in text
    # the growth against e^{|lam| T} follows the numbers: 5.2e21 / 7.9e20 = 6.6, 5.2e21 / 5e21 = 1.04
    assert "6.6 times smaller with $h = 0.1$ and 1.04 times smaller with $h = 0.01$" in text
    assert "smaller steps bring it closer to that bound and do not reduce it" in text
    swapped = tuple(
        _case(c.lam, c.h, 8e20 if c.h == 0.01 else 5e21, c.heun_error, c.rk4_error, c.solution_size)
        if c.lam == -5
        else c
        for c in cases
    )
    assert "here the smaller step grows less" in L.StabilityFindings(swapped).markdown()


def test_trained_stability_table_has_a_clean_header():
    rows = tuple(
        L.TrainedStability(setting, s, -1.5 - s, 0.3, (10, 160), (1e-3 * (1 + s), 4e-6))
        for setting in ("none", "kinetic+Jacobian")
        for s in range(2)
    )
    f = L.TrainedStabilityFindings(rows)
    header = f.table().splitlines()[0]
    assert header.count("|") == 6  # five columns, no pipe inside a header
    text = f.markdown()
    assert "$c = -2.50$" in text and f"{math.exp(2.5):.1f}x" in text and "on 0 of 2 seeds" in text
    assert "converges at its order" in text


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
    text = L.ExplorerFindings.from_grid(grid).markdown()
    assert "test NFE 20 → 30" in text and "(1e-15 at most)" in text and "backprop 100" in text
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
    ).markdown()
    assert "over 5 tasks, ours +20% to +20%" in closing
    assert "accuracy drop +1.0 points at most" in closing
    assert "`seminorm-backward-nfe` (does not hold)" in closing and "undecided (5 seeds)" in closing
    assert "here the regularised training shows no clear difference in time" in closing  # four seeds: no interval
