"""An explorer for lesson 3: choose how many zero dimensions to add and how long to train;
see the decision boundary, the circle probe at |x| = 1.25 and the solver's work (NFE).

The explorer keeps its last result in :attr:`AnnulusExplorer.result`, so it can be driven
headless in tests::

    ex = AnnulusExplorer(render=False)
    ex.augment_dim.value = 1
    ex.result.probe.min_margin, ex.result.final_nfe

Training takes a few seconds; results are cached per (augment_dim, epochs, seed), so
moving a slider back is instant.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from nodecourse.data import annulus
from nodecourse.measure import CircleProbe, DecisionGrid, circle_probe, decision_grid
from nodecourse.models import FitLog, augmented_node, count_parameters, fit_augmented, plain_node, sign_accuracy
from nodecourse.widgets._base import FigureExplorer


@dataclass
class AnnulusResult:
    """One trained model in the explorer: its settings, log, probe at |x| = ``probe.radius`` and grid."""

    augment_dim: int
    epochs: int
    seed: int
    n_parameters: int
    sample_accuracy: float
    log: FitLog = field(repr=False)
    probe: CircleProbe = field(repr=False)
    grid: DecisionGrid = field(repr=False)

    @property
    def single_class(self) -> int | None:
        """+1 or -1 when the model gives that class to every point of its decision grid (disk, ring
        and the space around them); None when its outputs take both signs."""
        signs = set(torch.sign(self.grid.outputs).flatten().tolist())
        return int(signs.pop()) if len(signs) == 1 and signs != {0.0} else None

    @property
    def final_nfe(self) -> float:
        """Forward NFE of the last epoch's training call(s), per forward."""
        return self.log.nfe_per_forward[-1]

    def summary(self) -> str:
        """One line: the model, its sample accuracy, then what the circle probe found; or, when the
        model predicts one class everywhere, that (the probe then says nothing about the boundary)."""
        kind = "plain NODE" if self.augment_dim == 0 else f"ANODE (+{self.augment_dim} zero dims)"
        head = f"{kind}, {self.epochs} epochs, seed {self.seed}, {self.n_parameters} parameters: "
        if self.single_class is not None:
            name = "ring (+1)" if self.single_class > 0 else "disk (-1)"
            return (
                head + f"not fitted: it predicts one class, the {name}, everywhere on the grid; its sample "
                f"accuracy {self.sample_accuracy:.1%} is the share of that class among the points, and the "
                f"circle probe has no boundary to find (train longer, or change the seed); "
                f"forward NFE at the last epoch {self.final_nfe:.0f}"
            )
        return (
            head + f"sample accuracy {self.sample_accuracy:.1%}; on |x| = {self.probe.radius}: wrong "
            f"{self.probe.misclassified:.2%} of the circle, min margin {self.probe.min_margin:+.2f}; "
            f"forward NFE at the last epoch {self.final_nfe:.0f}"
        )


def train_and_probe(
    augment_dim: int,
    epochs: int,
    seed: int = 0,
    *,
    n_inner: int = 60,
    n_outer: int = 120,
    lr: float = 1e-2,
    tol: float = 1e-3,
    probe_radius: float = 1.25,
    device=None,
    dtype: torch.dtype = torch.float32,
    grid_resolution: int = 80,
) -> AnnulusResult:
    """Train a NODE (``augment_dim=0``) or ANODE on a small annulus, full batch, dopri5 at ``tol``;
    probe it on |x| = ``probe_radius`` and on a decision grid."""
    x, y = annulus(n_inner, n_outer, seed=seed, dtype=dtype, device=device)
    torch.manual_seed(seed)
    solver = dict(method="dopri5", rtol=tol, atol=tol)
    model = plain_node(2, **solver) if augment_dim == 0 else augmented_node(2, augment_dim, **solver)
    log = fit_augmented(model, x, y, epochs=epochs, lr=lr, seed=seed)
    return AnnulusResult(
        augment_dim,
        epochs,
        seed,
        count_parameters(model),
        sign_accuracy(model, x, y),
        log,
        circle_probe(model, probe_radius, n_points=5000),
        decision_grid(model, resolution=grid_resolution),
    )


class AnnulusExplorer(FigureExplorer):
    """Sliders for augment dimensions, epochs and seed; a decision-boundary plot, the circle probe
    and NFE. Every change retrains (cached) and updates :attr:`result` (and the figure when
    ``render=True``). Display it with ``display(explorer.widget)`` or just ``explorer``.
    """

    BUSY_VERB = "training"

    def __init__(
        self,
        *,
        augment_dim: int = 0,
        epochs: int = 40,
        seed: int = 0,
        max_augment: int = 3,
        max_epochs: int = 150,
        render: bool = True,
        device=None,
    ):
        import ipywidgets as w

        self.render = render
        self.device = device
        style = dict(continuous_update=False)
        self.augment_dim = self._control(
            "augment_dim",
            w.IntSlider,
            augment_dim,
            min=0,
            max=max_augment,
            description="augment dims",
            tooltip="zero dimensions added to the state (0: a plain neural ODE)",
            style={"description_width": "initial"},
            hint="raise max_augment",
            **style,
        )
        self.epochs = self._control(
            "epochs",
            w.IntSlider,
            epochs,
            min=5,
            max=max_epochs,
            step=5,
            description="epochs",
            tooltip="training epochs",
            hint="raise max_epochs",
            **style,
        )
        self.seed = self._control(
            "seed",
            w.IntSlider,
            seed,
            min=0,
            max=4,
            description="seed",
            tooltip="seed of the data and the weights",
            **style,
        )
        self.status = w.HTML()
        self.output = w.Output()
        self.controls = [self.augment_dim, self.epochs, self.seed]
        self.widget = w.VBox([w.HBox(self.controls), self.status, self.output])
        self.result: AnnulusResult | None = None
        self.figure = None
        self._cache: dict[tuple[int, int, int], AnnulusResult] = {}
        self._observe_controls()
        self.update()

    def update(self) -> AnnulusResult:
        """Train (or fetch from the cache) with the current values (busy state meanwhile); refresh result,
        status and figure."""
        key = (self.augment_dim.value, self.epochs.value, self.seed.value)

        def compute() -> AnnulusResult:
            if key not in self._cache:
                self._cache[key] = train_and_probe(*key, device=self.device)
            return self._cache[key]

        return self._recompute(compute, self._show)

    def _show(self, result: AnnulusResult) -> AnnulusResult:
        self.result = result
        self.status.value = f"<code>{result.summary()}</code>"
        if self.render:
            self.figure = self._make_figure(result)
            self._draw()
        return result

    @staticmethod
    def _make_figure(res: AnnulusResult):
        import matplotlib.pyplot as plt

        from nodecourse.plotting import draw_decision_boundary

        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.3))
        draw_decision_boundary(ax1, res.grid, title="decision boundary", probe_radius=res.probe.radius)
        ax1.grid(False)
        deg = res.probe.angles.numpy() * 180 / 3.141592653589793
        ax2.plot(deg, (res.probe.label * res.probe.outputs).numpy())
        ax2.axhline(0, color="k", lw=0.8)
        ax2.set_xlabel("angle on |x| = 1.25 (degrees)")
        ax2.set_ylabel("margin (negative = wrong)")
        ax2.set_title(
            "circle probe: one class everywhere, no boundary"
            if res.single_class is not None
            else f"circle probe: min margin {res.probe.min_margin:+.2f}",
            fontsize=10,
        )
        fig.tight_layout()
        plt.close(fig)  # shown through the Output widget only
        return fig


__all__ = ["AnnulusExplorer"]
