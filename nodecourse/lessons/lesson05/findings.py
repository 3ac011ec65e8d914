"""Lesson 5's findings: the numbers the lesson's sentences quote, rendered by ``markdown()``.

Each class is a frozen dataclass built by a classmethod named for what it is built from
(``from_data``, ``from_rows``, ``from_study``, ``from_curve``); a notebook cell shows one by leaving it
as its last expression.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from nodecourse.claims import verdict_text
from nodecourse.lessons.lesson05.config import (
    BASELINES,
    FULL_STUDY,
    NAMES,
    PUBLISHED,
    PUBLISHED_PATIENTS,
    PUBLISHED_SELECTION,
    grid_text,
    split_sizes,
)
from nodecourse.lessons.lesson05.judging import GapVerdict, judge_gap
from nodecourse.lessons.lesson05.studies import AUCStudy, ScalingRow
from nodecourse.lessons.study import Findings
from nodecourse.models import PHYSIONET_PUBLISHED, physionet_settings

if TYPE_CHECKING:  # not imported at run time, so that ``python -m nodecourse.lessons.lesson05.curve`` runs cleanly
    from nodecourse.lessons.lesson05.curve import CurveResult

__all__ = ["DataFindings", "ScalingFindings", "AUCFindings", "ModelAUC", "CurveFindings", "FULL_CURVE_COMMAND"]

FULL_CURVE_COMMAND = "OMP_NUM_THREADS=1 python -m nodecourse.lessons.lesson05.curve --full --out curve.json"


def _counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless n is 1 ("1 epoch", "3 epochs", "1,000 variables")."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


@dataclass(frozen=True)
class DataFindings(Findings):
    """What was loaded: where from, patients, deaths, the time grid, and the variables by kind."""

    source: str
    n_patients: int
    n_deaths: int
    grid_hours: float
    n_times: int
    variables: tuple[str, ...]
    descriptors: tuple[str, ...]

    @classmethod
    def from_data(cls, data) -> DataFindings:
        """From a loaded :class:`~nodecourse.data.physionet.PhysioNetSet`."""
        return cls(
            data.report.source,
            len(data),
            int(data.labels.sum()),
            float(data.quantization),
            len(data.times),
            tuple(data.variables),
            tuple(data.descriptors),
        )

    @property
    def synthetic(self) -> bool:
        return self.source == "synthetic"

    def _origin(self) -> str:
        """Where the patients come from, in words: the synthetic stand-in names itself."""
        if self.synthetic:
            return "the synthetic stand-in for set A, not real patients"
        return f"{self.source} copy of set A"

    def markdown(self) -> str:
        warning = (
            "## ⚠ SYNTHETIC DATA: PhysioNet set A was not found. "
            "Every AUC below describes the stand-in, nothing about the real benchmark.\n\n"
            if self.synthetic
            else ""
        )
        from nodecourse.lessons.lesson05.curve import COURSE_CURVE  # here: ``-m ...curve`` must import cleanly

        curve_sizes = " / ".join(f"{n:,}" for n in COURSE_CURVE.sizes)
        rate = 100 * self.n_deaths / self.n_patients if self.n_patients else float("nan")
        full = split_sizes(self.n_patients, FULL_STUDY.test_fraction, FULL_STUDY.val_fraction)
        train_side = full["train"] + full["val"]
        short = PUBLISHED_PATIENTS - full["train"]
        fewer = (
            f"{short:,} fewer than the published {PUBLISHED_PATIENTS:,}"
            if short > 0
            else f"{-short:,} more than the published {PUBLISHED_PATIENTS:,}"
        )
        return (
            f"{warning}**{self.n_patients:,} patients** ({self._origin()}), {self.n_deaths:,} "
            f"in-hospital deaths ({rate:.2f} %), on a grid of {self.grid_hours:g} h × {self.n_times} times "
            f"(the published runs: a {grid_text(PHYSIONET_PUBLISHED.quantization_hours)} grid).\n\n"
            f"**{_counted(len(self.variables) + len(self.descriptors), 'variable')}**: {len(self.variables)} "
            f"time series ({', '.join(self.variables)}) and {_counted(len(self.descriptors), 'descriptor')} "
            f"({', '.join(self.descriptors)}).\n\n"
            f"**Scale.** The published classifiers trained on {PUBLISHED_PATIENTS:,} patients: 80 % of set A "
            f"(the authors' `lib/parse_datasets.py` keeps set A only when it classifies); "
            f"{PUBLISHED_SELECTION}. Split 80/20 the same way, these {self.n_patients:,} patients give "
            f"{train_side:,} on the training side, and full mode sets {full['val']:,} of them aside to choose "
            f"the epoch: it trains on **{full['train']:,} patients**, {fewer}, at the course's settings "
            f"(grid, model sizes, optimiser, epochs), not the published ones. Whether that difference in "
            f"patients moves the AUC at the course's settings is what the learning curve below measures (in "
            f"full mode on {curve_sizes} patients); at the published settings it is not measured here."
        )


@dataclass(frozen=True)
class ScalingFindings(Findings):
    """Pitfall 1 measured on the training split: one :class:`~.studies.ScalingRow` per variable."""

    rows: tuple[ScalingRow, ...]

    @classmethod
    def from_rows(cls, rows) -> ScalingFindings:
        """From :func:`~.studies.scaling_study`'s rows (pitfall 1 measured on a training split)."""
        return cls(tuple(rows))

    def markdown(self) -> str:
        lines = [
            "| variable | train min to max | upper end with /max | middle 98 % width, /max | "
            "middle 98 % width, /range |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {r.variable} | {r.low:.4g} to {r.high:.4g} | {r.upper_end_by_max:.3f} | {r.middle_by_max:.3f} "
            f"| {r.middle_by_range:.3f} |"
            for r in self.rows
        ]
        return "\n".join(lines)


@dataclass(frozen=True)
class ModelAUC:
    """One model's test AUC over seeds: mean, standard deviation (0 with one seed), seeds, seconds a run."""

    model: str
    mean: float
    sd: float
    n_seeds: int
    seconds_per_run: float


@dataclass(frozen=True)
class AUCFindings(Findings):
    """The AUC table beside the published one, and ODE-RNN's paired gaps judged against the published gaps.

    ``mode``: "quick" or "full"; ``n_patients``: patients per seed's split. In quick mode the gaps'
    verdicts are shown as what this scale says, not as the claim's verdict (the ledger's full run decides)."""

    mode: str
    n_patients: int
    models: tuple[ModelAUC, ...]
    gaps: tuple[GapVerdict, ...]
    synthetic: bool = False

    @classmethod
    def from_study(cls, study: AUCStudy, mode: str) -> AUCFindings:
        aucs = study.aucs_by_model()
        models = tuple(
            ModelAUC(m, mean, sd, len(aucs[m]), study.mean_seconds(m)) for m, (mean, sd) in study.summary().items()
        )
        gaps = tuple(judge_gap(aucs, b) for b in BASELINES if b in aucs and "odernn" in aucs)
        return cls(mode, study.config.n_patients or study.n_set, models, gaps, study.synthetic)

    def markdown(self) -> str:
        published = {"odernn": "odernn", "latent-ode": "latent-ode", "gru-d": "gru-d", "gru-dt": "rnn-dt"}
        lines = [
            f"**Mortality AUC, {self.mode} mode** ({self.n_patients:,} patients per split"
            f"{', synthetic stand-in' if self.synthetic else ''}; mean ± sd over seeds)",
            "",
            "| model | AUC here | seeds | seconds a run | published |",
            "|---|---:|---:|---:|---|",
        ]
        for m in self.models:
            pub = PUBLISHED.get(published.get(m.model, ""))
            pub_text = (
                "—" if pub is None else f"{pub[0]:.3f} ± {pub[1]:.3f}" + (" (RNN-Δt)" if m.model == "gru-dt" else "")
            )
            lines.append(
                f"| {NAMES[m.model]} | {m.mean:.3f} ± {m.sd:.3f} | {m.n_seeds} | {m.seconds_per_run:.0f} | {pub_text} |"
            )
        if self.gaps:
            lines += [
                "",
                "**ODE-RNN − baseline, paired per seed** (95 % interval of the mean gap), against the published "
                "gap's range (the published means' difference ± their standard deviations combined); a model "
                "the paper did not train is judged against 0, its nearest published relative shown, not judged:",
                "",
                "| baseline | gap here | 95 % interval | judged against | verdict at this scale |",
                "|---|---:|---|---|---|",
            ]
            for g in self.gaps:
                iv = g.interval
                gap = "n/a" if iv is None else f"{iv.mean:+.3f}"
                span = "too few seeds" if iv is None else f"{iv.lo:+.3f} to {iv.hi:+.3f}"
                if g.published is not None:
                    against = f"published {g.published.text()}"
                elif g.reference is not None:
                    against = f"0 (the paper's RNN-Δt, another model: {g.reference.text()}, not judged)"
                else:
                    against = "0 (nothing published)"
                verdict = verdict_text(g.verdict, g.n_seeds)
                lines.append(f"| {NAMES[g.baseline]} | {gap} | {span} | {against} | {verdict} |")
            if self.mode == "quick":
                lines += [
                    "",
                    "Quick mode trains on a few hundred patients for a few epochs: these verdicts say "
                    "what this scale shows, and the ledger reports the quick rows as undecided; the full "
                    f"study (all of set A, {len(FULL_STUDY.seeds)} seeds) decides the claims.",
                ]
        return "\n".join(lines)


@dataclass(frozen=True)
class CurveFindings(Findings):
    """The learning curve's table, whether more patients close the gap to the published levels, and
    what is and is not measured.

    ``full_measured``: whether ``result`` is the lesson's full curve (the course's settings at 1,000 /
    2,000 / 3,200 patients, :data:`~.curve.COURSE_CURVE`). On the synthetic stand-in the table is shown
    and nothing is compared with the published levels. The curve at the published settings is never
    run by the lesson: the text says so and gives :data:`FULL_CURVE_COMMAND`."""

    result: CurveResult
    mode: str
    full_measured: bool = False

    @classmethod
    def from_curve(cls, curve: CurveResult, mode: str, *, full_measured: bool = False) -> CurveFindings:
        """From the learning curve's :class:`~.curve.CurveResult`, run at ``mode``'s sizes."""
        return cls(curve, mode, full_measured)

    @property
    def synthetic(self) -> bool:
        return self.result.data_source == "synthetic"

    def markdown(self) -> str:
        config = self.result.config
        sizes = ", ".join(f"{n:,}" for n in config.sizes)
        st = physionet_settings(config.settings)
        epochs = st.epochs if config.epochs is None else config.epochs
        head = (
            f"**Learning curve, {self.mode}-mode sizes** ({sizes} training patients; "
            f"{_counted(len(config.seeds), 'seed')}; {config.settings} settings: "
            f"{grid_text(st.quantization_hours)} grid, {_counted(epochs, 'epoch')}, the weights of the last epoch)\n\n"
        )
        parts = [head + self.result.to_markdown()]
        if self.synthetic:
            parts.append(
                "**⚠ Synthetic stand-in.** These fits ran on the stand-in for set A, not on real patients: the "
                "table shows that the curve runs and how it is read; it says nothing about PhysioNet, and "
                "nothing here is compared with the published levels."
            )
        else:
            parts.append(self._gap_text())
        parts.append(self._scope_text())
        return "\n\n".join(parts)

    def _gap_text(self) -> str:
        from nodecourse.claims import seed_interval

        config = self.result.config
        small, large = config.sizes[0], config.sizes[-1]
        auc = {(p.model, p.n_train, p.seed): p.auc for p in self.result.points}
        lines = [
            f"**Do more patients close the gap?** For each model with a published level: the mean AUC at "
            f"{small:,} and at {large:,} training patients, the change paired per seed (same held-out "
            f"patients), and what is left to the published mean (its lower end: the mean minus its "
            f"published sd)."
        ]
        for model in (m for m in config.models if m in PUBLISHED):
            pairs = [
                (auc[(model, small, s)], auc[(model, large, s)])
                for s in config.seeds
                if (model, small, s) in auc and (model, large, s) in auc
            ]
            if not pairs:
                continue
            mean, sd = PUBLISHED[model]
            at_small = sum(a for a, _ in pairs) / len(pairs)
            at_large = sum(b for _, b in pairs) / len(pairs)
            change = f"{at_large - at_small:+.3f}"
            reading = "one seed: no interval, no reading"
            if len(pairs) > 1:
                ci = seed_interval([b - a for a, b in pairs])
                top = seed_interval([b for _, b in pairs]).hi
                change += f" (95 % interval {ci.lo:+.3f} to {ci.hi:+.3f})"
                if top >= mean - sd:
                    reading = f"the published range is within reach at {large:,} patients"
                elif ci.lo > 0:
                    reading = f"more patients raise it, and at {large:,} it is still below the published range"
                elif ci.hi < 0:
                    reading = "it falls with more patients here"
                else:
                    reading = (
                        f"the interval holds no change: {len(pairs)} seeds do not decide whether {large:,} "
                        f"patients do better than {small:,}"
                    )
            short = mean - at_large
            left = f"{short:.3f} short of it" if short > 0 else f"{-short:.3f} above it"
            lines.append(
                f"- {NAMES[model]}: {at_small:.3f} → {at_large:.3f}, change {change}; published {mean:.3f} "
                f"(lower end {mean - sd:.3f}), {left} at {large:,}: {reading}."
            )
        return "\n".join(lines)

    def _scope_text(self) -> str:
        from nodecourse.lessons.lesson05.curve import COURSE_CURVE, FULL_CURVE  # ``-m ...curve`` imports cleanly

        course, full = COURSE_CURVE, FULL_CURVE
        pub = physionet_settings(full.settings)
        mine = physionet_settings(course.settings)
        config = self.result.config
        epochs = mine.epochs if config.epochs is None else config.epochs
        measured = (
            f"**What is measured.** Held-out AUC against the number of training patients at the "
            f"{mine.name} settings ({grid_text(mine.quantization_hours)} grid; {_counted(epochs, 'epoch')} here, "
            f"{mine.epochs} in full mode), every "
            f"size of a seed scored on the same held-out patients of set A: whether patients alone move the "
            f"AUC at the settings the course trains with."
        )
        if not self.full_measured:
            measured += (
                f" At {self.mode}-mode sizes the curve shows how it is measured, not where the benchmark's "
                f"curve lies: full mode runs it on {' / '.join(f'{n:,}' for n in course.sizes)} patients, "
                f"{len(course.seeds)} seeds."
            )
        not_measured = (
            f"**Not measurable at this scale: the curve at the published settings** "
            f"({grid_text(pub.quantization_hours)} grid, {pub.epochs} epochs, batches of {pub.batch_size}) on "
            f"{' / '.join(f'{n:,}' for n in full.sizes)} patients, {len(full.seeds)} seeds, "
            f"{len(full.models)} models: hours of CPU, beyond this course's two shared cores. So this "
            f"lesson cannot say how much of a gap the published settings (grid, epochs, model sizes, "
            f"selection on the test set) explain. The command that measures it, on a cluster or a larger "
            f"machine: `{FULL_CURVE_COMMAND}`."
        )
        return measured + "\n\n" + not_measured
