"""Continuous normalising flows: densities carried by an ODE.

If ``z(t)`` follows ``dz/dt = f(t, z)``, the log-density of ``z(t)`` changes by the
*instantaneous change of variables* (Chen et al. 2018, theorem 1)::

    d log p(z(t)) / dt = -tr(∂f/∂z (t, z(t)))

so a density is transported by solving one augmented ODE for ``(z, Δlog p)``,
with a trace where a discrete flow needs a log-determinant. The trace costs
``d`` vector-Jacobian products done exactly (:func:`divergence_exact`), or one
per probe with Hutchinson's estimator ``E[εᵀ (∂f/∂z) ε] = tr(∂f/∂z)`` for
probes with ``E[εεᵀ] = I`` (:func:`divergence_hutchinson`; Grathwohl et al.
2019, FFJORD).

- :func:`divergence_exact`, :func:`divergence_hutchinson`, :func:`sample_probes`,
  :func:`hutchinson_variance`: traces of a Jacobian, exact and estimated;
- :class:`CNFDynamics`: the augmented field ``(z, Δlog p) -> (f, -tr ∂f/∂z)``;
- :class:`CNF`: ``log_prob(x)`` and ``sample(n)`` through :func:`nodecourse.odeint`,
  with the solver's work kept (``last_stats``);
- :func:`two_moons`: the 2-D data set of the lesson (scikit-learn's, standardised).

Shapes: states ``(batch, d)``; per-sample log-densities and traces ``(batch,)``.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn

from nodecourse.models._blocks import MLPField
from nodecourse.solvers import SolveConfig, odeint
from nodecourse.validation import AnyOf, Arg, InstanceOf, Interval, NoneAllowed, Options, check, check_args

TRACE_ESTIMATORS = ("exact", "hutchinson")
PROBE_NOISES = ("rademacher", "gaussian")

_SIZE = Interval(int, 1, None)
#: The constructor arguments of :class:`CNF` (and :class:`CNFDynamics`), checked through
#: :mod:`nodecourse.validation`; the solver settings are checked by :class:`~nodecourse.SolveConfig`.
CNF_ARGS: dict[str, Arg] = {
    "dim": Arg(_SIZE, fix="the data dimension d, e.g. dim=2"),
    "hidden": Arg(InstanceOf((tuple, list), "a tuple of hidden sizes"), fix="e.g. hidden=(64, 64)"),
    "t1": Arg(Interval(float, 0, None, "neither"), fix="the integration time, e.g. t1=1.0"),
    "trace": Arg(Options(TRACE_ESTIMATORS), fix="'exact': d vector-Jacobian products; 'hutchinson': n_probes of them"),
    "n_probes": Arg(_SIZE, fix="probes per evaluation with trace='hutchinson', e.g. n_probes=1"),
    "noise": Arg(Options(PROBE_NOISES)),
    "field": Arg(
        AnyOf((InstanceOf(nn.Module, "an nn.Module f(t, z)"), NoneAllowed())),
        fix="None builds a tanh MLP on dim with the hidden sizes",
    ),
    "solver": Arg(AnyOf((InstanceOf(SolveConfig, "a nodecourse.SolveConfig"), NoneAllowed()))),
}


class FlowInputError(ValueError):
    """A tensor given to a flow function has the wrong shape (e.g. a 1-D batch of states)."""


class FlowDtypeError(TypeError, RuntimeError):
    """The data's dtype differs from the CNF's parameters'. A ``RuntimeError`` too: that is what the
    field's ``nn.Linear`` raised before this check named it."""


class FlowBatchMixingError(ValueError):
    """The field's output for one row depends on other rows of the batch, so per-sample traces
    (and per-sample log-densities) are not defined."""


def _cast(dtype: torch.dtype) -> str:
    """The method that converts a tensor or module to ``dtype``: ``double()``, ``float()``, ..."""
    return {torch.float64: "double()", torch.float32: "float()", torch.float16: "half()"}.get(dtype, f"to({dtype})")


def check_rows_independent(f_out: torch.Tensor, z: torch.Tensor) -> None:
    """Raise :class:`FlowBatchMixingError` when row 0 of ``f_out`` depends on other rows of ``z``.

    One vector-Jacobian product with a probe that is non-zero on row 0 only: for a field that
    treats each row alone the gradient on rows 1.. is exactly zero; a batch mean or sum puts
    ``∂f_0/∂z_b`` there. (It reads the graph ``f_out`` already has: no evaluation of the field.)
    ``f_out``, ``z``: ``(batch, d)``.
    """
    if z.shape[0] < 2:
        return
    probe = torch.zeros_like(f_out)
    # a fixed random row: a sum over row 0 (all ones) could cancel mixing terms of opposite sign
    probe[0] = torch.randn(f_out.shape[1], generator=torch.Generator().manual_seed(0), dtype=f_out.dtype).to(
        f_out.device
    )
    (g,) = torch.autograd.grad(f_out, z, probe, retain_graph=True)
    leak = float(g[1:].detach().abs().nan_to_num(nan=math.inf).amax())
    own = float(g[0].detach().abs().nan_to_num(nan=0.0, posinf=0.0).amax())
    if leak <= 16 * torch.finfo(g.dtype).eps * own:
        return
    raise FlowBatchMixingError(
        f"the field mixes the rows of the batch: row 0 of f(z) depends on other rows of z (gradient {leak:.3g} "
        f"there, {own:.3g} on row 0). A per-sample trace tr(∂f_b/∂z_b) needs each row's flow to be its own: with "
        f"mixing, divergence_exact would add the cross terms ∂f_b'/∂z_b (returning a wrong trace), and a "
        f"sample's log-density would depend on the batch it came in. Make the field act on each row alone (no "
        f"mean or sum over the batch; BatchNorm in eval mode, or LayerNorm)"
    )


def _check_state(z: torch.Tensor, f_out: torch.Tensor) -> None:
    if not isinstance(z, torch.Tensor) or z.dim() != 2:
        raise ValueError(f"z has shape {tuple(getattr(z, 'shape', ()))}; give a (batch, d) tensor")
    if f_out.shape != z.shape:
        raise ValueError(
            f"f_out has shape {tuple(f_out.shape)} but z has {tuple(z.shape)}; f must map (batch, d) to (batch, d)"
        )
    if not f_out.requires_grad:
        raise ValueError(
            "f_out does not depend on z through autograd: compute it from z with "
            "z.requires_grad_(True) under torch.enable_grad()"
        )


def divergence_exact(
    f_out: torch.Tensor, z: torch.Tensor, *, create_graph: bool = False, check_batch: bool = True
) -> torch.Tensor:
    """``tr(∂f/∂z)`` per sample, exactly: one vector-Jacobian product per dimension.

    Args:
        f_out: ``f(z)`` of shape ``(batch, d)``, computed from ``z`` with autograd on,
            row ``b`` depending only on row ``b`` of ``z`` (no mixing across the batch).
        z: ``(batch, d)``.
        create_graph: keep the graph so the trace can be differentiated (training).
        check_batch: first check that the rows do not mix (:func:`check_rows_independent`, one
            more backward pass; raises :class:`FlowBatchMixingError`). The sum of each column's
            VJP, which this function reads, adds every row's ``∂f_b'/∂z_b``: for a mixing field
            it is not the per-sample trace, and a per-sample trace would not give a per-sample
            density either, so the field is refused rather than traced block by block.
            ``False`` skips it (:class:`CNFDynamics` checks once per solve).

    Returns:
        ``(batch,)``: ``sum_i ∂f_i/∂z_i``. Cost: ``d`` backward passes (``d + 1`` with the check).
    """
    _check_state(z, f_out)
    if check_batch:
        check_rows_independent(f_out, z)
    total = torch.zeros(z.shape[0], dtype=z.dtype, device=z.device)
    for i in range(z.shape[1]):
        (g,) = torch.autograd.grad(f_out[:, i].sum(), z, create_graph=create_graph, retain_graph=True)
        total = total + g[:, i]
    return total


def sample_probes(
    shape: Sequence[int],
    *,
    noise: str = "rademacher",
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float32,
    device=None,
) -> torch.Tensor:
    """Probe vectors with mean 0 and identity covariance: Rademacher (±1) or standard Gaussian.

    Drawn on the CPU generator (same numbers on every device), then moved to ``device``.
    """
    if noise not in PROBE_NOISES:
        raise ValueError(f"noise={noise!r} is not one of {PROBE_NOISES}")
    if noise == "gaussian":
        eps = torch.randn(*shape, generator=generator, dtype=dtype)
    else:
        eps = torch.randint(0, 2, tuple(shape), generator=generator).to(dtype) * 2 - 1
    return eps.to(device)


def divergence_hutchinson(
    f_out: torch.Tensor, z: torch.Tensor, probes: torch.Tensor, *, create_graph: bool = False
) -> torch.Tensor:
    """Hutchinson's estimate of ``tr(∂f/∂z)`` per sample: the mean over probes of ``εᵀ (∂f/∂z) ε``.

    Args:
        f_out, z: as in :func:`divergence_exact`.
        probes: ``(M, batch, d)`` (M probes per sample) or ``(batch, d)`` (one probe),
            with ``E[ε] = 0`` and ``E[εεᵀ] = I`` (see :func:`sample_probes`).
        create_graph: keep the graph (training).

    Returns:
        ``(batch,)``. Unbiased for any such probes; its variance falls as ``1/M``.
        Cost: ``M`` backward passes, whatever ``d`` is.
    """
    _check_state(z, f_out)
    if probes.dim() == 2:
        probes = probes.unsqueeze(0)
    if probes.dim() != 3 or probes.shape[1:] != z.shape:
        raise ValueError(
            f"probes has shape {tuple(probes.shape)}; give (M, batch, d) or (batch, d) "
            f"with (batch, d) = {tuple(z.shape)}"
        )
    total = torch.zeros(z.shape[0], dtype=z.dtype, device=z.device)
    for eps in probes:
        # εᵀ(∂f/∂z) is one vector-Jacobian product; its dot with ε gives εᵀ(∂f/∂z)ε.
        (vjp,) = torch.autograd.grad(f_out, z, eps, create_graph=create_graph, retain_graph=True)
        total = total + (vjp * eps).sum(dim=1)
    return total / probes.shape[0]


def hutchinson_variance(jacobian: torch.Tensor, noise: str = "rademacher") -> torch.Tensor:
    """The variance of one probe's estimate ``εᵀ A ε`` for a square matrix ``A`` (or a batch ``(..., d, d)``).

    With ``S = (A + Aᵀ)/2``: Gaussian probes ``2 ||S||_F²``; Rademacher probes
    ``2 (||S||_F² − Σ_i A_ii²)`` (the diagonal is estimated without error).
    With ``M`` independent probes the variance is this divided by ``M``.
    """
    if noise not in PROBE_NOISES:
        raise ValueError(f"noise={noise!r} is not one of {PROBE_NOISES}")
    s = 0.5 * (jacobian + jacobian.transpose(-1, -2))
    fro = (s * s).sum(dim=(-1, -2))
    if noise == "gaussian":
        return 2 * fro
    return 2 * (fro - (torch.diagonal(jacobian, dim1=-2, dim2=-1) ** 2).sum(-1))


class CNFDynamics(nn.Module):
    """The augmented field of a CNF on states ``(batch, d + 1)`` = ``[z, Δlog p]``:
    ``d/dt [z, Δlog p] = [f(t, z), -tr(∂f/∂z)]``.

    Args:
        field: ``f(t, z)``, ``(batch, d) -> (batch, d)``, no mixing across the batch.
        trace: ``"exact"`` or ``"hutchinson"``.
        n_probes: probes per evaluation for ``"hutchinson"``.
        noise: ``"rademacher"`` or ``"gaussian"`` probes.

    For ``"hutchinson"`` the probes are drawn once per solve (:meth:`draw_probes`,
    called by :class:`CNF`) and held fixed during it, as FFJORD does: the
    solver then integrates one smooth ODE, and the adjoint's backward solve sees
    the same field as the forward one.
    """

    def __init__(self, field: nn.Module, *, trace: str = "exact", n_probes: int = 1, noise: str = "rademacher"):
        super().__init__()
        n_probes = check_args({"trace": trace, "n_probes": n_probes, "noise": noise}, CNF_ARGS)["n_probes"]
        self.field = field
        self.trace = trace
        self.n_probes = n_probes
        self.noise = noise
        self.probes: torch.Tensor | None = None
        self.n_evals = 0
        self.rows_checked = False  # the batch-mixing check runs on the first evaluation of each solve

    def draw_probes(self, batch: int, dim: int, *, dtype, device, generator: torch.Generator | None = None):
        """Draw this solve's Hutchinson probes (and re-arm the once-per-solve batch-mixing check)."""
        self.probes = sample_probes(
            (self.n_probes, batch, dim), noise=self.noise, generator=generator, dtype=dtype, device=device
        )
        self.rows_checked = False

    def forward(self, t: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        self.n_evals += 1
        # Keep the divergence differentiable when the caller needs gradients (training,
        # or an adjoint's vector-Jacobian products); evaluation under no_grad does not.
        create_graph = torch.is_grad_enabled()
        with torch.enable_grad():
            z = state[:, :-1]
            if not z.requires_grad:
                z = z.detach().requires_grad_(True)
            dz = self.field(t, z)
            if not self.rows_checked:  # one more backward pass, on the first evaluation of a solve only
                check_rows_independent(dz, z)
                self.rows_checked = True
            if self.trace == "exact":
                div = divergence_exact(dz, z, create_graph=create_graph, check_batch=False)
            else:
                if self.probes is None or self.probes.shape[1:] != z.shape:
                    raise RuntimeError(
                        "trace='hutchinson' needs probes drawn for this batch: call "
                        "draw_probes(batch, dim, dtype=..., device=...) before the solve"
                    )
                div = divergence_hutchinson(dz, z, self.probes, create_graph=create_graph)
        out = torch.cat([dz, -div.unsqueeze(1)], dim=1)
        return out if create_graph else out.detach()


def standard_normal_log_prob(z: torch.Tensor) -> torch.Tensor:
    """``log N(z; 0, I)`` per sample of ``z`` ``(batch, d)`` -> ``(batch,)``; a state ``(batch, ...)``
    with more dimensions is one sample per row of the first (the others are summed over).

    A 1-D ``z`` is refused (:class:`FlowInputError`): it could be one sample of dimension ``n`` or
    ``n`` samples of dimension 1, and the two log-densities differ.
    """
    if not isinstance(z, torch.Tensor) or z.dim() < 2:
        shape = tuple(z.shape) if isinstance(z, torch.Tensor) else type(z).__name__
        n = z.shape[0] if isinstance(z, torch.Tensor) and z.dim() == 1 else "n"
        raise FlowInputError(
            f"z has shape {shape}; give a batch (batch, d): z[None] for one sample of dimension "
            f"{n}, or z[:, None] for {n} samples of dimension 1"
        )
    flat = z.reshape(z.shape[0], -1)
    return -0.5 * (flat * flat).sum(dim=1) - 0.5 * flat.shape[1] * math.log(2 * math.pi)


DEFAULT_CNF_SOLVER = SolveConfig(method="dopri5", rtol=1e-4, atol=1e-4)


class CNF(nn.Module):
    """A continuous normalising flow on ``R^d``: data ``x = z(0)`` flows to ``z(t1)`` ~ N(0, I).

    ``log p(x) = log N(z(t1)) - Δlog p(t1)`` with ``Δlog p`` integrated alongside ``z``
    (:class:`CNFDynamics`). Solver settings are one :class:`~nodecourse.SolveConfig`
    (``solver=``, or its fields as keywords; default dopri5 at rtol = atol = 1e-4),
    echoed on the model as ``solver``; after each solve ``last_stats`` holds the solver's stats (``nfe``, steps,
    and ``nfe_backward`` after a backward pass with ``gradient="adjoint"``).

    Args:
        dim: ``d``.
        hidden: hidden sizes of the field (a time-dependent tanh MLP: smooth, so its
            Jacobian, and the trace, are well behaved).
        t1: integration time.
        trace, n_probes, noise: how the divergence is computed (:class:`CNFDynamics`).
        solver, **options: the :class:`~nodecourse.SolveConfig` passed to :func:`nodecourse.odeint`.
    """

    def __init__(
        self,
        dim: int = 2,
        hidden: Sequence[int] = (64, 64),
        *,
        t1: float = 1.0,
        trace: str = "exact",
        n_probes: int = 1,
        noise: str = "rademacher",
        field: nn.Module | None = None,
        solver: SolveConfig | None = None,
        **options,
    ):
        super().__init__()
        c = check_args({"dim": dim, "hidden": hidden, "t1": t1, "field": field, "solver": solver}, CNF_ARGS)
        dim, t1 = c["dim"], c["t1"]
        hidden = tuple(
            check(f"hidden[{i}]", size, _SIZE, fix="a hidden layer needs at least one unit")
            for i, size in enumerate(hidden)
        )
        field = field if field is not None else MLPField(dim, hidden, activation="tanh", time_dependent=True)
        self.dim = dim
        self.dynamics = CNFDynamics(field, trace=trace, n_probes=n_probes, noise=noise)
        self.t1 = float(t1)
        self.solver = SolveConfig.of(solver or DEFAULT_CNF_SOLVER, **options)
        self.last_stats: dict = {}

    def parameter_dtype(self) -> torch.dtype | None:
        """The dtype of the first floating parameter (None for a field without parameters)."""
        return next((p.dtype for p in self.parameters() if p.is_floating_point()), None)

    def check_dtype(self, data: torch.Tensor, name: str) -> None:
        """Raise :class:`FlowDtypeError` when ``data`` is in another dtype than the parameters."""
        dtype = self.parameter_dtype()
        if dtype is not None and data.dtype != dtype:
            raise FlowDtypeError(
                f"{name} has dtype {data.dtype}, but the CNF's parameters are {dtype}. Give both one "
                f"dtype: {name}.{_cast(dtype)}, or cnf.{_cast(data.dtype)} to compute in {data.dtype}"
            )

    def _solve(self, z0: torch.Tensor, t0: float, t1: float, generator=None, **overrides):
        settings = self.solver.replace(**overrides).odeint_kwargs()
        state = torch.cat([z0, torch.zeros(z0.shape[0], 1, dtype=z0.dtype, device=z0.device)], dim=1)
        self.dynamics.draw_probes(z0.shape[0], z0.shape[1], dtype=z0.dtype, device=z0.device, generator=generator)
        t = torch.tensor([t0, t1], dtype=z0.dtype, device=z0.device)
        sol = odeint(self.dynamics, state, t, **settings)
        self.last_stats = sol.stats
        end = sol.ys[-1]
        return end[:, :-1], end[:, -1], sol

    def log_prob(self, x: torch.Tensor, *, generator: torch.Generator | None = None, **overrides) -> torch.Tensor:
        """``log p(x)`` per row of ``x`` ``(batch, d)`` -> ``(batch,)`` (nats).

        ``overrides`` replace solver settings for this call (e.g. ``rtol=1e-6``).
        """
        if x.dim() != 2 or x.shape[1] != self.dim:
            raise FlowInputError(
                f"x has shape {tuple(x.shape)}; give (batch, {self.dim})"
                + (" (x[None] for one sample)" if x.dim() == 1 else "")
            )
        self.check_dtype(x, "x")
        z1, delta, _ = self._solve(x, 0.0, self.t1, generator=generator, **overrides)
        return standard_normal_log_prob(z1) - delta

    def sample(
        self,
        n: int,
        *,
        generator: torch.Generator | None = None,
        dtype: torch.dtype | None = None,
        device=None,
        **overrides,
    ) -> torch.Tensor:
        """``n`` samples ``(n, d)``: draw ``z(t1)`` ~ N(0, I) and solve the flow backwards to ``t = 0``.

        ``dtype`` defaults to the parameters' (float32 when there are none); another one raises
        :class:`FlowDtypeError`.
        """
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"n={n!r} must be a positive int")
        own = self.parameter_dtype()
        dtype = dtype or own or torch.float32
        if own is not None and dtype != own:
            raise FlowDtypeError(
                f"dtype={dtype} differs from the CNF's parameters ({own}): pass dtype={own} (or leave "
                f"it out), or cnf.{_cast(dtype)} to sample in {dtype}"
            )
        z1 = torch.randn(n, self.dim, generator=generator, dtype=dtype).to(device)
        x, _, _ = self._solve(z1, self.t1, 0.0, generator=generator, **overrides)
        return x


def two_moons(
    n: int, *, noise: float = 0.05, seed: int = 0, dtype: torch.dtype = torch.float32, device=None
) -> torch.Tensor:
    """``n`` points ``(n, 2)`` of scikit-learn's two moons, centred and scaled to unit variance overall."""
    from sklearn.datasets import make_moons

    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"n={n!r}: give an int >= 2")
    x, _ = make_moons(n_samples=n, noise=noise, random_state=seed)
    x = (x - [0.5, 0.25]) / [0.87, 0.5]  # the population's mean and (about) its standard deviations
    return torch.as_tensor(x, dtype=dtype, device=device)


__all__ = [
    "CNF",
    "CNFDynamics",
    "FlowBatchMixingError",
    "FlowDtypeError",
    "FlowInputError",
    "PROBE_NOISES",
    "TRACE_ESTIMATORS",
    "check_rows_independent",
    "divergence_exact",
    "divergence_hutchinson",
    "hutchinson_variance",
    "sample_probes",
    "standard_normal_log_prob",
    "two_moons",
]
