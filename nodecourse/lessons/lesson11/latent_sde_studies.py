"""Lesson 11's latent SDE study: what the noise term buys, as predictive intervals on held-out paths.

The system is an Ornstein-Uhlenbeck process ``dX = theta (mu - X) dt + sigma dW`` with ``X(0)`` uniform on
``[-x0_range, x0_range]``, sampled exactly on a grid and observed with Gaussian noise ``obs_std``. Each model
(:mod:`~nodecourse.lessons.lesson11.latent_sde_models`) reads the observations on ``[0, window]`` and forecasts
them on ``(window, horizon]``; its 90 % predictive interval at each forecast time is the 5th to 95th percentile
of its draws. Coverage is the fraction of held-out observations inside it. The process's own law gives the
reference: the exact conditional interval given the true ``X(window)``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from nodecourse.lessons.lesson11.latent_sde_models import LatentODE, LatentSDE, matched_ode_width, n_parameters
from nodecourse.lessons.study import cached_study

__all__ = [
    "LatentSDEConfig",
    "QUICK_LATENT_SDE",
    "FULL_LATENT_SDE",
    "OUData",
    "ou_data",
    "oracle_band",
    "CoverageRun",
    "Band",
    "LatentSDEStudy",
    "fit_latent",
    "band_of",
    "latent_sde_study",
    "MODELS",
]

MODELS = ("latent SDE", "latent ODE")


@dataclass(frozen=True)
class LatentSDEConfig:
    """The OU system, its sampling, the two models' sizes and their training, per seed of ``seeds``.

    Observations every ``1 / per_unit`` time units on ``[0, horizon]``; the models see ``[0, window]``. Data
    come from ``data_seed`` (the same for every model seed); ``n_train`` training and ``n_test`` held-out paths.
    Training: Adam at ``lr``, ``iterations`` batches of ``batch`` paths, the KL weight rising linearly from 0
    to 1 over the first ``kl_warmup`` of them. Intervals from ``samples`` draws at ``level``."""

    theta: float = 1.5
    mu: float = 0.0
    sigma: float = 0.8
    x0_range: float = 2.0
    obs_std: float = 0.1
    window: float = 1.0
    horizon: float = 2.0
    per_unit: int = 4
    dt: float = 0.0625
    n_train: int = 256
    n_test: int = 128
    data_seed: int = 0
    seeds: tuple[int, ...] = (0, 1, 2)
    latent: int = 4
    hidden: int = 16
    context: int = 4
    iterations: int = 150
    batch: int = 64
    lr: float = 2e-2
    kl_warmup: float = 0.3
    samples: int = 100
    level: float = 0.9

    def __post_init__(self):
        if not 0 < self.window < self.horizon:
            raise ValueError(f"need 0 < window < horizon; got window={self.window}, horizon={self.horizon}")
        if not 0 < self.level < 1:
            raise ValueError(f"level={self.level} must lie in (0, 1), e.g. 0.9")
        if len(self.seeds) < 1 or self.samples < 2 or self.iterations < 1:
            raise ValueError("give at least one seed, samples >= 2 and iterations >= 1")


QUICK_LATENT_SDE = LatentSDEConfig()
"""Quick mode: 256 training paths, 150 batches of 64, 3 seeds, 100 draws."""
FULL_LATENT_SDE = LatentSDEConfig(n_train=1024, n_test=256, seeds=tuple(range(8)), iterations=800, samples=200)
"""Full mode: 1024 training paths, 800 batches of 64, 8 seeds, 200 draws."""


@dataclass(frozen=True)
class OUData:
    """Exact OU samples: ``times`` ``(K,)``, true states ``states`` and observations ``observed``, each
    ``(paths, K)``; ``n_window``: how many of the times lie in the observed window."""

    times: torch.Tensor
    states: torch.Tensor
    observed: torch.Tensor
    n_window: int

    def window(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(xs, ts)``: the window's observations ``(paths, n_window, 1)`` and times ``(n_window,)``."""
        return self.observed[:, : self.n_window, None], self.times[: self.n_window]

    def future(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(xs, ts)``: the forecast observations ``(paths, F)`` and times ``(F,)``."""
        return self.observed[:, self.n_window :], self.times[self.n_window :]


def ou_data(config: LatentSDEConfig, paths: int, seed: int) -> OUData:
    """``paths`` OU paths sampled exactly on the grid (the Gaussian transition: no discretisation error)."""
    if paths < 1:
        raise ValueError(f"paths={paths} must be >= 1")
    c = config
    gen = torch.Generator().manual_seed(seed)
    k = round(c.horizon * c.per_unit) + 1
    times = torch.linspace(0.0, c.horizon, k)
    step = c.horizon / (k - 1)
    decay = math.exp(-c.theta * step)
    spread = c.sigma * math.sqrt((1 - decay**2) / (2 * c.theta))
    x = (2 * torch.rand(paths, generator=gen) - 1) * c.x0_range
    states = [x]
    for _ in range(k - 1):
        x = c.mu + (x - c.mu) * decay + spread * torch.randn(paths, generator=gen)
        states.append(x)
    states = torch.stack(states, dim=1)
    observed = states + c.obs_std * torch.randn(states.shape, generator=gen)
    return OUData(times, states, observed, round(c.window * c.per_unit) + 1)


def oracle_band(config: LatentSDEConfig, data: OUData) -> tuple[torch.Tensor, torch.Tensor]:
    """The process's own ``level`` interval of each forecast observation given the true ``X(window)``: ``(lo,
    hi)``, each ``(paths, F)`` (Gaussian: the OU transition's mean and variance plus the observation noise)."""
    c = config
    _, future_t = data.future()
    lag = future_t - data.times[data.n_window - 1]
    start = data.states[:, data.n_window - 1 : data.n_window]
    mean = c.mu + (start - c.mu) * torch.exp(-c.theta * lag)
    var = c.sigma**2 * (1 - torch.exp(-2 * c.theta * lag)) / (2 * c.theta) + c.obs_std**2
    z = torch.distributions.Normal(0.0, 1.0).icdf(torch.tensor(0.5 + c.level / 2)).item()
    return mean - z * var.sqrt(), mean + z * var.sqrt()


def _coverage(lo: torch.Tensor, hi: torch.Tensor, truth: torch.Tensor) -> tuple[float, float]:
    """(fraction of ``truth`` inside ``[lo, hi]``, mean width), all ``(paths, F)``."""
    return float(((truth >= lo) & (truth <= hi)).double().mean()), float((hi - lo).mean())


def band_of(draws: torch.Tensor, level: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(lo, median, hi)`` of ``draws`` ``(samples, ...)`` at ``level`` (equal tails), each ``draws[0]``'s shape."""
    tail = (1 - level) / 2
    q = torch.quantile(draws, torch.tensor([tail, 0.5, 1 - tail], dtype=draws.dtype), dim=0)
    return q[0], q[1], q[2]


@dataclass(frozen=True)
class CoverageRun:
    """One model, one seed: parameters, the forecast interval's coverage of the held-out observations and its
    mean width (state units), the last batch's ELBO terms per path (log-likelihood, KL) and the training time."""

    model: str
    seed: int
    parameters: int
    coverage: float
    width: float
    log_likelihood: float
    kl: float
    seconds: float


@dataclass(frozen=True)
class Band:
    """One model's ``level`` band on the first held-out paths at the first seed (for the figure): ``lo``,
    ``median``, ``hi`` per path, over the forecast times."""

    model: str
    lo: tuple[tuple[float, ...], ...]
    median: tuple[tuple[float, ...], ...]
    hi: tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class LatentSDEStudy:
    """Every run, the process's own interval (coverage and width on the same held-out paths), and the figure's
    held-out paths (``times``; ``observed`` per path) with each model's :class:`Band`."""

    config: LatentSDEConfig
    runs: tuple[CoverageRun, ...]
    oracle_coverage: float
    oracle_width: float
    times: tuple[float, ...]
    n_window: int
    observed: tuple[tuple[float, ...], ...]
    bands: tuple[Band, ...]

    def of(self, model: str) -> tuple[CoverageRun, ...]:
        """The runs of ``model`` (one of :data:`MODELS`), in seed order."""
        if model not in MODELS:
            raise ValueError(f"model={model!r} is not one of {MODELS}")
        return tuple(r for r in self.runs if r.model == model)


def build(config: LatentSDEConfig, model: str, seed: int):
    """``model`` (one of :data:`MODELS`) at ``config``'s sizes, its weights from ``seed``; the latent ODE's drift
    is as wide as makes its parameter count nearest the latent SDE's."""
    c = config
    torch.manual_seed(seed)
    if model == "latent SDE":
        return LatentSDE(1, c.latent, c.hidden, c.context, c.obs_std, c.dt)
    if model == "latent ODE":
        target = n_parameters(LatentSDE(1, c.latent, c.hidden, c.context, c.obs_std, c.dt))
        width = matched_ode_width(target, latent=c.latent, hidden=c.hidden)
        torch.manual_seed(seed)
        return LatentODE(1, c.latent, c.hidden, width, c.obs_std, c.dt)
    raise ValueError(f"model={model!r} is not one of {MODELS}")


def fit_latent(config: LatentSDEConfig, model: str, train: OUData, seed: int):
    """Train ``model`` on ``train``'s windows: ``(model, log_likelihood, kl, seconds)`` (the last batch's)."""
    c = config
    net = build(c, model, seed)
    xs, ts = train.window()
    opt = torch.optim.Adam(net.parameters(), lr=c.lr)
    gen = torch.Generator().manual_seed(seed)
    warm = max(1, round(c.kl_warmup * c.iterations))
    start = time.perf_counter()
    for it in range(c.iterations):
        idx = torch.randperm(xs.shape[0], generator=gen)[: c.batch]
        loss, loglik, kl = net.elbo(xs[idx], ts, seed=seed * 1_000_003 + it, kl_weight=min(1.0, (it + 1) / warm))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
        opt.step()
    return net, loglik.item(), kl.item(), time.perf_counter() - start


FIGURE_PATHS = 3  # held-out paths drawn in the figure


@cached_study
def latent_sde_study(config: LatentSDEConfig = QUICK_LATENT_SDE, progress: bool = False) -> LatentSDEStudy:
    """Both models on the same training and held-out paths, at every seed: each one's forecast coverage."""
    from tqdm.auto import tqdm

    c = config
    train = ou_data(c, c.n_train, c.data_seed)
    test = ou_data(c, c.n_test, c.data_seed + 10_007)
    xs, ts = test.window()
    truth, future = test.future()
    runs, bands = [], []
    jobs = [(seed, model) for seed in c.seeds for model in MODELS]
    for seed, model in tqdm(jobs, desc="latent SDE vs latent ODE", disable=not progress, leave=False):
        net, loglik, kl, seconds = fit_latent(c, model, train, seed)
        draws = net.predict(xs, ts, future, samples=c.samples, seed=seed)[..., 0]  # (samples, paths, F)
        lo, mid, hi = band_of(draws, c.level)
        coverage, width = _coverage(lo, hi, truth)
        runs.append(CoverageRun(model, seed, n_parameters(net), coverage, width, loglik, kl, seconds))
        if seed == c.seeds[0]:
            rows = lambda v: tuple(tuple(r) for r in v[:FIGURE_PATHS].tolist())  # noqa: E731
            bands.append(Band(model, rows(lo), rows(mid), rows(hi)))
    oracle = _coverage(*oracle_band(c, test), truth)
    return LatentSDEStudy(
        c, tuple(runs), *oracle, tuple(test.times.tolist()), test.n_window,
        tuple(tuple(r) for r in test.observed[:FIGURE_PATHS].tolist()), tuple(bands),
    )  # fmt: skip
