"""nodecourse.cde: paths against torchcde's, causality, cdeint against torchcde.cdeint and its
gradient routes against each other, shape errors, float32."""

import pytest
import torch
import torchcde

from nodecourse import cde

NAN = float("nan")
TIMES = [0.0, 0.25, 0.5, 1.25, 1.5, 2.0, 2.75, 3.0]  # irregular, every gap a multiple of 1/8

KINDS = {
    "linear": (cde.linear_coeffs, torchcde.linear_interpolation_coeffs, torchcde.LinearInterpolation),
    "hermite": (
        cde.hermite_cubic_coeffs,
        torchcde.hermite_cubic_coefficients_with_backward_differences,
        torchcde.CubicSpline,
    ),
    "natural": (cde.natural_cubic_coeffs, torchcde.natural_cubic_coeffs, torchcde.CubicSpline),
}


def _series(dtype=torch.float64, batch=(2, 3), channels=3, seed=0):
    """Observations at TIMES, shape (*batch, 8, channels), with missing values of every kind."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*batch, len(TIMES), channels, generator=g, dtype=dtype)
    flat = x.view(-1, len(TIMES), channels)
    rows = flat.size(0)
    gaps = [  # (row, times, channel)
        (0, slice(0, 1), 0),  # leading
        (1, slice(3, 5), 1),  # an interior run
        (2, slice(-2, None), 2),  # trailing
        (-1, slice(None), 0),  # a channel never observed
        (-2, slice(0, 2), 1),  # leading and interior in one channel
        (-2, slice(5, 6), 1),
    ]
    for row, times, channel in gaps:
        flat[row % rows, times, channel % channels] = NAN
    return x, torch.tensor(TIMES, dtype=dtype)


def _ours(kind, x, t):
    return cde.interpolate(x, t, kind=kind)


def _theirs(kind, x, t):
    _, coeffs, path = KINDS[kind]
    return path(coeffs(x, t), t)


def _close(a, b, tol=1e-6):
    torch.testing.assert_close(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("kind", list(KINDS))
def test_paths_match_torchcde_on_irregular_times_with_missing_values(kind):
    x, t = _series()
    ours, theirs, _ = KINDS[kind]
    _close(ours(x, t), theirs(x, t))
    X, XT = _ours(kind, x, t), _theirs(kind, x, t)
    # between knots, at the knots (the left piece's derivative there) and outside the interval
    grid = torch.cat([torch.linspace(-0.3, 3.3, 49, dtype=t.dtype), t])
    _close(X.evaluate(grid), XT.evaluate(grid))
    _close(X.derivative(grid), XT.derivative(grid))
    _close(X.derivative(t[3]), XT.derivative(t[3]))  # one time: shape (..., channels)
    assert X.derivative(t[3]).shape == (2, 3, 3)
    assert torch.equal(X.grid_points, XT.grid_points) and torch.equal(X.interval, XT.interval)
    assert not torch.isnan(X.evaluate(grid)).any()


@pytest.mark.parametrize("kind", list(KINDS))
def test_default_times_are_the_indices_as_in_torchcde(kind):
    x, _ = _series(batch=(2,))
    X = cde.interpolate(x, kind=kind)
    XT = _theirs(kind, x, None)
    grid = torch.linspace(0, 7, 29, dtype=x.dtype)
    _close(X.evaluate(grid), XT.evaluate(grid))
    assert X.grid_points.tolist() == list(range(8))


def test_linear_fill_interpolates_inside_and_carries_the_ends():
    t = torch.tensor([0.0, 1.0, 2.0, 4.0, 5.0], dtype=torch.float64)
    x = torch.tensor([[NAN, NAN], [1.0, NAN], [NAN, NAN], [3.0, NAN], [NAN, NAN]], dtype=torch.float64)
    filled = cde.linear_coeffs(x, t)
    # inside: 1 + (2 - 1) / (4 - 1) * (3 - 1); the ends take the nearest observation; never observed: 0
    assert filled[:, 0].tolist() == pytest.approx([1.0, 1.0, 1.0 + 2.0 / 3.0, 3.0, 3.0])
    assert filled[:, 1].tolist() == [0.0] * 5


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_straight_line_is_reproduced_exactly(kind):
    t = torch.tensor(TIMES, dtype=torch.float64)
    x = torch.stack([2 * t + 1, -t], dim=-1)
    X = cde.interpolate(x, t, kind=kind)
    grid = torch.linspace(0, 3, 31, dtype=t.dtype)
    _close(X.evaluate(grid), torch.stack([2 * grid + 1, -grid], -1), tol=1e-12)
    _close(X.derivative(grid), torch.tensor([2.0, -1.0], dtype=t.dtype).expand(31, 2), tol=1e-12)


def test_natural_spline_has_zero_curvature_at_the_ends_and_a_continuous_one_inside():
    x, t = _series(batch=(), channels=1)
    x = torch.nan_to_num(x, 0.5)
    coeffs = cde.natural_cubic_coeffs(x, t)
    a, b, two_c, three_d = coeffs.chunk(4, dim=-1)
    h = (t[1:] - t[:-1]).unsqueeze(-1)
    end_curvature = two_c + 2 * three_d * h  # second derivative at each piece's end
    assert abs(two_c[0].item()) < 1e-12 and abs(end_curvature[-1].item()) < 1e-12
    _close(end_curvature[:-1], two_c[1:], tol=1e-10)


def test_causal_paths_do_not_see_a_later_observation():
    x, t = _series(batch=(2,))
    x = torch.nan_to_num(x, 0.3)  # fully observed: filling a gap would look ahead
    later = x.clone()
    later[:, 5] += 1.0  # change the observation at t[5] = 2.0
    before = torch.linspace(0.0, float(t[4]), 25, dtype=t.dtype)  # up to the previous observation
    between = torch.linspace(float(t[4]) + 0.05, float(t[5]), 5, dtype=t.dtype)
    for kind, causal in [("linear", True), ("hermite", True), ("natural", False)]:
        X, Y = cde.interpolate(x, t, kind=kind), cde.interpolate(later, t, kind=kind)
        assert X.causal is causal
        moved = (X.evaluate(before) - Y.evaluate(before)).abs().max().item()
        assert (moved == 0.0) if causal else (moved > 1e-3), (kind, moved)
        assert (X.evaluate(between) - Y.evaluate(between)).abs().max().item() > 1e-3  # seen once it is due


def test_intensity_and_time_channels():
    x = torch.tensor([[NAN, 1.0], [2.0, NAN], [NAN, NAN], [3.0, 4.0]])
    out = cde.intensity_channels(x)
    assert out.shape == (4, 4) and out.dtype == x.dtype
    assert out[:, 2:].tolist() == [[0, 1], [1, 1], [1, 1], [2, 2]]
    assert torch.equal(torch.isnan(out[:, :2]), torch.isnan(x))
    t = torch.tensor([0.0, 0.5, 2.0, 2.5])
    timed = cde.time_channel(x.expand(3, 4, 2), t)
    assert timed.shape == (3, 4, 3) and torch.equal(timed[1, :, 0], t)


class _Field(torch.nn.Module):
    """f(t, z): (..., hidden) -> (..., hidden, channels)."""

    def __init__(self, hidden, channels, dtype=torch.float64, seed=1):
        super().__init__()
        torch.manual_seed(seed)
        self.hidden, self.channels = hidden, channels
        self.lin = torch.nn.Linear(hidden, hidden * channels).to(dtype)

    def forward(self, t, z):
        return torch.tanh(self.lin(z)).view(*z.shape[:-1], self.hidden, self.channels)


def _problem(dtype=torch.float64):
    x, t = _series(dtype=dtype, batch=(3,), channels=2)
    func = _Field(4, 2, dtype)
    z0 = torch.randn(3, 4, generator=torch.Generator().manual_seed(2), dtype=dtype)
    return x, t, func, z0


@pytest.mark.parametrize("kind", list(KINDS))
def test_cdeint_matches_torchcde_fixed_steps(kind):
    x, t, func, z0 = _problem()
    out = torch.tensor([0.0, 1.0, 2.0, 3.0], dtype=t.dtype)
    X, XT = _ours(kind, x, t), _theirs(kind, x, t)
    # torchdiffeq's (so torchcde's) "rk4" is Kutta's 3/8 rule: "rk38" here; 1/8 ends a step on every knot
    sol = cde.cdeint(X, func, z0, out, method="rk38", step_size=0.125)
    ref = torchcde.cdeint(XT, func, z0, out, adjoint=False, method="rk4", options=dict(step_size=0.125))
    _close(sol.ys.movedim(0, -2), ref)
    assert sol.success and sol.stats["n_steps"] == 24 and sol.stats["nfe"] == 96


@pytest.mark.parametrize("kind", list(KINDS))
def test_cdeint_matches_torchcde_dopri5(kind):
    x, t, func, z0 = _problem()
    X, XT = _ours(kind, x, t), _theirs(kind, x, t)
    tol = dict(rtol=1e-9, atol=1e-11)
    sol = cde.cdeint(X, func, z0, X.interval, **tol)
    ref = torchcde.cdeint(XT, func, z0, XT.interval, adjoint=False, method="dopri5", **tol)
    _close(sol.ys.movedim(0, -2), ref)
    assert sol.method == "dopri5" and sol.stats["n_rejected"] > 0  # the kinks at the knots cost rejections


def test_a_constant_field_integrates_the_path_exactly():
    # dz = A dX  =>  z(t_k) = z0 + A (x_k - x_0); rk4 is exact on the quadratic dX/dt of each cubic piece
    x, t = _series(batch=(), channels=2)
    x = torch.nan_to_num(x, -0.4)
    A = torch.tensor([[1.0, -2.0], [0.5, 3.0], [0.0, 1.0]], dtype=t.dtype)
    z0 = torch.tensor([0.1, 0.2, 0.3], dtype=t.dtype)
    X = cde.interpolate(x, t, kind="natural")
    sol = cde.cdeint(X, lambda t, z: A, z0, t, method="rk4", step_size=0.125)
    _close(sol.ys, z0 + (x - x[0]) @ A.T, tol=1e-12)


def test_fixed_steps_default_to_the_smallest_gap():
    x, t, func, z0 = _problem()
    X = cde.interpolate(x, t, kind="hermite")
    assert cde.smallest_spacing(X) == 0.25
    default = cde.cdeint(X, func, z0, X.interval, method="rk4")
    given = cde.cdeint(X, func, z0, X.interval, method="rk4", step_size=0.25)
    assert default.stats["n_steps"] == 12 and torch.equal(default.ys, given.ys)
    torchdiffeq_style = cde.cdeint(X, func, z0, X.interval, method="rk4", options={"step_size": 0.5})
    assert torchdiffeq_style.stats["n_steps"] == 6


def _gradients(gradient, kind, leaf, method, end=3.0, **tol):
    """d(sum z(T)^2) with respect to func's weight and to the data: the coefficients (leaf) or the
    observations they are computed from (so the coefficients carry a graph built before the solve)."""
    x, t, func, z0 = _problem()
    source = x.clone().requires_grad_(True)
    coeffs_of = KINDS[kind][0]
    if leaf:
        source = coeffs_of(x, t).detach().requires_grad_(True)
        coeffs = source
    else:
        coeffs = coeffs_of(source, t)
    X = cde.LinearInterpolation(coeffs, t) if kind == "linear" else cde.CubicSpline(coeffs, t)
    sol = cde.cdeint(X, func, z0, torch.tensor([0.0, end], dtype=t.dtype), method=method, gradient=gradient, **tol)
    weight, data = torch.autograd.grad(sol.ys[-1].pow(2).sum(), [func.lin.weight, source])
    return weight, data


ON_KNOTS = dict(method="rk4", step_size=1 / 32)  # fixed steps that end on every knot
ADAPTIVE = dict(method="dopri5", rtol=1e-8, atol=1e-10, end=1.5)  # three knots crossed


@pytest.mark.parametrize(
    "kind, leaf, adjoint_solve",
    [
        ("linear", False, ADAPTIVE),
        ("hermite", False, ON_KNOTS),
        ("hermite", True, ON_KNOTS),
        ("natural", True, ON_KNOTS),
    ],
)
def test_gradient_routes_agree_for_parameters_and_coefficients(kind, leaf, adjoint_solve):
    backprop = _gradients("backprop", kind, leaf, method="rk4", step_size=0.125)
    checkpoint = _gradients("checkpoint", kind, leaf, method="rk4", step_size=0.125)
    for a, b in zip(checkpoint, backprop):
        _close(a, b, tol=1e-10)  # the same discrete solve, replayed
    assert backprop[1].abs().max() > 0.1  # the data do steer the state
    # the adjoint solves the continuous adjoint equation backwards: equal up to both solves' errors.
    # The gradient of one piece's coefficients integrates a function that jumps at the piece's knots:
    # steps that end on the knots integrate it exactly to the method's order (adaptive steps straddle
    # the jumps; the gradient of the observations, a sum over adjacent pieces, is continuous again)
    exact = _gradients("backprop", kind, leaf, **adjoint_solve)
    adjoint = _gradients("adjoint", kind, leaf, **adjoint_solve)
    for a, b in zip(adjoint, exact):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5 * b.abs().max().item())


def test_wrong_shapes_are_named():
    x, t, func, z0 = _problem()
    X = cde.interpolate(x, t)
    with pytest.raises(ValueError, match=r"func\(t, z\) must return shape .*\(3, 4, 2\).*got \(3, 8\)"):
        cde.cdeint(X, lambda t, z: torch.zeros(3, 8, dtype=z.dtype), z0, X.interval)
    with pytest.raises(ValueError, match=r"X\.derivative\(t\) has shape \(3, 2\).*z0's \(5,\)"):
        cde.cdeint(X, func, torch.zeros(5, 4, dtype=z0.dtype), X.interval)
    with pytest.raises(TypeError, match="X must be a path"):
        cde.cdeint(x, func, z0, t)
    with pytest.raises(ValueError, match="per_sample"):
        cde.cdeint(X, func, z0, X.interval, per_sample=True)
    with pytest.raises(ValueError, match="coeffs"):
        cde.CubicSpline(torch.zeros(3, 7, 5))
    with pytest.raises(ValueError, match="strictly increasing"):
        cde.linear_coeffs(x, t.flip(0))
    with pytest.raises(ValueError, match=r"t must have shape \(8,\)"):
        cde.natural_cubic_coeffs(x, t[:-1])


def test_float32_solves_and_differentiates():
    x64, t64, func64, z64 = _problem()
    x, t, z0 = x64.float(), t64.float(), z64.float()
    func = _Field(4, 2, torch.float32)
    func.load_state_dict(func64.state_dict())
    X = cde.interpolate(x, t, kind="hermite")
    assert X.grid_points.dtype == torch.float32
    sol = cde.cdeint(X, func, z0, X.interval, gradient="adjoint", **ON_KNOTS)
    ref = cde.cdeint(cde.interpolate(x64, t64, kind="hermite"), func64, z64, t64[[0, -1]], **ON_KNOTS)
    assert sol.ys.dtype == torch.float32
    torch.testing.assert_close(sol.ys.double(), ref.ys, rtol=1e-5, atol=1e-5)  # float32 rounding only
    sol.ys[-1].sum().backward()
    assert torch.isfinite(func.lin.weight.grad).all() and func.lin.weight.grad.abs().max() > 0


def test_coefficients_and_paths_interchange_with_torchcde():
    x, t, func, z0 = _problem()
    ours = cde.cdeint(cde.interpolate(x, t, kind="natural"), func, z0, t, method="rk4")
    theirs_path = torchcde.CubicSpline(torchcde.natural_cubic_coeffs(x, t), t)  # torchcde's path, our solver
    _close(cde.cdeint(theirs_path, func, z0, t, method="rk4").ys, ours.ys, tol=1e-12)
    swapped = cde.CubicSpline(torchcde.natural_cubic_coeffs(x, t), t)  # torchcde's coefficients, our path
    _close(swapped.derivative(t), theirs_path.derivative(t), tol=1e-12)
