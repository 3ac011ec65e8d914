"""Models written the way torchdiffeq's and torchdeq's examples write them (ode_demo.py, latent_ode.py,
cnf.py, odenet_mnist.py, torchdeq's get_deq), shrunk to seconds, for the audit's tests.

Nothing here imports nodecourse: the audit must take these as they are. Each ``build_*`` returns
``(model, train, test, task)`` like the ``build()`` of ``nodecourse audit --model file.py:build``.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torchdiffeq
from torchdiffeq import (
    odeint,
    odeint_adjoint,  # bound at import, as odenet_mnist.py binds it
)
from torchdiffeq import odeint_adjoint as odeint_adj

TRUE_A = torch.tensor([[-0.1, 2.0], [-2.0, -0.1]])


# --- ode_demo.py: a trajectory on a grid -------------------------------------------------------


class ODEFunc(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
        for m in self.net.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0, std=0.1)
                nn.init.constant_(m.bias, val=0)

    def forward(self, t, y):
        return self.net(y**3)


class TrajectoryModel(nn.Module):
    """``y0 (N, 2) -> y(t) (N, T, 2)`` on a fixed grid, dopri5 at rtol 1e-4 (ode_demo's output)."""

    def __init__(self, n_times: int = 10, t_end: float = 2.0):
        super().__init__()
        self.func = ODEFunc()
        self.register_buffer("t", torch.linspace(0.0, t_end, n_times))

    def forward(self, y0):
        pred = odeint(self.func, y0, self.t, rtol=1e-4, atol=1e-6, method="dopri5")
        return pred.permute(1, 0, 2)


def _spiral_targets(y0: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """The true dynamics dy/dt = (y^3) A of ode_demo.py, solved tightly: ``(N, T, 2)``."""
    with torch.no_grad():
        return odeint(lambda t, y: torch.mm(y**3, TRUE_A), y0, t, rtol=1e-7, atol=1e-9).permute(1, 0, 2)


def build_trajectory(n: int = 40, steps: int = 30, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = TrajectoryModel()
    y0 = torch.tensor([[2.0, 0.0]]) + 0.3 * torch.randn(n, 2, generator=g)
    y = _spiral_targets(y0, model.t)
    _fit(model, y0[: n // 2], y[: n // 2], steps, lambda out, tgt: (out - tgt).abs().mean())
    return model, (y0[: n // 2], y[: n // 2]), (y0[n // 2 :], y[n // 2 :]), "regression"


# --- latent_ode.py: a GRU encoder, an ODE decoder -------------------------------------------------


class LatentODEfunc(nn.Module):
    def __init__(self, latent_dim=4, nhidden=16):
        super().__init__()
        self.elu = nn.ELU(inplace=True)
        self.fc1 = nn.Linear(latent_dim, nhidden)
        self.fc2 = nn.Linear(nhidden, latent_dim)
        self.nfe = 0

    def forward(self, t, x):
        self.nfe += 1
        return self.fc2(self.elu(self.fc1(x)))


class LatentODE(nn.Module):
    """Observations ``(N, T, 2)`` -> reconstruction ``(N, T, 2)``: a GRU read backwards gives ``z0``
    (the mean of q(z0) outside training), the ODE carries it over the grid, a linear decoder reads it."""

    def __init__(self, obs_dim=2, latent_dim=4, hidden=12, n_times=8):
        super().__init__()
        self.rnn = nn.GRU(obs_dim, hidden, batch_first=True)
        self.h2z = nn.Linear(hidden, 2 * latent_dim)
        self.func = LatentODEfunc(latent_dim)
        self.dec = nn.Linear(latent_dim, obs_dim)
        self.register_buffer("samp_ts", torch.linspace(0.0, 1.0, n_times))
        self.latent_dim = latent_dim

    def forward(self, x):
        _, h = self.rnn(torch.flip(x, dims=[1]))
        qz0_mean, qz0_logvar = self.h2z(h[-1]).chunk(2, dim=-1)
        z0 = qz0_mean
        if self.training:
            z0 = z0 + torch.randn_like(qz0_mean) * torch.exp(0.5 * qz0_logvar)
        pred_z = odeint(self.func, z0, self.samp_ts).permute(1, 0, 2)
        return self.dec(pred_z)


def build_latent(n: int = 40, steps: int = 20, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = LatentODE()
    phase = 2 * math.pi * torch.rand(n, 1, generator=g)
    t = model.samp_ts.reshape(1, -1)
    x = torch.stack([torch.cos(3 * t + phase), torch.sin(3 * t + phase)], dim=-1)
    x = x + 0.05 * torch.randn(x.shape, generator=g)
    _fit(model, x[: n // 2], x[: n // 2], steps, lambda out, tgt: (out - tgt).pow(2).mean())
    return model, (x[: n // 2], x[: n // 2]), (x[n // 2 :], x[n // 2 :]), "regression"


# --- cnf.py: a continuous normalising flow with a tuple state -----------------------------------


class CNFFunc(nn.Module):
    """``d(z, log p)/dt = (f(z), -tr ∂f/∂z)``, the trace by autograd (cnf.py's ``trace_df_dz``)."""

    def __init__(self, width=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, width), nn.Tanh(), nn.Linear(width, 2))

    def forward(self, t, states):
        z, logp_z = states
        with torch.set_grad_enabled(True):
            z.requires_grad_(True)
            dz_dt = self.net(torch.cat([z, t.expand(z.shape[0], 1).to(z)], dim=1))
            trace = sum(torch.autograd.grad(dz_dt[:, i].sum(), z, create_graph=True)[0][:, i] for i in range(2))
        return dz_dt, -trace.reshape(-1, 1)


class CNF(nn.Module):
    """``log p(x)`` per row: the flow from the data (t1) back to the base (t0) with ``torchdiffeq.odeint``."""

    def __init__(self):
        super().__init__()
        self.func = CNFFunc()
        self.t0, self.t1 = 0.0, 1.0

    def forward(self, x):
        logp_diff_t1 = torch.zeros(x.shape[0], 1, dtype=x.dtype, device=x.device)
        z_t, logp_diff_t = odeint(
            self.func, (x, logp_diff_t1), torch.tensor([self.t1, self.t0]).to(x), atol=1e-5, rtol=1e-5, method="dopri5"
        )
        z_t0, logp_diff_t0 = z_t[-1], logp_diff_t[-1]
        base = -0.5 * (z_t0**2).sum(-1) - math.log(2 * math.pi)
        return base - logp_diff_t0.reshape(-1)


def two_circles(n: int, generator: torch.Generator) -> torch.Tensor:
    angle = 2 * math.pi * torch.rand(n, generator=generator)
    radius = torch.where(torch.rand(n, generator=generator) < 0.5, 0.5, 1.5)
    return torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], 1) + 0.05 * torch.randn(
        n, 2, generator=generator
    )


def build_cnf(n: int = 48, steps: int = 10, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = CNF()
    x = two_circles(n, g)
    _fit(model, x[: n // 2], None, steps, lambda out, _: -out.mean())
    return model, (x[: n // 2], None), (x[n // 2 :], None), "density"


# --- odenet_mnist.py: a conv classifier through odeint_adjoint ------------------------------------


class ConcatConv2d(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self._layer = nn.Conv2d(dim_in + 1, dim_out, kernel_size=3, padding=1)

    def forward(self, t, x):
        tt = torch.ones_like(x[:, :1, :, :]) * t
        return self._layer(torch.cat([tt, x], 1))


class ConvODEfunc(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv1 = ConcatConv2d(dim, dim)
        self.conv2 = ConcatConv2d(dim, dim)
        self.nfe = 0

    def forward(self, t, x):
        self.nfe += 1
        return self.conv2(t, torch.tanh(self.conv1(t, x)))


class ODEBlock(nn.Module):
    def __init__(self, odefunc, tol=1e-3):
        super().__init__()
        self.odefunc = odefunc
        self.integration_time = torch.tensor([0, 1]).float()
        self.tol = tol

    def forward(self, x):
        self.integration_time = self.integration_time.type_as(x)
        out = odeint_adjoint(self.odefunc, x, self.integration_time, rtol=self.tol, atol=self.tol)
        return out[1]


class ODENet(nn.Module):
    """Digits 8x8 -> 10 logits: a conv stem, an ODE block through ``odeint_adjoint``, pooled, a linear head."""

    def __init__(self, channels=4):
        super().__init__()
        self.stem = nn.Conv2d(1, channels, 3, padding=1)
        self.block = ODEBlock(ConvODEfunc(channels))
        self.head = nn.Linear(channels, 10)

    def forward(self, x):
        h = self.block(torch.relu(self.stem(x.reshape(-1, 1, 8, 8))))
        return self.head(h.mean(dim=(2, 3)))


def digits(n: int, seed: int = 0):
    from sklearn.datasets import load_digits

    d = load_digits()
    g = torch.Generator().manual_seed(seed)
    idx = torch.randperm(len(d.target), generator=g)[:n]
    x = torch.tensor(d.data, dtype=torch.float32)[idx] / 16.0
    y = torch.tensor(d.target)[idx]
    return x, y


def build_conv_classifier(n: int = 120, steps: int = 10, seed: int = 0):
    torch.manual_seed(seed)
    model = ODENet()
    x, y = digits(n, seed)
    _fit(model, x[: n // 2], y[: n // 2], steps, lambda out, tgt: nn.functional.cross_entropy(out, tgt))
    return model, (x[: n // 2], y[: n // 2]), (x[n // 2 :], y[n // 2 :]), "classification"


# --- torchdeq's get_deq ---------------------------------------------------------------------------


class DEQNet(nn.Module):
    """``x (N, 4) -> 3 logits``: ``z* = tanh(W z* + U x)`` found by torchdeq, then a linear head."""

    def __init__(self, d_in=4, width=12, n_classes=3):
        super().__init__()
        from torchdeq import get_deq

        self.inj = nn.Linear(d_in, width)
        self.W = nn.Linear(width, width, bias=False)
        with torch.no_grad():
            self.W.weight.mul_(0.5)
        self.head = nn.Linear(width, n_classes)
        self.deq = get_deq(f_solver="fixed_point_iter", f_max_iter=40, f_tol=1e-4, ift=True)
        self.width = width

    def forward(self, x):
        u = self.inj(x)
        z0 = torch.zeros(x.shape[0], self.width, dtype=x.dtype, device=x.device)
        z_out, info = self.deq(lambda z: torch.tanh(self.W(z) + u), z0)
        return self.head(z_out[-1])


def build_deq(n: int = 80, steps: int = 15, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = DEQNet()
    x = torch.randn(n, 4, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
    _fit(model, x[: n // 2], y[: n // 2], steps, lambda out, tgt: nn.functional.cross_entropy(out, tgt))
    return model, (x[: n // 2], y[: n // 2]), (x[n // 2 :], y[n // 2 :]), "classification"


# --- planted faults ------------------------------------------------------------------------------


class LinearFunc(nn.Module):
    """``f(t, z) = A z``, ``A = Q diag(rates) Q^T``: the fast decaying mode rotated into every coordinate."""

    def __init__(self, rates=(-10.0, -0.1), angle=0.7):
        super().__init__()
        c, s = math.cos(angle), math.sin(angle)
        q = torch.tensor([[c, -s], [s, c]], dtype=torch.float64)
        self.A = nn.Parameter(q @ torch.diag(torch.tensor(rates, dtype=torch.float64)) @ q.T)

    def forward(self, t, z):
        return z @ self.A.T


class AdjointRegressor(nn.Module):
    """``z(T)`` of ``dz/dt = A z`` over ``[0, T]`` through ``odeint_adjoint`` (dopri5, rtol = atol = tol),
    then a linear readout; float64. The adjoint solves the state backwards, where the fast mode grows
    by ``e^(10 T)``: its parameter gradient is wrong though every forward number is right."""

    def __init__(self, T=3.0, tol=1e-6):
        super().__init__()
        self.func = LinearFunc()
        self.readout = nn.Linear(2, 1).double()
        self.T, self.tol = T, tol

    def forward(self, x):
        t = torch.tensor([0.0, self.T], dtype=x.dtype)
        return self.readout(odeint_adj(self.func, x, t, rtol=self.tol, atol=self.tol)[-1])


def build_adjoint_fault(n: int = 48, seed: int = 0, **kwargs):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = AdjointRegressor(**kwargs)
    x = torch.randn(n, 2, generator=g, dtype=torch.float64)
    with torch.no_grad():
        y = model(x) + 0.01 * torch.randn(n, 1, generator=g, dtype=torch.float64)
    return model, (x[: n // 2], y[: n // 2]), (x[n // 2 :], y[n // 2 :]), "regression"


class ScaledFunc(nn.Module):
    """A field holding a float32 tensor that is neither a parameter nor a buffer (common in user code)."""

    def __init__(self, d=3):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.mix = 0.5 * torch.eye(d)  # captured: .double() leaves it float32, and a matmul refuses the mix

    def forward(self, t, z):
        return torch.tanh(self.lin(z)) @ self.mix


class Float32Defaults(nn.Module):
    """float32, ``torchdiffeq.odeint`` at its defaults (rtol 1e-7, atol 1e-9), then two logits."""

    def __init__(self, d=3):
        super().__init__()
        self.func = ScaledFunc(d)
        self.head = nn.Linear(d, 2)

    def forward(self, x):
        return self.head(torchdiffeq.odeint(self.func, x, torch.tensor([0.0, 1.0]))[-1])


def build_float32(n: int = 48, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = Float32Defaults()
    x = torch.randn(n, 3, generator=g)
    y = (x[:, 0] > 0).long()
    return model, (x[: n // 2], y[: n // 2]), (x[n // 2 :], y[n // 2 :]), "classification"


def _fit(model, x, y, steps, loss_fn, lr=1e-2):
    """A few Adam steps on the whole split (the models are trained briefly, as a practitioner would first)."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    model.eval()


# --- every solve on its own: two solves through one helper -----------------------------------------


def solve_to(func, z, t_end, tol):
    """A user's helper: every solve of the model goes through this one line."""
    return odeint(func, z, torch.tensor([0.0, t_end], dtype=z.dtype), rtol=tol, atol=tol)[-1]


class Decay(nn.Module):
    def __init__(self, d=2):
        super().__init__()
        self.lin = nn.Linear(d, d).double()

    def forward(self, t, z):
        return torch.tanh(self.lin(z)) - z


class TwoSolvesOneHelper(nn.Module):
    """Two fields solved one after the other through :func:`solve_to`: a coarse encoder solve at
    rtol 1e-3, a fine decoder solve at rtol 1e-7 (float64), then a linear readout."""

    def __init__(self, d=2):
        super().__init__()
        self.enc, self.dec = Decay(d), Decay(d)
        self.readout = nn.Linear(d, 1).double()

    def forward(self, x):
        h = solve_to(self.enc, x, 1.0, 1e-3)
        return self.readout(solve_to(self.dec, h, 0.5, 1e-7))


def build_two_solves(n: int = 40, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = TwoSolvesOneHelper()
    x = torch.randn(n, 2, generator=g, dtype=torch.float64)
    y = x[:, :1] - 0.5 * x[:, 1:]
    _fit(model, x[: n // 2], y[: n // 2], 10, lambda out, tgt: (out - tgt).pow(2).mean())
    return model, (x[: n // 2], y[: n // 2]), (x[n // 2 :], y[n // 2 :]), "regression"


# --- torchdeq under either stop mode, failing at its deployed setting --------------------------------


class StarvedDEQ(nn.Module):
    """``z* = tanh(W z* + U x)`` by torchdeq's fixed-point iteration with too few iterations for its
    tolerance (4 iterations, tol 1e-6): every row stops unconverged, under ``stop_mode`` ``"abs"``
    or ``"rel"``, and torchdeq returns its best iterate without a word."""

    def __init__(self, stop_mode="rel", d_in=4, width=12, n_classes=3, max_iter=4, tol=1e-6):
        super().__init__()
        from torchdeq import get_deq

        self.inj = nn.Linear(d_in, width)
        self.W = nn.Linear(width, width, bias=False)
        with torch.no_grad():
            self.W.weight.mul_(0.5)
        self.head = nn.Linear(width, n_classes)
        self.deq = get_deq(f_solver="fixed_point_iter", f_max_iter=max_iter, f_tol=tol, f_stop_mode=stop_mode, ift=True)
        self.width = width

    def forward(self, x):
        u = self.inj(x)
        z0 = torch.zeros(x.shape[0], self.width, dtype=x.dtype, device=x.device)
        z_out, info = self.deq(lambda z: torch.tanh(self.W(z) + u), z0)
        return self.head(z_out[-1])


def build_starved_deq(stop_mode: str = "rel", n: int = 80, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = StarvedDEQ(stop_mode)
    x = torch.randn(n, 4, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
    _fit(model, x[: n // 2], y[: n // 2], 10, lambda out, tgt: nn.functional.cross_entropy(out, tgt))
    return model, (x[: n // 2], y[: n // 2]), (x[n // 2 :], y[n // 2 :]), "classification"


# --- the training route: a model that picks its solver on self.training --------------------------


class TrainsWithAdjoint(AdjointRegressor):
    """:class:`AdjointRegressor`'s field, solved through ``odeint_adjoint`` in training (whose
    parameter gradient cannot reverse the fast decaying mode) and through ``odeint`` in eval mode
    (FFJORD's CNF switches its tolerances on ``self.training`` the same way)."""

    def forward(self, x):
        t = torch.tensor([0.0, self.T], dtype=x.dtype)
        solve = odeint_adj if self.training else odeint
        return self.readout(solve(self.func, x, t, rtol=self.tol, atol=self.tol)[-1])


def build_train_eval_switch(n: int = 48, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = TrainsWithAdjoint()
    x = torch.randn(n, 2, generator=g, dtype=torch.float64)
    with torch.no_grad():
        model.eval()
        y = model(x) + 0.01 * torch.randn(n, 1, generator=g, dtype=torch.float64)
    return model, (x[: n // 2], y[: n // 2]), (x[n // 2 :], y[n // 2 :]), "regression"


# --- exact dynamics: regression from an initial condition ------------------------------------------


class ExactLinear(nn.Module):
    """``y = z(1)`` of ``dz/dt = A z`` with ``A`` the true dynamics' matrix (learned exactly):
    its loss under input noise grows as the targets themselves would."""

    def __init__(self):
        super().__init__()
        self.A = nn.Parameter(TRUE_A.clone().double())

    def forward(self, y0):
        t = torch.tensor([0.0, 1.0], dtype=y0.dtype)
        return odeint(lambda t, z: z @ self.A.T, y0, t, rtol=1e-6, atol=1e-8)[-1]


def build_exact_regression(n: int = 60, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = ExactLinear()
    x = torch.randn(n, 2, generator=g, dtype=torch.float64)
    with torch.no_grad():
        y = odeint(lambda t, z: z @ TRUE_A.double().T, x, torch.tensor([0.0, 1.0], dtype=torch.float64))[-1]
    return model, (x[: n // 2], y[: n // 2]), (x[n // 2 :], y[n // 2 :]), "regression"


# --- torchcde's README: a neural CDE on a cubic spline ------------------------------------------


class CDEFunc(nn.Module):
    def __init__(self, input_channels, hidden_channels):
        super().__init__()
        self.input_channels, self.hidden_channels = input_channels, hidden_channels
        self.linear1 = nn.Linear(hidden_channels, 16)
        self.linear2 = nn.Linear(16, input_channels * hidden_channels)

    def forward(self, t, z):
        z = self.linear2(self.linear1(z).relu()).tanh()
        return z.view(z.size(0), self.hidden_channels, self.input_channels)


class NeuralCDE(nn.Module):
    """Spline coefficients ``(N, L, C)`` -> one logit: ``torchcde.cdeint`` (adjoint, torchdiffeq's
    dopri5 at its defaults) over the spline, a linear readout of the final state."""

    def __init__(self, input_channels=3, hidden_channels=4):
        super().__init__()
        self.initial = nn.Linear(input_channels, hidden_channels)
        self.func = CDEFunc(input_channels, hidden_channels)
        self.readout = nn.Linear(hidden_channels, 1)

    def forward(self, coeffs):
        import torchcde

        X = torchcde.CubicSpline(coeffs)
        z0 = self.initial(X.evaluate(X.interval[0]))
        z_T = torchcde.cdeint(X=X, z0=z0, func=self.func, t=X.interval, rtol=1e-3, atol=1e-5)
        return self.readout(z_T[:, 1]).squeeze(-1)


def spirals(n: int, length: int, t_end: float, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """torchcde's README data: ``x`` of shape ``(n, length, 3)`` (time, x, y of a noisy spiral on
    ``[0, t_end]``) and labels ``(n,)``: clockwise (0) or anticlockwise (1), shuffled."""
    g = torch.Generator().manual_seed(seed)
    t = torch.linspace(0.0, t_end, length)
    start = torch.rand(n, generator=g) * 2 * math.pi
    x_pos = torch.cos(start.unsqueeze(1) + t.unsqueeze(0)) / (1 + 0.5 * t)
    x_pos[: n // 2] *= -1
    y_pos = torch.sin(start.unsqueeze(1) + t.unsqueeze(0)) / (1 + 0.5 * t)
    x = torch.stack([t.unsqueeze(0).repeat(n, 1), x_pos, y_pos], dim=2) + 0.1 * torch.randn(n, length, 3, generator=g)
    y = torch.zeros(n)
    y[: n // 2] = 1
    perm = torch.randperm(n, generator=g)
    return x[perm], y[perm]


def build_cde(n: int = 48, length: int = 12, seed: int = 0):
    """torchcde's README task: spirals clockwise (0) or anticlockwise (1), time as a channel."""
    import torchcde

    torch.manual_seed(seed)
    x, y = spirals(n, length, 4 * math.pi, seed)
    coeffs = torchcde.hermite_cubic_coefficients_with_backward_differences(x)
    model = NeuralCDE()
    _fit(model, coeffs[: n // 2], y[: n // 2], 5, nn.functional.binary_cross_entropy_with_logits)
    return model, (coeffs[: n // 2], y[: n // 2]), (coeffs[n // 2 :], y[n // 2 :]), "classification"


# --- libraries the audit cannot measure ---------------------------------------------------------


class SDE(nn.Module):
    """torchsde's README shape: ``dy = f dt + g dW`` (diagonal noise, Itô), solved by ``torchsde.sdeint``."""

    noise_type, sde_type = "diagonal", "ito"

    def __init__(self, d=2):
        super().__init__()
        self.mu = nn.Linear(d, d)
        self.sigma = nn.Linear(d, d)

    def f(self, t, y):
        return self.mu(y)

    def g(self, t, y):
        return torch.sigmoid(self.sigma(y))


class SDERegressor(nn.Module):
    def __init__(self, d=2):
        super().__init__()
        self.sde = SDE(d)

    def forward(self, y0):
        import torchsde

        return torchsde.sdeint(self.sde, y0, torch.tensor([0.0, 1.0]), dt=0.1)[-1]


def build_sde(n: int = 20, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    x = torch.randn(n, 2, generator=g)
    return SDERegressor(), (x[: n // 2], x[: n // 2]), (x[n // 2 :], x[n // 2 :]), "regression"


# --- fixed-step rk4 with its step size ------------------------------------------------------------


class FixedStepRK4(nn.Module):
    """``torchdiffeq.odeint(..., method="rk4", options=dict(step_size=0.25))`` over ``[0, 1]``, two logits."""

    def __init__(self, d=3):
        super().__init__()
        self.func = Decay(d).float()
        self.head = nn.Linear(d, 2)

    def forward(self, x):
        t = torch.tensor([0.0, 1.0])
        return self.head(odeint(self.func, x, t, method="rk4", options=dict(step_size=0.25))[-1])


# --- bouncing_ball.py: a solve with an event (odeint_event) ----------------------------------------


class BallField(nn.Module):
    """Gravity and a learned drag on ``(pos, vel, log_radius)``: a module, so ``odeint_adjoint`` finds
    its parameters."""

    def __init__(self, gravity=9.8):
        super().__init__()
        self.gravity = nn.Parameter(torch.as_tensor([gravity]))
        self.drag = nn.Linear(1, 1)
        nn.init.zeros_(self.drag.weight), nn.init.zeros_(self.drag.bias)  # free fall at the start

    def forward(self, t, state):
        pos, vel, log_radius = state
        return vel, -self.gravity - self.drag(vel), torch.zeros_like(log_radius)


class BouncingBall(nn.Module):
    """torchdiffeq's bouncing_ball.py, shrunk: the state ``(pos, vel, log_radius)``, a learned drag,
    the field a module (:class:`BallField`), the event "the ball touches the ground" (``pos - radius``
    crosses zero), found by ``torchdiffeq.odeint_event`` with ``odeint_interface=self.odeint`` (``odeint`` or
    ``odeint_adjoint``, held as an attribute, as the example holds it; ``None``: the default interface,
    bound when torchdiffeq was imported). Each row of ``x`` is ``(height, velocity)``; the output is
    ``(landing time, landing speed)``, each row solved on its own (the event is one scalar)."""

    def __init__(self, radius=0.2, gravity=9.8, adjoint=False, interface="attribute"):
        super().__init__()
        self.dynamics = BallField(gravity)
        self.log_radius = nn.Parameter(torch.log(torch.as_tensor([radius])))
        self.odeint = odeint_adjoint if adjoint else odeint
        self.interface = interface

    def forward(self, x):
        out = []
        for row in x:
            state = (row[:1], row[1:2], self.log_radius)
            t0 = torch.tensor([0.0])
            kwargs = dict(event_fn=self.event_fn, reverse_time=False, atol=1e-8, rtol=1e-8)
            if self.interface == "attribute":
                kwargs["odeint_interface"] = self.odeint
            event_t, solution = torchdiffeq.odeint_event(self.dynamics, state, t0, **kwargs)
            out.append(torch.cat([event_t.reshape(1), solution[1][-1].abs()]))
        return torch.stack(out)

    def event_fn(self, t, state):
        pos, _, log_radius = state  # positive in the air, negative in the ground
        return (pos - torch.exp(log_radius)).sum()


class FallingBallByOdeint(BouncingBall):
    """The same fall solved by ``odeint(..., event_fn=...)`` directly, which returns ``(event_t, solution)``."""

    def forward(self, x):
        out = []
        for row in x:
            state = (row[:1], row[1:2], self.log_radius)
            t = torch.tensor([0.0, 10.0])
            event_t, solution = self.odeint(self.dynamics, state, t, event_fn=self.event_fn, atol=1e-8, rtol=1e-8)
            out.append(torch.cat([event_t.reshape(1), solution[1][-1].abs()]))
        return torch.stack(out)


def landing(x: torch.Tensor, radius=0.2, gravity=9.8) -> torch.Tensor:
    """Free fall's landing time and speed from ``(height, velocity)`` rows, by hand."""
    h, v = x[:, 0], x[:, 1]
    speed = torch.sqrt(v**2 + 2 * gravity * (h - radius))
    return torch.stack([(v + speed) / gravity, speed], dim=1)


def build_bouncing_ball(n: int = 12, seed: int = 0, cls=BouncingBall, **kwargs):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    x = torch.stack([1.0 + 4.0 * torch.rand(n, generator=g), torch.randn(n, generator=g)], dim=1)
    y = landing(x)
    half = n // 2
    return cls(**kwargs), (x[:half], y[:half]), (x[half:], y[half:]), "regression"
