"""Lesson 11's SDE section: the slope fit and its bootstrap on data of known slope, each row's verdict rule on
constructed inputs, and the studies at a tiny size (strong errors against the exact GBM solution, the adjoint
against backprop, reversible Heun's algebraic reverse against torchsde's, peak memory)."""

from __future__ import annotations

import math

import pytest
import torch
import torchsde
from snapshot_support import assert_snapshot

from nodecourse.claims import REGISTRY, ClaimVerdict
from nodecourse.lessons.lesson11 import sde_rows  # noqa: F401  (registers the rows)
from nodecourse.lessons.lesson11.sde_config import (
    ADJOINT_THRESHOLD,
    SDE_MEMORY_THRESHOLD,
    STRONG_ORDER_THRESHOLD,
    AdjointConfig,
    SDEMemoryConfig,
    StrongOrderConfig,
)
from nodecourse.lessons.lesson11.sde_findings import (
    AdjointFindings,
    SDEMemoryFindings,
    StrongOrderFindings,
    judge_adjoint,
    judge_memory,
    judge_order_band,
    judge_strong_orders,
    plot_adjoint_errors,
    plot_sde_memory,
    plot_strong_orders,
)
from nodecourse.lessons.lesson11.sde_studies import (
    LOSS_TIMES,
    AdjointRun,
    GeometricBrownianMotion,
    SDEMemoryResult,
    SmallNeuralSDE,
    StrongOrderRun,
    adjoint_run,
    bootstrap_slope,
    bytes_per_step,
    fit_slope,
    reversible_gradient,
    sde_memory_study,
    strong_errors,
    strong_order_study,
)
from nodecourse.measure import cpu_peak_supported
from nodecourse.plotting import text_on_numeric_axes
from nodecourse.sde import BrownianPath

H, D, U = ClaimVerdict.HOLDS, ClaimVerdict.DOES_NOT_HOLD, ClaimVerdict.UNDECIDED
DTS = tuple(2.0**-k for k in range(3, 8))
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

# ----- the slope fit and its bootstrap -----


def test_fit_slope_recovers_a_power_law_and_names_bad_input():
    assert fit_slope(DTS, [3.0 * dt**0.7 for dt in DTS]) == pytest.approx(0.7, abs=1e-12)
    with pytest.raises(ValueError, match="levels"):
        fit_slope(DTS, [1.0, 2.0])


def test_bootstrap_interval_covers_the_known_slope_and_shrinks_with_paths():
    # per-path errors C_p * dt^0.5 * (lognormal noise per level): the mean error's slope is 0.5 up to noise
    gen = torch.Generator().manual_seed(0)

    def synthetic(paths):
        scale = torch.rand(1, paths, generator=gen, dtype=torch.float64) + 0.5
        noise = torch.exp(0.3 * torch.randn(len(DTS), paths, generator=gen, dtype=torch.float64))
        return torch.tensor(DTS, dtype=torch.float64)[:, None] ** 0.5 * scale * noise

    slope, lo, hi = bootstrap_slope(synthetic(4000), DTS, resamples=400)
    assert lo <= slope <= hi and lo <= 0.5 <= hi and hi - lo < 0.05
    _, lo_few, hi_few = bootstrap_slope(synthetic(100), DTS, resamples=400)
    assert hi_few - lo_few > hi - lo  # fewer paths, wider interval
    exact = torch.tensor(DTS, dtype=torch.float64)[:, None] ** 1.0 * torch.ones(1, 50, dtype=torch.float64)
    assert bootstrap_slope(exact, DTS, resamples=50) == pytest.approx((1.0, 1.0, 1.0), abs=1e-12)
    with pytest.raises(ValueError, match="paths"):
        bootstrap_slope(torch.ones(len(DTS)), DTS)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_slope(exact, DTS, confidence=95)


# ----- verdict rules on constructed inputs -----


def _order_run(method, lo, hi):
    return StrongOrderRun(method, DTS, tuple(dt**0.5 for dt in DTS), (lo + hi) / 2, lo, hi, 100, 0)


@pytest.mark.parametrize(
    "euler, milstein, verdict",
    [
        ((0.45, 0.60), (0.90, 1.10), H),  # both inside their bands
        ((0.45, 0.60), (0.60, 0.80), D),  # Milstein wholly below [0.85, 1.15]
        ((0.70, 0.90), (0.90, 1.10), D),  # Euler wholly above [0.35, 0.65]
        ((0.30, 0.60), (0.90, 1.10), U),  # Euler straddles 0.35
        ((0.30, 0.60), (0.50, 0.70), D),  # one straddles, the other fails: fails
    ],
)
def test_strong_orders_verdict(euler, milstein, verdict):
    f = StrongOrderFindings.from_runs((_order_run("euler", *euler), _order_run("milstein", *milstein)))
    assert f.verdict is verdict
    assert "Milstein" in f.markdown() and f"**{verdict.value}**" in f.markdown()
    assert_snapshot(f"lesson11.strong-orders-{'-'.join(f'{v:g}' for v in euler + milstein)}", f.markdown())


def test_order_band_edges_and_bad_input():
    assert judge_order_band(0.35, 0.65, 0.5) is H  # the band's edges are inside
    assert judge_order_band(0.66, 0.8, 0.5) is D and judge_order_band(0.1, 0.34, 0.5) is D
    assert judge_order_band(0.2, 0.9, 0.5) is U  # wider than the band on both sides
    with pytest.raises(ValueError, match="lo <= hi"):
        judge_order_band(0.6, 0.4, 0.5)
    with pytest.raises(ValueError, match="at least one"):
        judge_strong_orders({})
    with pytest.raises(ValueError, match="declared order"):
        StrongOrderFindings.from_runs((_order_run("reversible_heun", 0.4, 0.6),))


@pytest.mark.parametrize(
    "slopes, finest, verdict",
    [
        ((1.0, 1.1, 0.9), (1e-4, 2e-4, 5e-5), H),
        ((-1.0, -1.1, -0.9), (1e-4, 2e-4, 5e-5), D),  # the error grows as the step shrinks
        ((1.0, -1.0, 0.5), (1e-4, 2e-4, 5e-5), U),  # the interval contains 0
        ((1.0, 1.1, 0.9), (1e-4, 0.05, 5e-5), U),  # falls, but one seed is above 1e-2 at the finest step
        ((1.0, 1.1), (1e-4, 1e-4), U),  # two seeds: no verdict
    ],
)
def test_adjoint_verdict(slopes, finest, verdict):
    assert judge_adjoint(slopes, finest)[0] is verdict
    runs = tuple(
        AdjointRun(i, DTS, tuple(e * (dt / DTS[-1]) ** s for dt in DTS), (1e-16,) * len(DTS), s)
        for i, (s, e) in enumerate(zip(slopes, finest))
    )
    f = AdjointFindings.from_runs(runs)
    assert f.verdict is verdict and f.worst_finest == pytest.approx(max(finest))
    assert f"**{verdict.value}**" in f.markdown()
    assert_snapshot(f"lesson11.adjoint-{'-'.join(f'{v:g}' for v in slopes + finest)}", f.markdown())


@pytest.mark.parametrize(
    "adjoint, backprop, verdict",
    [(1.2, 6.0, H), (1.5, 4.0, H), (2.5, 6.0, D), (2.0, 1.0, D), (1.7, 6.0, U), (1.2, 3.0, U)],
)
def test_memory_verdict(adjoint, backprop, verdict):
    assert judge_memory(adjoint, backprop) is verdict
    result = SDEMemoryResult(
        SDEMemoryConfig(),
        (16, 128),
        (("backprop", (10**6, int(backprop * 10**6))), ("adjoint", (10**6, int(adjoint * 10**6)))),
    )
    f = SDEMemoryFindings.from_result(result)
    assert f.verdict is verdict and f"{adjoint:.2f}x" in f.markdown()
    assert_snapshot(f"lesson11.sde-memory-{adjoint:g}-{backprop:g}", f.markdown())


def test_rows_are_registered_with_their_declared_thresholds():
    for rid, threshold in [
        ("sde-strong-orders", STRONG_ORDER_THRESHOLD),
        ("sde-adjoint-matches-backprop", ADJOINT_THRESHOLD),
        ("sde-adjoint-memory-flat", SDE_MEMORY_THRESHOLD),
    ]:
        spec = REGISTRY[rid]
        assert spec.threshold is threshold and spec.lesson == "11" and threshold.why


# ----- the studies, tiny -----


def test_gbm_exact_solution_is_the_analytic_one():
    gbm = GeometricBrownianMotion(0.5, 1.0)
    w = torch.tensor([[0.3]], dtype=torch.float64)
    assert gbm.exact(torch.tensor([[2.0]], dtype=torch.float64), 1.0, w).item() == pytest.approx(2 * math.exp(0.3))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_strong_errors_shrink_and_milstein_beats_euler(dtype, device):
    config = StrongOrderConfig(paths=200, levels=(3, 4, 5, 6), bootstrap=200, dtype=dtype, device=device)
    errors, dts, steps = strong_errors(config, "euler")
    assert errors.shape == (4, 200) and errors.dtype == torch.float64 and steps == sum(2**k for k in config.levels)
    runs = strong_order_study(config)
    euler, milstein = runs
    assert all(a > b for a, b in zip(euler.mean_errors, euler.mean_errors[1:]))
    assert milstein.mean_errors[-1] < euler.mean_errors[-1]
    assert milstein.slope > euler.slope > 0.2 and euler.lo <= euler.slope <= euler.hi
    fig = plot_strong_orders(runs)
    assert "time units" in fig.layout.xaxis.title.text and len(fig.data) == 4 and not text_on_numeric_axes(fig)


def test_a_config_with_an_unknown_dtype_is_named():
    with pytest.raises(ValueError, match="dtype='float16' in StrongOrderConfig"):
        strong_errors(StrongOrderConfig(dtype="float16"), "euler")


def test_adjoint_run_against_backprop():
    config = AdjointConfig(seeds=(0,), levels=(3, 5, 7), batch=4, dim=2, hidden=8)
    run = adjoint_run(config, 0)
    assert run.adjoint_errors[-1] < run.adjoint_errors[0] < 1e-1 and run.slope > 0
    assert max(run.reversible_errors) < 1e-12  # the algebraic reverse: backprop's gradient to rounding
    fig = plot_adjoint_errors((run,))
    assert len(fig.data) == 2 and "dimensionless" in fig.layout.yaxis.title.text and not text_on_numeric_axes(fig)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_reversible_gradient_matches_torchsde_reversible_adjoint(dtype):
    torch.manual_seed(0)
    sde = SmallNeuralSDE(3, 8).to(dtype)
    y0 = torch.randn(4, 3, dtype=dtype)
    bm = BrownianPath(0.0, 1.0, (4, 3), seed=2, dtype=dtype)
    ours = torch.cat([g.reshape(-1) for g in reversible_gradient(sde, y0, bm, 2**-5)])
    y = y0.clone().requires_grad_(True)
    ts = torch.tensor(LOSS_TIMES, dtype=dtype)
    ys = torchsde.sdeint_adjoint(
        sde, y, ts, bm=bm, method="reversible_heun", adjoint_method="adjoint_reversible_heun", dt=2**-5
    )
    loss = ys[1].pow(2).mean() + ys[2].pow(2).mean()
    theirs = torch.cat([g.reshape(-1) for g in torch.autograd.grad(loss, [y, *sde.parameters()])])
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    assert ((ours - theirs).norm() / theirs.norm()).item() < tol


def test_adjoint_gradient_route_shares_the_brownian_path():
    # the study's premise: the same BrownianPath answers the forward and the backward solve alike
    bm = BrownianPath(0.0, 1.0, (2, 2), seed=5, dtype=torch.float64)
    first = bm(0.25, 0.5).clone()
    bm(0.0, 1.0), bm(0.125, 0.375)
    assert torch.equal(bm(0.25, 0.5), first)


@pytest.mark.skipif(not cpu_peak_supported(), reason="the resident-set peak needs Linux's /proc/self/clear_refs")
def test_memory_study_backprop_grows_adjoint_without_cache_does_not():
    # the resident set (cpu_method="rss") rather than the profiler, whose first start alone takes seconds
    config = SDEMemoryConfig(
        steps=4, batch=2048, dim=4, hidden=32, cache_size=0, extra_readings=False, cpu_method="rss"
    )
    result = sde_memory_study(config)
    assert result.steps == (4, 32) and result.routes == ("backprop", "adjoint")
    assert result.growth("backprop") > 3.0
    # the resident set is about 1 MiB noisy: what each step adds, the adjoint's against backprop's (~600 KiB)
    assert bytes_per_step(result, "adjoint") < 0.25 * bytes_per_step(result, "backprop")
    fig = plot_sde_memory(result)
    assert "MiB" in fig.layout.yaxis.title.text and len(fig.data) == 2 and not text_on_numeric_axes(fig)


@pytest.mark.parametrize("case", ["holds", "does not hold", "undecided"])
def test_rows_turn_constructed_studies_into_measurements(monkeypatch, case):
    # each row's adapter on a study result built by hand: the verdict is the findings' and undecided says n
    euler = {"holds": (0.45, 0.6), "does not hold": (0.7, 0.9), "undecided": (0.3, 0.6)}[case]
    slopes = {"holds": (1.0, 1.1, 0.9), "does not hold": (-1.0, -1.1, -0.9), "undecided": (1.0, -1.0, 0.5)}[case]
    adjoint = {"holds": 1.2, "does not hold": 2.5, "undecided": 1.7}[case]
    monkeypatch.setattr(
        sde_rows, "strong_order_study", lambda config: (_order_run("euler", *euler), _order_run("milstein", 0.9, 1.1))
    )
    runs = tuple(AdjointRun(i, DTS, (1e-3,) * len(DTS), (1e-16,) * len(DTS), s) for i, s in enumerate(slopes))
    monkeypatch.setattr(sde_rows, "adjoint_study", lambda config: runs)
    peaks = (("backprop", (10**6, 6 * 10**6)), ("adjoint", (10**6, int(adjoint * 10**6))))
    monkeypatch.setattr(sde_rows, "sde_memory_study", lambda config: SDEMemoryResult(config, (16, 128), peaks))
    for measure in (sde_rows.measure_strong_orders, sde_rows.measure_adjoint, sde_rows.measure_memory):
        m = measure(True)
        assert m.verdict is ClaimVerdict(case) and m.seeds is not None and m.measured
