"""Lesson 11's CDE studies: the interpolation's causality, and a neural CDE beside lesson 5's models.

- :func:`causality_study`: one short series, one future observation moved; how far each path's past moves;
- :class:`NeuralCDE`: the model (Kidger et al. 2020) on lesson 5's data tensors, :func:`physionet_path` its
  control path, :func:`matched_width` its field's width for a parameter budget;
- :func:`fit_ncde`: lesson 5's training (:func:`nodecourse.training.train_epochs`, its optimiser, the best
  validation epoch kept) for the CDE;
- :func:`ncde_study`: the CDE on every seed's split of a lesson 5 study, merged with that study's runs.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch
from torch import nn

from nodecourse.cde import CubicSpline, cdeint, hermite_cubic_coeffs, natural_cubic_coeffs
from nodecourse.data.physionet import HORIZON_HOURS
from nodecourse.lessons.lesson05.studies import AUCStudy, ModelRun, auc_study
from nodecourse.lessons.lesson11.config import CausalityConfig, NCDEConfig
from nodecourse.lessons.study import cached_study
from nodecourse.models.latent import auc, build_model, classifier_head, make_optimizer, predict_proba
from nodecourse.training import seeded_batches, train_epochs

__all__ = [
    "CausalityResult",
    "causality_study",
    "forward_fill",
    "physionet_path",
    "NeuralCDE",
    "n_parameters",
    "matched_width",
    "fit_ncde",
    "NCDEStudy",
    "ncde_study",
]


# ---------------------------------------------------------------- causality


@dataclass(frozen=True)
class CausalityResult:
    """A series, the same series with one future observation moved, and both paths of each kind.

    ``t``, ``x``, ``x_moved``: the observations (length,); ``grid``: evaluation times (points,);
    ``paths``: kind -> (path of ``x``, path of ``x_moved``) on ``grid``; ``past_change``: kind -> the
    largest change of the path on ``[t[0], t[changed - 1]]``, the past of the moved observation."""

    config: CausalityConfig
    t: tuple[float, ...]
    x: tuple[float, ...]
    x_moved: tuple[float, ...]
    grid: tuple[float, ...]
    paths: dict
    past_change: dict

    @property
    def past_end(self) -> float:
        """The end of the compared past: the time of the observation before the moved one."""
        return self.t[self.config.changed - 1]


_COEFFS = {"hermite": (hermite_cubic_coeffs, True), "natural": (natural_cubic_coeffs, False)}


@cached_study
def causality_study(config: CausalityConfig) -> CausalityResult:
    """Move observation ``config.changed`` of a seeded series by ``config.delta``; evaluate the Hermite
    (backward differences) and natural cubic paths of both series, in float64."""
    if not 2 <= config.changed < config.length:
        raise ValueError(f"config.changed={config.changed!r}: give an index in [2, length={config.length})")
    gen = torch.Generator().manual_seed(config.seed)
    t = torch.cumsum(0.5 + torch.rand(config.length, generator=gen, dtype=torch.float64), 0)
    t = t - t[0]
    x = torch.sin(t) + 0.3 * torch.randn(config.length, generator=gen, dtype=torch.float64)
    moved = x.clone()
    moved[config.changed] += config.delta
    grid = torch.linspace(float(t[0]), float(t[-1]), config.points, dtype=torch.float64)
    past = grid <= t[config.changed - 1]
    paths, change = {}, {}
    for kind, (coeffs, causal) in _COEFFS.items():
        a, b = (CubicSpline(coeffs(s.unsqueeze(-1), t), t, causal=causal).evaluate(grid)[..., 0] for s in (x, moved))
        paths[kind] = (tuple(a.tolist()), tuple(b.tolist()))
        change[kind] = float((a - b)[past].abs().max())
    return CausalityResult(
        config, tuple(t.tolist()), tuple(x.tolist()), tuple(moved.tolist()), tuple(grid.tolist()), paths, change
    )


# ---------------------------------------------------------------- the model


def forward_fill(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each unobserved value (``mask`` 0) replaced by that channel's last observed value, 0 (the training
    mean, once normalised) before the first: (B, K, D) -> (B, K, D). Carrying values forward, unlike
    interpolating between them, never reads an observation before its time."""
    k = torch.arange(values.size(-2), device=values.device).view(1, -1, 1).expand_as(values)
    last = torch.where(mask.bool(), k, -1).cummax(dim=-2).values
    filled = values.gather(-2, last.clamp(min=0))
    return torch.where(last >= 0, filled, torch.zeros_like(values))


def physionet_path(times: torch.Tensor, values: torch.Tensor, mask: torch.Tensor) -> CubicSpline:
    """The control path of a batch: Hermite cubic with backward differences (causal) through
    ``[time, forward-filled values, observation counts]`` (Kidger et al. 2020's observational intensity).

    ``times`` (K,) hours; ``values``, ``mask`` (B, K, D). Time is divided by the 48-hour horizon (lesson 5's
    scaling), counts by the number of grid times, so every channel is of order one. Channels: 1 + 2 D.
    """
    scaled = (times / HORIZON_HOURS).to(device=values.device, dtype=values.dtype)
    counts = mask.cumsum(dim=-2).to(values.dtype) / times.numel()
    clock = scaled.view(1, -1, 1).expand(values.size(0), -1, 1)
    x = torch.cat([clock, forward_fill(values, mask), counts], dim=-1)
    return CubicSpline(hermite_cubic_coeffs(x, scaled), scaled, causal=True)


class _Field(nn.Module):
    """``f(t, z)``: (B, H) -> (B, H, C), an MLP ending in tanh (bounded, as Kidger et al.'s).

    The last layer starts ``init_scale`` times PyTorch's default: the path's increments are of order one
    per hour, so a default-sized field moves the state by several units an hour before training, and on
    lesson 5's quick study that untrained drift kept the AUC near chance after three epochs."""

    def __init__(self, hidden: int, channels: int, width: int, init_scale: float = 0.1):
        super().__init__()
        self.hidden, self.channels = hidden, channels
        layers = (nn.Linear(hidden, width), nn.Softplus(), nn.Linear(width, hidden * channels), nn.Tanh())
        self.net = nn.Sequential(*layers)
        with torch.no_grad():
            self.net[2].weight.mul_(init_scale)
            self.net[2].bias.mul_(init_scale)

    def forward(self, t: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return self.net(z).view(*z.shape[:-1], self.hidden, self.channels)


class NeuralCDE(nn.Module):
    """A neural CDE classifier: ``z(0) = W X(0)``, ``dz = f(z) dX``, mortality from ``z(48 h)`` and the
    descriptors through lesson 5's head.

    Args:
        input_dim: D, the measured variables; ``static_dim``: S, the descriptors.
        hidden: H, the CDE state; ``width``: the field's hidden units (:func:`matched_width`).
        method: the solver (fixed steps of one grid interval unless it is adaptive).
        head, dropout: lesson 5's mortality head.

    ``forward(times, values, mask, static, static_mask)``: ``times`` (K,) hours, ``values`` and ``mask``
    (B, K, D), ``static`` and ``static_mask`` (B, S) -> logits (B,), as lesson 5's models.
    ``solver_stats``: evaluations of the field (``nfe``), steps and solves, summed over forward passes.
    """

    def __init__(
        self,
        input_dim: int,
        static_dim: int,
        hidden: int = 16,
        width: int = 32,
        method: str = "euler",
        *,
        head: tuple[int, ...] = (64,),
        dropout: float = 0.3,
    ):
        super().__init__()
        channels = 1 + 2 * input_dim
        self.method = method
        self.initial = nn.Linear(channels, hidden)
        self.field = _Field(hidden, channels, width)
        self.classifier = classifier_head(hidden + 2 * static_dim, head, dropout)
        self.solver_stats = {"nfe": 0, "n_steps": 0, "n_solves": 0}

    def forward(self, times, values, mask, static, static_mask) -> torch.Tensor:
        path = physionet_path(times, values, mask)
        z0 = self.initial(path.evaluate(path.interval[0]))
        sol = cdeint(path, self.field, z0, path.interval, method=self.method)
        for key in ("nfe", "n_steps"):
            self.solver_stats[key] += int(sol.stats[key])
        self.solver_stats["n_solves"] += 1
        return self.classifier(torch.cat([sol.ys[-1], static, static_mask], dim=-1)).squeeze(-1)


def n_parameters(model) -> int:
    """Trainable parameters of ``model`` (0 for a model with none, such as the regression)."""
    params = getattr(model, "parameters", None)
    return sum(p.numel() for p in params() if p.requires_grad) if callable(params) else 0


def matched_width(target: int, input_dim: int, static_dim: int, hidden: int, **sizes) -> int:
    """The field width whose :class:`NeuralCDE` has the parameter count nearest ``target``.

    The count is linear in the width (the field's two layers), so two sizes fix it."""
    at = [n_parameters(NeuralCDE(input_dim, static_dim, hidden, w, **sizes)) for w in (1, 2)]
    return max(1, round(1 + (target - at[0]) / (at[1] - at[0])))


# ---------------------------------------------------------------- training


def fit_ncde(cfg: NCDEConfig, train, test, val=None, *, seed: int = 0, progress: bool = False):
    """Train a :class:`NeuralCDE` as lesson 5's ``fit`` trains its models: ``cfg.study.training``'s optimiser,
    schedule, clipping, batches and epochs, seeded batches, the weights of the best validation epoch.

    Returns ``(model, ModelRun)``; the model's width matches ODE-RNN's parameter count on ``train``."""
    settings = cfg.study.training
    start, cpu = time.perf_counter(), time.process_time()
    d, s = train.values.shape[-1], train.static.shape[-1]
    head = {"head": settings.classifier_hidden, "dropout": settings.classifier_dropout}
    target = n_parameters(build_model("odernn", train, settings=settings))
    width = matched_width(target, d, s, cfg.hidden, method=cfg.method, **head)
    torch.manual_seed(seed)
    model = NeuralCDE(d, s, cfg.hidden, width, cfg.method, **head).to(train.values.device, train.values.dtype)
    opt, per_epoch, per_step = make_optimizer(model, settings, settings.epochs)
    best = {"auc": -math.inf, "state": None, "epoch": settings.epochs}

    def loss_on_batch(idx):
        logits = model(train.times, train.values[idx], train.mask[idx], train.static[idx], train.static_mask[idx])
        return nn.functional.binary_cross_entropy_with_logits(logits, train.labels[idx]), {}

    def on_epoch(row, model):
        if val is not None and (score := auc(val.labels, predict_proba(model, val))) > best["auc"]:
            state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            best.update(auc=score, epoch=row["epoch"], state=state)

    train_epochs(
        model,
        loss_on_batch,
        seeded_batches(len(train), settings.batch_size, seed=seed, device=train.values.device),
        epochs=settings.epochs,
        optimizer=opt,
        scheduler=per_epoch,
        clip_grad_norm=settings.clip_grad_norm,
        on_epoch=on_epoch,
        on_step=(lambda logs: per_step.step()) if per_step is not None else None,
        progress=progress,
        desc=f"ncde seed {seed}",
    )
    if best["state"] is not None:
        model.load_state_dict(best["state"])
    score = auc(test.labels, predict_proba(model, test))
    run = ModelRun(
        "ncde",
        seed,
        score,
        time.perf_counter() - start,
        time.process_time() - cpu,
        int(best["epoch"]),
        len(train),
        len(test),
    )
    return model, run


@dataclass(frozen=True)
class NCDEStudy:
    """The neural CDE's runs merged with lesson 5's on the same splits (``auc``: one
    :class:`~nodecourse.lessons.lesson05.AUCStudy`, the CDE as model ``"ncde"``), and each model's
    trainable parameters (``parameters``: (model, count) pairs; None for the scikit-learn regression)."""

    config: NCDEConfig
    auc: AUCStudy
    parameters: tuple[tuple[str, int | None], ...]

    def parameter_count(self, model: str) -> int | None:
        return dict(self.parameters)[model]

    def seconds_per_epoch(self, model: str, *, cpu: bool = False) -> float:
        """Wall (or CPU) seconds of one run of ``model`` over its epochs, averaged over seeds: training,
        each epoch's validation and the final test included, as lesson 5 times its runs. The regression
        has no epochs: its whole fit."""
        runs = [r for r in self.auc.runs if r.model == model]
        epochs = max(1, self.config.study.epochs) if model != "summary-logreg" else 1
        return sum((r.cpu_seconds if cpu else r.seconds) / epochs for r in runs) / len(runs)


@cached_study
def ncde_study(config: NCDEConfig, progress: bool = False) -> NCDEStudy:
    """The neural CDE on every seed's split of ``config.study``, merged with lesson 5's runs of that study.

    Per seed the patients, the split and the normalisation are made exactly as lesson 5's
    :func:`~nodecourse.lessons.lesson05.auc_study` makes them (same calls, same seeds), so the gaps
    between the CDE and lesson 5's models are paired per seed."""
    from nodecourse.data import physionet

    study = config.study
    baselines = auc_study(study, progress=progress)
    data = physionet.load("set-a", quantization=study.quantization, progress=progress, verbose=False)
    runs, counts = [], {}
    for seed in study.seeds:
        subset = data.sample(study.n_patients, seed=seed) if study.n_patients else data
        parts = subset.split(test=study.test_fraction, val=study.val_fraction, seed=seed)
        norm = physionet.Normalizer.fit(parts["train"])
        train, val = norm.transform(parts["train"]), norm.transform(parts["val"]) if "val" in parts else None
        model, run = fit_ncde(config, train, norm.transform(parts["test"]), val, seed=seed, progress=progress)
        runs.append(run)
        counts = {m: n_parameters(build_model(m, train, settings=study.training)) or None for m in study.models}
        counts["ncde"] = n_parameters(model)
    merged = baselines.merged(AUCStudy(study, data.report.source, len(data), tuple(runs)))
    return NCDEStudy(config, merged, tuple(counts.items()))
