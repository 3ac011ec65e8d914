"""Training settings for lesson 5's PhysioNet models, each value with where it comes from.

Two instances of one frozen dataclass, :class:`PhysioNetSettings`:

- :data:`PHYSIONET_COURSE`: what the course has trained with since lesson 5 was written (hourly grid,
  64-unit GRU cells, Adam with cosine decay, 20 epochs);
- :data:`PHYSIONET_PUBLISHED`: the settings of Rubanova et al. 2019 ("Latent ODEs for Irregularly-Sampled
  Time Series", NeurIPS) for PhysioNet 2012 mortality, read from the authors' code
  (github.com/YuliaRubanova/latent_ode, files named per value in :data:`PHYSIONET_PUBLISHED_SOURCES`).

``settings.source(name)`` says where a value comes from; ``settings.not_followed`` says which
published values the course does not follow, and why. ``nodecourse physionet --settings
published`` trains with :data:`PHYSIONET_PUBLISHED` (see :func:`nodecourse.models.latent.fit_mortality`).

What the published code does that this module records as *not followed* (details in
:data:`PHYSIONET_NOT_FOLLOWED`): min-max normalisation over train and test together and time scaled by
each batch's maximum (known pitfalls, COURSE.md section 5); the descriptors as time-0 series
(the course keeps them apart, as static inputs to the head); the GRU update's mean/std pair;
3-sample IWAE bound; ODE-RNN's reconstruction term; the AUC read from the test set during
training. And one finding that matters for the ledger: with ``--classif`` the published
``lib/parse_datasets.py`` keeps set A only (set B had no labels then) and splits it 80/20
(``random_state=42``): the published mortality AUCs were trained on 3,200 patients of set A,
not on 8,000 of sets A and B. 3,200 is therefore the learning curve's published point.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

__all__ = [
    "LATENT_ODE_REPO",
    "PhysioNetSettings",
    "PHYSIONET_COURSE",
    "PHYSIONET_PUBLISHED",
    "PHYSIONET_PUBLISHED_SOURCES",
    "PHYSIONET_COURSE_SOURCES",
    "PHYSIONET_NOT_FOLLOWED",
    "physionet_settings",
]

LATENT_ODE_REPO = "YuliaRubanova/latent_ode"


@dataclass(frozen=True)
class PhysioNetSettings:
    """Model sizes, solver and training schedule for lesson 5's models.

    Sizes: ``ode_rnn_hidden`` is the ODE-RNN's state (B, H); ``latent_dim`` the Latent ODE's z0
    (B, L); ``rec_dim`` the Latent ODE encoder's ODE-RNN state. ``ode_units`` and ``ode_layers``:
    each vector field is ``Linear(n, units)``, then ``ode_layers`` x (tanh, ``Linear(units, units)``),
    tanh, ``Linear(units, n)``. ``gru_units``: hidden units of the gate networks of the masked GRU
    update (0: a plain ``nn.GRUCell``). ``classifier_hidden``: widths of the mortality head's
    ReLU layers; ``classifier_dropout`` before each.
    Training: ``optimizer`` ("adam" or "adamax"), ``lr``; the learning rate is multiplied by
    ``lr_decay_per_iteration`` after each batch down to ``lr * lr_floor_fraction`` when
    ``lr_schedule == "exponential"``, or follows a cosine over the epochs when ``"cosine"``.
    ``clip_grad_norm``: gradient norm clipping (None: none).
    ``ce_weight`` and ``obs_std``: the Latent ODE's loss, ELBO + ``ce_weight`` x cross-entropy,
    with Gaussian observation noise ``obs_std``; ``kl_warmup_epochs``: epochs with the KL term
    off, after which its weight rises as 1 - ``kl_rate`` ** (epoch - warm-up).
    ``encoder_step_hours``: Euler step of the encoders' ODE (hours); ``decoder_method``,
    ``decoder_rtol``, ``decoder_atol``: the Latent ODE decoder's solve.
    ``train_patients``: the size of the published training set (the course trains on what
    its split gives; the learning curve uses it as a point).
    """

    name: str
    quantization_hours: float
    ode_rnn_hidden: int
    latent_dim: int
    rec_dim: int
    ode_units: int
    ode_layers: int
    gru_units: int
    classifier_hidden: tuple[int, ...]
    classifier_dropout: float
    optimizer: str
    lr: float
    lr_schedule: str
    lr_decay_per_iteration: float
    lr_floor_fraction: float
    weight_decay: float
    clip_grad_norm: float | None
    batch_size: int
    epochs: int
    ce_weight: float
    obs_std: float
    kl_warmup_epochs: int
    kl_rate: float
    encoder_step_hours: float
    decoder_method: str
    decoder_rtol: float
    decoder_atol: float
    train_patients: int | None

    OPTIMIZERS = ("adam", "adamax")
    LR_SCHEDULES = ("cosine", "exponential")

    def __post_init__(self):
        if self.optimizer not in self.OPTIMIZERS:
            raise ValueError(f"optimizer={self.optimizer!r}: use one of {self.OPTIMIZERS}")
        if self.lr_schedule not in self.LR_SCHEDULES:
            raise ValueError(f"lr_schedule={self.lr_schedule!r}: use one of {self.LR_SCHEDULES}")

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    def source(self, name: str) -> str:
        """Where the value of field ``name`` comes from (a file and flag, or the course's reason)."""
        table = _SOURCES[self.name]
        if name not in table:
            raise KeyError(f"{name!r} is not a field of PhysioNetSettings; fields: {self.field_names()}")
        return table[name]

    @property
    def not_followed(self) -> dict[str, str]:
        """Published values or behaviours the course does not follow, each with the reason."""
        return dict(PHYSIONET_NOT_FOLLOWED) if self.name == "published" else {}

    def as_dict(self) -> dict:
        """The values (JSON-ready)."""
        out = dataclasses.asdict(self)
        out["classifier_hidden"] = list(self.classifier_hidden)
        return out

    def table(self) -> list[dict]:
        """One row per field: name, value, source."""
        return [{"setting": k, "value": v, "source": self.source(k)} for k, v in self.as_dict().items()]

    def to_markdown(self) -> str:
        """The values with their sources as a Markdown table, then what the course does not follow."""

        def cell(text) -> str:
            return str(text).replace("|", "\\|")

        rows = ["| setting | value | source |", "|---|---|---|"]
        rows += [
            f"| `{r['setting']}` | {cell(f'{v:.4g}' if isinstance(v := r['value'], float) else v)} | "
            f"{cell(r['source'])} |"
            for r in self.table()
        ]
        out = f"**Settings `{self.name}`**\n\n" + "\n".join(rows)
        if self.not_followed:
            out += "\n\n**Not followed, and why**\n\n" + "\n".join(
                f"- *{k}*: {v}" for k, v in self.not_followed.items()
            )
        return out

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def quick(self, *, epochs: int) -> "PhysioNetSettings":
        """The same sizes, optimiser and solver with fewer ``epochs`` (quick mode: shapes kept)."""
        return dataclasses.replace(self, epochs=epochs)


PHYSIONET_COURSE = PhysioNetSettings(
    name="course",
    quantization_hours=1.0,
    ode_rnn_hidden=64,
    latent_dim=20,
    rec_dim=64,
    ode_units=64,
    ode_layers=1,
    gru_units=0,
    classifier_hidden=(64,),
    classifier_dropout=0.3,
    optimizer="adam",
    lr=3e-3,
    lr_schedule="cosine",
    lr_decay_per_iteration=1.0,
    lr_floor_fraction=0.0,
    weight_decay=1e-3,
    clip_grad_norm=5.0,
    batch_size=64,
    epochs=20,
    ce_weight=10.0,
    obs_std=0.5,
    kl_warmup_epochs=0,
    kl_rate=0.0,
    encoder_step_hours=1.0,
    decoder_method="euler",
    decoder_rtol=1e-3,
    decoder_atol=1e-4,
    train_patients=None,
)

PHYSIONET_PUBLISHED = PhysioNetSettings(
    name="published",
    quantization_hours=1 / 60,
    ode_rnn_hidden=20,
    latent_dim=20,
    rec_dim=40,
    ode_units=50,
    ode_layers=3,
    gru_units=50,
    classifier_hidden=(300, 300),
    classifier_dropout=0.0,
    optimizer="adamax",
    lr=1e-2,
    lr_schedule="exponential",
    lr_decay_per_iteration=0.999,
    lr_floor_fraction=0.1,
    weight_decay=0.0,
    clip_grad_norm=None,
    batch_size=50,
    epochs=100,
    ce_weight=100.0,
    obs_std=0.01,
    kl_warmup_epochs=50,
    kl_rate=0.993,
    encoder_step_hours=48 / 50,
    decoder_method="dopri5",
    decoder_rtol=1e-3,
    decoder_atol=1e-4,
    train_patients=3200,
)

_README = f"{LATENT_ODE_REPO} README.md, 'Physionet (discretization by 1 min)' command"
PHYSIONET_PUBLISHED_SOURCES: dict[str, str] = {
    "name": "this module",
    "quantization_hours": f"{_README}: --quantization 0.016 (hours; the course's grid takes 1/60 h, one "
    "minute; an earlier README gave 0.1)",
    "ode_rnn_hidden": f"{LATENT_ODE_REPO} run_models.py, --ode-rnn branch: n_ode_gru_dims = args.latents; "
    f"{_README}: -l 20",
    "latent_dim": f"{_README}: -l 20 (--latents)",
    "rec_dim": f"{_README}: --rec-dims 40 (an earlier README gave 30)",
    "ode_units": f"{_README}: --units 50",
    "ode_layers": f"{_README}: --rec-layers 3 --gen-layers 3; lib/utils.py create_net",
    "gru_units": f"{_README}: --gru-units 50; lib/encoder_decoder.py GRU_unit (gates are one-hidden-layer MLPs)",
    "classifier_hidden": f"{LATENT_ODE_REPO} lib/base_models.py create_classifier: Linear(z0, 300), ReLU, "
    "Linear(300, 300), ReLU, Linear(300, 1)",
    "classifier_dropout": f"{LATENT_ODE_REPO} lib/base_models.py create_classifier: no dropout",
    "optimizer": f"{LATENT_ODE_REPO} run_models.py: optim.Adamax",
    "lr": f"{LATENT_ODE_REPO} run_models.py: --lr default 1e-2 (the README's command does not set it)",
    "lr_schedule": f"{LATENT_ODE_REPO} run_models.py: utils.update_learning_rate every iteration",
    "lr_decay_per_iteration": f"{LATENT_ODE_REPO} run_models.py: update_learning_rate(decay_rate=0.999, ...)",
    "lr_floor_fraction": f"{LATENT_ODE_REPO} run_models.py: update_learning_rate(..., lowest=args.lr / 10)",
    "weight_decay": f"{LATENT_ODE_REPO} run_models.py: Adamax without weight_decay",
    "clip_grad_norm": f"{LATENT_ODE_REPO} run_models.py: loss.backward(); optimizer.step(), no clipping",
    "batch_size": f"{LATENT_ODE_REPO} run_models.py: -b default 50; lib/parse_datasets.py min(len, batch_size, n)",
    "epochs": f"{_README}: --niters 100 (run_models.py loops num_batches * (niters + 1) iterations)",
    "ce_weight": f"{LATENT_ODE_REPO} lib/base_models.py compute_all_losses: loss + ce_loss * 100 "
    "(train_classif_w_reconstr is set for physionet in run_models.py)",
    "obs_std": f"{LATENT_ODE_REPO} run_models.py: obsrv_std = 0.01 (not hopper)",
    "kl_warmup_epochs": f"{LATENT_ODE_REPO} run_models.py: wait_until_kl_inc = 50",
    "kl_rate": f"{LATENT_ODE_REPO} run_models.py: kl_coef = 1 - 0.993 ** (epoch - wait_until_kl_inc)",
    "encoder_step_hours": f"{LATENT_ODE_REPO} lib/encoder_decoder.py run_odernn: minimum_step = interval / 50 "
    "(one Euler step below it, Euler on a grid of that step above); 48 h / 50",
    "decoder_method": f"{LATENT_ODE_REPO} lib/create_latent_ode_model.py: DiffeqSolver(..., 'dopri5', ...)",
    "decoder_rtol": f"{LATENT_ODE_REPO} lib/create_latent_ode_model.py: odeint_rtol = 1e-3",
    "decoder_atol": f"{LATENT_ODE_REPO} lib/create_latent_ode_model.py: odeint_atol = 1e-4",
    "train_patients": f"{LATENT_ODE_REPO} lib/parse_datasets.py, physionet: with --classif only set A (train=True) is "
    "kept, then train_test_split(train_size=0.8, random_state=42): 3,200 of 4,000",
}

_COURSE_WHY = "the course's own choice (lesson 5's first settings)"
PHYSIONET_COURSE_SOURCES: dict[str, str] = {name: _COURSE_WHY for name in PhysioNetSettings.field_names()}
PHYSIONET_COURSE_SOURCES.update(
    {
        "name": "this module",
        "quantization_hours": "the course's own choice: an hourly grid keeps the solves per batch near 48 on 2 "
        "CPU cores",
        "classifier_dropout": "the course's own choice: 4,000 patients overfit a 64-unit head fast",
        "encoder_step_hours": "the course's own choice: Euler, one-hour steps (close to the published 48/50 h)",
        "train_patients": "the course's split: all training-split patients of set A",
    }
)

_SOURCES = {"course": PHYSIONET_COURSE_SOURCES, "published": PHYSIONET_PUBLISHED_SOURCES}

#: Published behaviours the course does not follow, and why.
PHYSIONET_NOT_FOLLOWED: dict[str, str] = {
    "set B": "the paper's table is easily read as 8,000 patients of sets A and B; the published classification "
    "code keeps set A only (see train_patients). The course trains on set A only (its shared copy); "
    "set B is not used for training in this course.",
    "normalisation": "published: (x - min) / max over train and test together; the course z-scores with "
    "training-split statistics only, so nothing of the test patients reaches training.",
    "time scale": "published: times divided by each batch's maximum; the course divides by the fixed 48 h.",
    "descriptors": "published: Age, Gender, Height, ICUType, Weight as time-0 series among 41 variables; the "
    "course keeps 37 series and gives the 5 descriptors (and their mask) to the head.",
    "GRU update": "published GRU_unit carries a mean and a std state and gates both; the course keeps the "
    "mean (MLP gates of gru_units), without the std half.",
    "IWAE samples": "published: 3 samples of z0 and a log-sum-exp bound; the course uses 1 sample (the ELBO).",
    "ODE-RNN loss": "published ODE-RNN on PhysioNet adds a reconstruction likelihood to 100 x CE; the course's "
    "ODE-RNN is trained on the cross-entropy only.",
    "model selection": "published: test AUC logged every 10 epochs, no validation split; the course reports "
    "the last epoch (or a validation-chosen one), never a test-chosen one.",
    "initialisation": "published: the GRU unit's and z0 networks' Linear weights drawn N(0, 0.1^2), biases 0 "
    "(lib/utils.py init_network_weights); the course keeps PyTorch's default initialisation.",
    "z0 transform": "published Latent ODE maps the encoder's (mean, std) state to q(z0) through Linear(2n, 100), "
    "tanh, Linear(100, 2L); the course uses one Linear(n, 2L) from the mean state.",
    "long gaps": "published: a gap longer than 1/50 of the batch's span is Euler on n = max(2, int(gap / step)) "
    "points (steps of 1 to 2 times 48/50 h); the course's Euler takes steps of at most 48/50 h.",
    "compute": "100 epochs at minute quantisation for 4 models x 3 sizes x several seeds does not fit 2 CPU "
    "cores in a session; quick mode keeps the shapes and optimiser and cuts patients and epochs.",
}


def physionet_settings(name: str) -> PhysioNetSettings:
    """:data:`PHYSIONET_COURSE` or :data:`PHYSIONET_PUBLISHED` by name; a ValueError names the choices."""
    table = {"course": PHYSIONET_COURSE, "published": PHYSIONET_PUBLISHED}
    if name not in table:
        raise ValueError(f"settings={name!r}: use one of {tuple(table)}")
    return table[name]
