"""nodecourse.sde: the seeded Brownian path, parity with torchsde on the same path, strong orders on
geometric Brownian motion against its exact solution, and the argument errors."""

from __future__ import annotations

import math

import pytest
import torch
import torchsde

from nodecourse.sde import BrownianPath, SDEArgumentError, sdeint
from nodecourse.solvers import Status

F64 = torch.float64
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


class Toy(torch.nn.Module):
    """A nonlinear diagonal-noise SDE with parameters, time dependence and y-dependent diffusion."""

    noise_type = "diagonal"

    def __init__(self, sde_type: str = "ito"):
        super().__init__()
        self.sde_type = sde_type
        self.a = torch.nn.Parameter(torch.tensor(0.7, dtype=F64))
        self.b = torch.nn.Parameter(torch.tensor(0.5, dtype=F64))

    def f(self, t, y):
        return self.a * torch.sin(y) - 0.3 * y + 0.2 * t

    def g(self, t, y):
        return self.b * torch.cos(y) ** 2 + 0.1


class General(torch.nn.Module):
    """General noise: d = 3 states driven by m = 2 Brownian motions."""

    noise_type = "general"

    def __init__(self, sde_type: str = "ito"):
        super().__init__()
        self.sde_type = sde_type
        self.w = torch.nn.Parameter(torch.linspace(-0.5, 0.5, 6, dtype=F64).reshape(3, 2))

    def f(self, t, y):
        return -y + torch.tanh(y).roll(1, dims=-1)

    def g(self, t, y):
        return self.w * torch.sigmoid(y).unsqueeze(-1)


class GBM:
    """dY = mu Y dt + sigma Y dW (Ito); exact solution Y0 exp((mu - sigma^2/2) t + sigma W_t)."""

    noise_type, sde_type = "diagonal", "ito"

    def __init__(self, mu: float, sigma: float):
        self.mu, self.sigma = mu, sigma

    def f(self, t, y):
        return self.mu * y

    def g(self, t, y):
        return self.sigma * y


# ----- BrownianPath -----


@pytest.mark.parametrize("t0, t1", [(0.0, 1.0), (0.5, 2.25)])
def test_fine_increments_sum_to_the_coarse_one(t0, t1):
    path = BrownianPath(t0, t1, (5, 3), seed=11, dtype=F64)
    grid = torch.linspace(t0, t1, 101, dtype=F64).tolist()  # mostly not dyadic: leaf draws too
    fine = sum(path(grid[i], grid[i + 1]) for i in range(100))
    torch.testing.assert_close(fine, path(t0, t1), rtol=0, atol=1e-12)
    sub = sum(path(grid[i], grid[i + 1]) for i in range(20, 57))
    torch.testing.assert_close(sub, path(grid[20], grid[57]), rtol=0, atol=1e-12)
    torch.testing.assert_close(path(grid[57]) - path(grid[20]), path(grid[20], grid[57]), rtol=0, atol=1e-12)


def test_same_seed_same_path_whatever_the_query_order():
    times = torch.rand(40, generator=torch.Generator().manual_seed(0), dtype=F64).tolist() + [0.25, 0.5, 0.625]
    forward = BrownianPath(0.0, 1.0, (7,), seed=5, dtype=F64)
    shuffled = BrownianPath(0.0, 1.0, (7,), seed=5, dtype=F64, cache_size=3)  # a small cache recomputes
    for s in torch.linspace(0, 1, 33, dtype=F64).tolist():  # a coarse query first, on the second path only
        shuffled(0.0, s)
    values = {s: forward(s) for s in sorted(times)}
    for s in reversed(times):
        assert torch.equal(shuffled(s), values[s])
    other = BrownianPath(0.0, 1.0, (7,), seed=6, dtype=F64)
    assert not torch.equal(other(0.5), values[0.5])


def test_increments_have_variance_t_minus_s_and_are_independent():
    n_seeds, width = 16, 2500
    n = n_seeds * width
    paths = [BrownianPath(0.0, 2.0, (width,), seed=s, dtype=F64) for s in range(n_seeds)]
    for s, t in [(0.1, 0.35), (0.5, 0.5 + 2**-7), (1.3, 2.0)]:
        inc = torch.cat([p(s, t) for p in paths])
        var = inc.var().item()
        # sample variance of n normals: relative standard deviation sqrt(2 / n) (0.0071 here); allow 5 of them
        assert abs(var / (t - s) - 1) < 5 * math.sqrt(2 / n), (s, t, var)
        assert abs(inc.mean().item()) < 5 * math.sqrt((t - s) / n)
    a = torch.cat([p(0.1, 0.6) for p in paths])
    b = torch.cat([p(0.6, 1.7) for p in paths])
    corr = torch.corrcoef(torch.stack([a, b]))[0, 1].item()
    assert abs(corr) < 5 / math.sqrt(n)


def test_path_is_the_same_in_float32_and_a_torchsde_bm():
    p64 = BrownianPath(0.0, 1.0, (4, 2), seed=2, dtype=F64)
    p32 = BrownianPath(0.0, 1.0, (4, 2), seed=2, dtype=torch.float32)
    assert p32(0.3, 0.8).dtype == torch.float32
    torch.testing.assert_close(p32(0.3, 0.8), p64(0.3, 0.8).float())
    assert p64.shape == (4, 2) and p64.dtype == F64 and p64.device == torch.device("cpu")
    with pytest.raises(ValueError, match="outside the path's interval"):
        p64(0.5, 1.5)
    with pytest.raises(ValueError, match="s <= t"):
        p64(0.8, 0.3)


# ----- parity with torchsde on the same Brownian path (float64) -----


@pytest.mark.parametrize("method", ["euler", "milstein", "reversible_heun"])
def test_parity_with_torchsde_on_the_same_path(method):
    sde = Toy("stratonovich" if method == "reversible_heun" else "ito")
    y0 = torch.linspace(-1, 1, 12, dtype=F64).reshape(4, 3)
    ts = torch.tensor([0.0, 0.25, 0.5, 1.0], dtype=F64)
    bm = BrownianPath(0.0, 1.0, (4, 3), seed=7, dtype=F64)
    ours = sdeint(sde, y0, ts, method=method, dt=2**-6, bm=bm)
    theirs = torchsde.sdeint(sde, y0, ts, bm=bm, method=method, dt=2**-6)
    assert ours.status is Status.SUCCESS and ours.ys.shape == (4, 4, 3)
    torch.testing.assert_close(ours.ys, theirs, rtol=0, atol=1e-10)
    # gradients by backprop through both solvers agree too
    (g_ours,) = torch.autograd.grad(ours.ys[-1].square().sum(), sde.b)
    (g_theirs,) = torch.autograd.grad(theirs[-1].square().sum(), sde.b)
    torch.testing.assert_close(g_ours, g_theirs, rtol=1e-10, atol=1e-10)


def test_torchsde_brownian_interval_drives_our_solver():
    sde = Toy()
    y0 = torch.full((3, 3), 0.2, dtype=F64)
    ts = torch.linspace(0, 1, 5, dtype=F64)
    bm = torchsde.BrownianInterval(0.0, 1.0, size=(3, 3), dtype=F64, entropy=4)
    ours = sdeint(sde, y0, ts, method="milstein", dt=2**-5, bm=bm)
    theirs = torchsde.sdeint(sde, y0, ts, bm=bm, method="milstein", dt=2**-5)
    torch.testing.assert_close(ours.ys, theirs, rtol=0, atol=1e-10)


@pytest.mark.parametrize("method, sde_type", [("euler", "ito"), ("reversible_heun", "stratonovich")])
def test_general_noise_parity(method, sde_type):
    y0 = torch.linspace(-1, 1, 6, dtype=F64).reshape(2, 3)
    ts = torch.tensor([0.0, 0.5], dtype=F64)
    bm = BrownianPath(0.0, 0.5, (2, 2), seed=1, dtype=F64)
    sde = General(sde_type)
    ours = sdeint(sde, y0, ts, method=method, dt=2**-5, bm=bm)
    theirs = torchsde.sdeint(sde, y0, ts, bm=bm, method=method, dt=2**-5)
    torch.testing.assert_close(ours.ys, theirs, rtol=0, atol=1e-10)
    # without bm the noise size (2, 2) is learnt from one diffusion evaluation; the seed reproduces the solve
    again = sdeint(sde, y0, ts, method=method, dt=2**-5, seed=1)
    torch.testing.assert_close(again.ys, ours.ys, rtol=0, atol=0)


# ----- strong orders on geometric Brownian motion -----

# Declared before the first run and never moved: Euler-Maruyama is strong order 0.5, Milstein 1.0.
SLOPE_INTERVALS = {"euler": (0.35, 0.65), "milstein": (0.85, 1.15)}


def strong_errors(method: str, paths: int = 400, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-path absolute errors at T = 1 against the exact solution: shape (levels, paths), and the dts."""
    mu, sigma, y0 = 0.5, 1.0, 1.0
    bm = BrownianPath(0.0, 1.0, (paths, 1), seed=seed, dtype=F64)
    exact = y0 * torch.exp((mu - sigma**2 / 2) + sigma * bm(0.0, 1.0))
    dts = torch.tensor([2.0**-k for k in range(4, 10)], dtype=F64)
    y0s = torch.full((paths, 1), y0, dtype=F64)
    with torch.no_grad():  # no parameters here; Milstein's autograd dg/dy builds no graph to keep then
        errs = [
            (sdeint(GBM(mu, sigma), y0s, [0.0, 1.0], method=method, dt=float(h), bm=bm).ys[-1] - exact).abs()[:, 0]
            for h in dts
        ]
    return torch.stack(errs), dts


def slope(errs: torch.Tensor, dts: torch.Tensor) -> float:
    """Least-squares slope of log(mean error) against log(dt)."""
    x, yv = dts.log(), errs.mean(dim=1).log()
    x = x - x.mean()
    return float((x * (yv - yv.mean())).sum() / (x * x).sum())


def bootstrap_slopes(errs: torch.Tensor, dts: torch.Tensor, n: int = 200) -> torch.Tensor:
    gen = torch.Generator().manual_seed(1)
    idx = torch.randint(0, errs.shape[1], (n, errs.shape[1]), generator=gen)
    return torch.tensor([slope(errs[:, i], dts) for i in idx])


@pytest.mark.parametrize("method", ["euler", "milstein"])
def test_strong_order_on_geometric_brownian_motion(method):
    errs, dts = strong_errors(method)
    measured = slope(errs, dts)
    low, high = SLOPE_INTERVALS[method]
    spread = bootstrap_slopes(errs, dts)
    q = torch.quantile(spread, torch.tensor([0.025, 0.975], dtype=spread.dtype)).tolist()
    print(f"{method}: slope {measured:.3f}, bootstrap 95% [{q[0]:.3f}, {q[1]:.3f}] over {errs.shape[1]} paths")
    assert low <= measured <= high, (method, measured, q)
    assert (errs.mean(dim=1)[1:] < errs.mean(dim=1)[:-1]).all()  # the error falls at every halving of dt


# ----- work, status and errors -----


def test_work_counts_and_grid_off_the_output_times():
    ts = [0.0, 0.25, 1.0]
    dt = 0.1
    expected = sum(math.ceil((b - a) / dt - 1e-9) for a, b in zip(ts[:-1], ts[1:]))
    y0 = torch.zeros(2, 3, dtype=F64)
    euler = sdeint(Toy(), y0, ts, method="euler", dt=dt, seed=0)
    assert euler.steps == expected and euler.nfe_drift == expected and euler.nfe_diffusion == expected
    assert euler.nfe == 2 * expected and euler.seed == 0 and euler.success
    heun = sdeint(Toy("stratonovich"), y0, ts, method="reversible_heun", dt=dt, seed=0)
    assert heun.steps == expected and heun.nfe_drift == expected + 1  # one more at ts[0]
    torch.manual_seed(3)
    first = sdeint(Toy(), y0, ts, method="euler", dt=dt)
    torch.manual_seed(3)
    assert torch.equal(sdeint(Toy(), y0, ts, method="euler", dt=dt).ys, first.ys)


def test_float32_solve_tracks_float64():
    sde = Toy()
    y0 = torch.linspace(-1, 1, 6, dtype=F64).reshape(2, 3)
    ys64 = sdeint(sde, y0, [0.0, 1.0], method="milstein", dt=2**-6, seed=9).ys
    ys32 = sdeint(sde.float(), y0.float(), [0.0, 1.0], method="milstein", dt=2**-6, seed=9).ys
    assert ys32.dtype == torch.float32
    torch.testing.assert_close(ys32.double(), ys64, rtol=0, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_solve_on_each_device_and_dtype_matches_cpu_float64(device, dtype):
    y0 = torch.linspace(-1, 1, 6, dtype=F64).reshape(2, 3)
    reference = sdeint(Toy(), y0, [0.0, 0.5, 1.0], method="euler", dt=2**-6, seed=4).ys
    sol = sdeint(Toy().to(device, dtype), y0.to(device, dtype), [0.0, 0.5, 1.0], method="euler", dt=2**-6, seed=4)
    assert sol.ys.device.type == device and sol.ys.dtype == dtype
    atol = 1e-4 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(sol.ys.cpu().double(), reference, rtol=0, atol=atol)


def test_blow_up_is_reported_as_non_finite():
    class Blow:
        noise_type, sde_type = "diagonal", "ito"

        def f(self, t, y):
            return y**3

        def g(self, t, y):
            return 0.1 * torch.ones_like(y)

    sol = sdeint(Blow(), torch.full((1, 1), 3.0, dtype=F64), [0.0, 0.5, 1.0, 2.0], method="euler", dt=0.01, seed=0)
    assert sol.status is Status.NON_FINITE and not sol.success
    assert "not finite" in sol.message and torch.isnan(sol.ys[-1]).all()


@pytest.mark.parametrize(
    "kwargs, sde, words",
    [
        (dict(method="rk4", dt=0.1), Toy(), "method="),
        (dict(method="euler", dt=0.0), Toy(), "dt="),
        (dict(method="euler", dt=-0.1), Toy(), "dt="),
        (dict(method="euler", dt=0.1, ts=[0.0, 1.0, 0.5]), Toy(), "ts must be strictly increasing"),
        (dict(method="milstein", dt=0.1), General(), "noise_type"),
        (dict(method="euler", dt=0.1), Toy("stratonovich"), "sde_type"),
        (dict(method="reversible_heun", dt=0.1), Toy("ito"), "sde_type"),
        (dict(method="euler", dt=0.1, seed=1, bm=BrownianPath(0, 1, (2, 3), seed=1)), Toy(), "bm or seed"),
        (dict(method="euler", dt=0.1, bm=BrownianPath(0, 1, (2, 2), seed=1, dtype=F64)), Toy(), "size=y0.shape"),
        (dict(method="euler", dt=0.1, gradient="magic"), Toy(), "gradient="),
    ],
)
def test_bad_arguments_name_themselves(kwargs, sde, words):
    ts = kwargs.pop("ts", [0.0, 1.0])
    with pytest.raises(SDEArgumentError, match=words):
        sdeint(sde, torch.zeros(2, 3, dtype=F64), ts, **kwargs)


# ----- the stochastic adjoint against backprop through the same solve -----

# Set after one exploratory run of the Toy case (max relative difference 1.2e-3 at dt = 2**-8), with
# eightfold room; the General case was first run with this bound already written here.
ADJOINT_RTOL = 1e-2


def adjoint_and_backprop(sde, y0, bm, dt):
    ts = torch.tensor([0.0, 0.5, 1.0], dtype=F64)
    out = {}
    for gradient in ("backprop", "adjoint"):
        y = y0.clone().requires_grad_(True)
        sol = sdeint(sde, y, ts, method="reversible_heun", dt=dt, bm=bm, gradient=gradient)
        loss = (sol.ys[1:] ** 2).sum()  # the loss reads two output times: dL/dys[1] enters midway
        grads = torch.autograd.grad(loss, [y, *sde.parameters()])
        out[gradient] = (sol, torch.cat([g.reshape(-1) for g in grads]))
    return out


def relative_gap(out) -> float:
    ref = out["backprop"][1]
    return ((out["adjoint"][1] - ref).abs().max() / ref.abs().max()).item()


@pytest.mark.parametrize("case", ["diagonal", "general"])
def test_adjoint_matches_backprop_on_the_same_path(case):
    if case == "diagonal":
        sde, y0, size = Toy("stratonovich"), torch.linspace(-1, 1, 12, dtype=F64).reshape(4, 3), (4, 3)
    else:
        sde, y0, size = General("stratonovich"), torch.linspace(-1, 1, 6, dtype=F64).reshape(2, 3), (2, 2)
    bm = BrownianPath(0.0, 1.0, size, seed=7, dtype=F64)
    out = adjoint_and_backprop(sde, y0, bm, 2**-8)
    adjoint = out["adjoint"][0]
    assert torch.equal(adjoint.ys, out["backprop"][0].ys)  # the same forward solve
    assert adjoint.gradient == "adjoint" and adjoint.stats["steps_backward"] == 256
    assert adjoint.stats["nfe_backward"] == 4 * 256  # Heun: two evaluations of f and of g per step
    gap = relative_gap(out)
    print(f"{case}: adjoint vs backprop max relative gap {gap:.2e} at dt=2**-8")
    assert gap < ADJOINT_RTOL


def test_adjoint_gap_shrinks_with_dt_and_needs_stratonovich():
    bm = BrownianPath(0.0, 1.0, (4, 3), seed=7, dtype=F64)
    y0 = torch.linspace(-1, 1, 12, dtype=F64).reshape(4, 3)
    coarse = relative_gap(adjoint_and_backprop(Toy("stratonovich"), y0, bm, 2**-5))
    fine = relative_gap(adjoint_and_backprop(Toy("stratonovich"), y0, bm, 2**-9))
    print(f"adjoint gap {coarse:.2e} at dt=2**-5, {fine:.2e} at dt=2**-9")
    assert fine < coarse
    with pytest.raises(SDEArgumentError, match="Stratonovich"):
        sdeint(Toy("ito"), y0, [0.0, 1.0], method="euler", dt=0.1, seed=0, gradient="adjoint")


class ClosedOver:
    """A Stratonovich SDE that is no module: its drift and diffusion close over ``theta`` and ``unused``."""

    sde_type, noise_type = "stratonovich", "diagonal"

    def __init__(self, theta, unused):
        self.theta, self.unused = theta, unused

    def f(self, t, y):
        return -self.theta * y

    def g(self, t, y):
        return 0.3 * torch.sin(y)


def test_adjoint_differentiates_what_the_sde_closes_over_as_backprop_does():
    bm = BrownianPath(0.0, 1.0, (4, 3), seed=3, dtype=F64)
    y0 = torch.linspace(-1, 1, 12, dtype=F64).reshape(4, 3)
    grads = {}
    for gradient in ("backprop", "adjoint"):
        theta = torch.tensor(0.8, dtype=F64, requires_grad=True)
        unused = torch.tensor(1.0, dtype=F64, requires_grad=True)
        sol = sdeint(ClosedOver(theta, unused), y0, [0.0, 1.0], method="reversible_heun", dt=2**-8, bm=bm,
                     gradient=gradient)  # fmt: skip
        sol.ys[-1].pow(2).sum().backward()
        assert unused.grad is None  # no evaluation reached it: None, as with backprop
        grads[gradient] = theta.grad
    assert grads["adjoint"] is not None
    torch.testing.assert_close(grads["adjoint"], grads["backprop"], rtol=ADJOINT_RTOL, atol=0.0)


def test_adjoint_refuses_a_closed_over_tensor_built_with_a_graph():
    p = torch.tensor(0.9, dtype=F64, requires_grad=True)
    with pytest.raises(SDEArgumentError, match="built with a graph before the solve"):
        sdeint(ClosedOver(p * p, torch.tensor(1.0, dtype=F64)), torch.ones(2, 3, dtype=F64), [0.0, 1.0],
               method="reversible_heun", dt=0.1, seed=0, gradient="adjoint")  # fmt: skip
