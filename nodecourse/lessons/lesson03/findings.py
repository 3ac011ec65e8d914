"""What lesson 3's studies show, judged against the thresholds of :mod:`.config`.

``*_parts`` judge per-seed numbers (hand-made ones work too) and return a :class:`JudgedParts`; the findings
classes hold the numbers a sentence quotes and render themselves (:meth:`markdown`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nodecourse.claims import ClaimVerdict, combine, judge, judge_median, parts_text, seed_interval
from nodecourse.lessons.lesson03 import config as C
from nodecourse.lessons.lesson03.bounds import clopper_pearson, judge_bound, order_preserving_floor, rk4_invertible_hlip
from nodecourse.lessons.lesson03.config import (
    ABS_MODELS,
    ANNULUS_MODELS,
    DISK_PROBE_RADII,
    NEGATION_MODELS,
    PROBE_RADIUS,
)
from nodecourse.lessons.study import Findings

__all__ = [
    "AbsFindings",
    "AnnulusFindings",
    "JudgedParts",
    "NegationFindings",
    "abs_parts",
    "annulus_parts",
    "annulus_values",
    "negation_parts",
]


def _interval_text(iv, fmt: str = ".3g") -> str:
    """``"mean [lo, hi]"`` of a seed interval, ``"median [lo, hi]"`` of a median interval, ``"n/a"`` for None."""
    if iv is None:
        return "n/a"
    centre = getattr(iv, "mean", None)
    if centre is None:
        return f"median {iv.median:{fmt}} [{iv.lo:{fmt}}, {iv.hi:{fmt}}]"
    return f"{centre:{fmt}} [{iv.lo:{fmt}}, {iv.hi:{fmt}}]"


def _range(vals, fmt=".3g") -> str:
    return f"{min(vals):{fmt}}-{max(vals):{fmt}}"


@dataclass(frozen=True)
class JudgedParts:
    """A row's parts judged: ``parts`` (part -> verdict), ``intervals`` (reading -> seed or median interval,
    None with too few seeds), ``reasons`` (reading -> why), ``subparts`` (reading -> verdict, where a part
    combines several readings or a reading is shown without deciding). ``below_bound`` and ``rate_interval``:
    the fixed-step count of ``flow-readout-noninvertible`` (None elsewhere)."""

    parts: dict[str, ClaimVerdict]
    intervals: dict = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    subparts: dict[str, ClaimVerdict] = field(default_factory=dict)
    below_bound: int | None = None
    rate_interval: tuple[float, float] | None = None

    @property
    def verdict(self) -> ClaimVerdict:
        return combine(self.parts)


# --- the annulus ----------------------------------------------------------------------------------


def annulus_values(runs, radius: float = PROBE_RADIUS) -> dict[str, dict[int, float]]:
    """The per-seed numbers the ``annulus`` row is judged on: ``name -> {seed: value}``.

    ``NODE margin``, ``ANODE margin``, ``ResNet margin``: smallest label x output on |x| = ``radius``;
    ``NFE ratio (end)``: NODE / ANODE forward NFE per epoch over the last 10 % of epochs; ``NFE ratio (whole)``:
    the same over all of training; ``NODE sample accuracy``; ``NODE wrong fraction`` on the circle;
    ``NODE disk right fraction``: the largest fraction of a disk probe circle the NODE classifies correctly
    (0: no disk point on those circles is right, and the wrong-arc theorem's condition is not met there).
    """
    by = {(r.model_name, r.seed): r for r in runs}
    seeds = sorted({r.seed for r in runs})
    out = {f"{m} margin": {s: by[m, s].probes[radius].min_margin for s in seeds} for m in ANNULUS_MODELS}
    out["NFE ratio (end)"] = {s: by["NODE", s].final_nfe() / by["ANODE", s].final_nfe() for s in seeds}
    out["NFE ratio (whole)"] = {s: by["NODE", s].mean_nfe() / by["ANODE", s].mean_nfe() for s in seeds}
    out["NODE sample accuracy"] = {s: by["NODE", s].sample_accuracy for s in seeds}
    out["NODE wrong fraction"] = {s: by["NODE", s].probes[radius].misclassified for s in seeds}
    out["NODE disk right fraction"] = {
        s: max(
            (1.0 - by["NODE", s].probes[r].misclassified for r in DISK_PROBE_RADII if r in by["NODE", s].probes),
            default=float("nan"),
        )
        for s in seeds
    }
    return out


def annulus_parts(values: dict[str, dict[int, float]]) -> JudgedParts:
    """Judge the ``annulus`` row's three parts from :func:`annulus_values` (hand-made values work too).

    Margins: 95 % seed intervals against :data:`~.config.ANNULUS_MARGIN`. NFE: the median's interval of the
    end-of-training ratio against :data:`~.config.ANNULUS_NFE_RATIO` decides; the whole-training ratio is
    judged the same way as a subpart shown beside it, deciding nothing.
    """
    sub, iv, why = {}, {}, {}
    for name, above in (("NODE margin", False), ("ANODE margin", True), ("ResNet margin", True)):
        sub[name], iv[name], why[name] = judge(list(values[name].values()), C.ANNULUS_MARGIN, above=above)
    for name in ("NFE ratio (end)", "NFE ratio (whole)"):
        # "higher NFE" is strictly higher: a tie (ratio 1) counts against it, an interval ending on 1 is undecided
        sub[name], iv[name], why[name] = judge_median(list(values[name].values()), C.ANNULUS_NFE_RATIO, strict=True)
    parts = {
        "NODE wrong arc": sub["NODE margin"],
        "ANODE and ResNet positive margin": combine({k: sub[k] for k in ("ANODE margin", "ResNet margin")}),
        "NFE NODE > ANODE": sub["NFE ratio (end)"],
    }
    return JudgedParts(parts, iv, why, sub)


@dataclass(frozen=True)
class AnnulusFindings(Findings):
    """The annulus comparison over seeds: per-seed values (:func:`annulus_values`), the judged parts, and
    whether the wrong-arc theorem's condition (some disk point classified correctly) holds on each seed."""

    seeds: tuple[int, ...]
    values: dict[str, dict[int, float]]
    judged: JudgedParts
    radius: float = PROBE_RADIUS

    @classmethod
    def from_runs(cls, runs, radius: float = PROBE_RADIUS) -> AnnulusFindings:
        """Findings from :func:`~.studies.annulus_study`'s runs."""
        values = annulus_values(runs, radius)
        return cls(tuple(sorted(values["NODE margin"])), values, annulus_parts(values), radius)

    @property
    def verdict(self) -> ClaimVerdict:
        return self.judged.verdict

    @property
    def holds(self) -> bool:
        return self.verdict is ClaimVerdict.HOLDS

    @property
    def node_has_wrong_arc(self) -> dict[int, bool]:
        return {s: self.values["NODE margin"][s] < C.ANNULUS_MARGIN for s in self.seeds}

    @property
    def disk_condition(self) -> dict[int, bool]:
        """Seed -> some point of a disk probe circle is classified correctly by the NODE."""
        return {s: self.values["NODE disk right fraction"][s] > 0 for s in self.seeds}

    def measured(self) -> str:
        """The ledger's measured text."""
        v, iv, n = self.values, self.judged.intervals, len(self.seeds)
        acc, wrong = list(v["NODE sample accuracy"].values()), list(v["NODE wrong fraction"].values())
        missed = [s for s, ok in self.disk_condition.items() if not ok]
        return (
            f"{n} seeds, 95 % intervals: NODE min margin {_interval_text(iv['NODE margin'], '+.2f')} (wrong arc "
            f"on {sum(self.node_has_wrong_arc.values())}/{n} seeds, {min(wrong):.2%}-{max(wrong):.2%} of the circle, "
            f"sample acc {min(acc):.1%}-{max(acc):.1%}; a disk point classified right on "
            f"{n - len(missed)}/{n} seeds{f', not on seeds {missed}' if missed else ''}); ANODE "
            f"{_interval_text(iv['ANODE margin'], '+.2f')}, ResNet {_interval_text(iv['ResNet margin'], '+.2f')}; "
            f"NFE NODE/ANODE at the end {_interval_text(iv['NFE ratio (end)'], '.2f')} (decides), whole training "
            f"{_interval_text(iv['NFE ratio (whole)'], '.2f')}. " + parts_text(self.judged.parts)
        )

    def markdown(self) -> str:
        n, iv = len(self.seeds), self.judged.intervals
        k = sum(self.node_has_wrong_arc.values())
        ok = sum(self.disk_condition.values())
        sub = self.judged.subparts
        return "\n".join(
            [
                f"- **NODE wrong arc** on |x| = {self.radius:g}: {k} of {n} seeds; smallest margin "
                f"{_interval_text(iv['NODE margin'], '+.2f')} (95 % interval over seeds): "
                f"{self.judged.parts['NODE wrong arc'].value}.",
                f"- The theorem's condition, some point of the disk classified correctly (probed on |x| = "
                f"{', '.join(f'{r:g}' for r in DISK_PROBE_RADII)}), holds on {ok} of {n} seeds.",
                f"- **ANODE and ResNet** smallest margins {_interval_text(iv['ANODE margin'], '+.2f')} and "
                f"{_interval_text(iv['ResNet margin'], '+.2f')}: "
                f"{self.judged.parts['ANODE and ResNet positive margin'].value}.",
                f"- **Forward NFE NODE / ANODE** at the end of training: "
                f"{_interval_text(iv['NFE ratio (end)'], '.2f')} "
                f"({sub['NFE ratio (end)'].value}, the reading that decides); over the whole of training "
                f"{_interval_text(iv['NFE ratio (whole)'], '.2f')} ({sub['NFE ratio (whole)'].value}, shown "
                f"beside it).",
                f"\nVerdict: **{self.verdict.value}** ({n} seeds).",
            ]
        )


# --- h(x) = -x ------------------------------------------------------------------------------------


def negation_parts(resolved: dict[str, list[float]], floor: float, resolve_error: float = 0.0) -> JudgedParts:
    """Judge ``augmentation-2p`` from re-solved MSEs per seed (``{"1-D flow": [...], "R^2 flow + projection":
    [...]}``; hand-made values work) and the re-solve's measured error."""
    parts, iv, why = {}, {}, {}
    parts["1-D flow cannot"], why["1-D flow cannot"] = judge_bound(
        resolved["1-D flow"], floor, C.RESOLVE_SLACK, error=resolve_error
    )
    v, iv["R^2 flow fits"], why["R^2 flow fits"] = judge(
        resolved["R^2 flow + projection"], C.NEGATION_FIT_MSE, above=False
    )
    parts["flow on R^2 fits"] = v
    return JudgedParts(parts, iv, why)


@dataclass(frozen=True)
class NegationFindings(Findings):
    """The h(x) = -x fits over seeds: MSE per model as trained (``mse``) and re-solved (``mse_resolved``), the
    order-preserving ``floor`` of the grid, the re-solve's error and the judged parts."""

    seeds: tuple[int, ...]
    mse: dict[str, list[float]]
    mse_resolved: dict[str, list[float]]
    floor: float
    resolve_error: float
    judged: JudgedParts

    @classmethod
    def from_study(cls, study, n_points: int) -> NegationFindings:
        """Findings from :func:`~.studies.negation_study` (seed -> model -> FlowFit) on an ``n_points`` grid."""
        seeds = tuple(sorted(study))
        trained = {m: [study[s][m].mse for s in seeds] for m in NEGATION_MODELS}
        resolved = {m: [study[s][m].mse_resolved for s in seeds] for m in NEGATION_MODELS}
        floor = order_preserving_floor(n_points)
        error = max(study[s][m].resolve_error for s in seeds for m in NEGATION_MODELS)
        return cls(seeds, trained, resolved, floor, error, negation_parts(resolved, floor, error))

    @property
    def verdict(self) -> ClaimVerdict:
        return self.judged.verdict

    @property
    def holds(self) -> bool:
        return self.verdict is ClaimVerdict.HOLDS

    def table(self) -> str:
        """MSE ranges over seeds per model, as trained and re-solved (fixed width)."""
        lines = [
            f"order-preserving floor on this grid: {self.floor:.4f} (1/3 as n grows)",
            f"{'model':24s} {'MSE as trained':>17s} {'MSE re-solved':>17s}",
        ]
        for name in self.mse:
            t, r = self.mse[name], self.mse_resolved[name]
            fmt = ".4f" if min(r) > 0.01 else ".2g"  # the floor needs four digits, a fit two
            lines.append(f"{name:24s} {min(t):8{fmt}}-{max(t):<8{fmt}} {min(r):8{fmt}}-{max(r):<8{fmt}}")
        return "\n".join(lines)

    def markdown(self) -> str:
        r = self.mse_resolved
        return (
            f"Re-solved, the 1-D flow's MSE is {_range(r['1-D flow'], '.4f')} against the floor {self.floor:.4f}; "
            f"the flow on $\\mathbb{{R}}^2$ reaches {_range(r['R^2 flow + projection'], '.2g')} over "
            f"{len(self.seeds)} seeds. {parts_text(self.judged.parts)}; verdict **{self.verdict.value}**."
        )


# --- h(x) = |x| -----------------------------------------------------------------------------------


def abs_parts(
    linear2: list[float],
    linear1_resolved: list[float],
    linear1_trained: list[float],
    bound: float = C.ABS_MONOTONE_BOUND,
    *,
    resolve_error: float = 0.0,
    min_seeds: int = 3,
) -> JudgedParts:
    """Judge ``flow-readout-noninvertible`` from per-seed MSEs (hand-made values work).

    ``linear2``: flow on R^2 + linear, re-solved; ``linear1_resolved`` / ``linear1_trained``: the 1-D flow +
    linear, re-solved and as trained (RK4); ``resolve_error``: the re-solve's measured error. The fixed-step
    part holds when one seed goes below ``bound`` as trained, and is undecided (more seeds could show it) when
    none does or there are too few seeds.
    """
    parts, iv, why = {}, {}, {}
    v, iv["R^2 + linear"], why["R^2 + linear"] = judge(linear2, C.ABS_FIT_MSE, above=False, min_seeds=min_seeds)
    parts["flow on R^2 + linear approximates |x|"] = v
    v, why["1-D + linear re-solved"] = judge_bound(
        linear1_resolved, bound, C.RESOLVE_SLACK, error=resolve_error, min_seeds=min_seeds
    )
    parts["1-D flow + linear cannot"] = v
    iv["1-D + linear re-solved"] = seed_interval(linear1_resolved) if len(linear1_resolved) >= 2 else None
    n, k = len(linear1_trained), sum(m < bound for m in linear1_trained)
    rate = clopper_pearson(k, n) if n else (0.0, 1.0)
    if n < min_seeds:
        v, why["fixed step"] = ClaimVerdict.UNDECIDED, f"{n} seed(s): too few (need {min_seeds})"
    elif k >= 1:
        v, why["fixed step"] = ClaimVerdict.HOLDS, f"{k}/{n} seeds below {bound:.4f} as trained"
    else:
        v, why["fixed step"] = (
            ClaimVerdict.UNDECIDED,
            f"no seed of {n} went below {bound:.4f} at this training "
            "budget: that it can happen is neither shown nor refuted",
        )
    parts["fixed-step 1-D model learns a non-invertible map"] = v
    iv["1-D + linear as trained"] = seed_interval(linear1_trained) if n >= 2 else None
    return JudgedParts(parts, iv, why, below_bound=k, rate_interval=rate)


@dataclass(frozen=True)
class AbsFindings(Findings):
    """The h(x) = |x| fits over seeds: per-seed values (name -> list over ``seeds``), the monotone ``bound``,
    the re-solve's error, the RK4 step's invertibility constant, the training ``step_size`` and the parts."""

    seeds: tuple[int, ...]
    values: dict[str, list[float]]
    judged: JudgedParts
    bound: float
    resolve_error: float
    rk4_invertible_hlip: float
    step_size: float | None = None

    @classmethod
    def from_study(cls, study, step_size: float | None = None) -> AbsFindings:
        """Findings from :func:`~.studies.abs_study` (seed -> model -> FlowFit); ``step_size``: the RK4 step the
        models were trained with (for the text)."""
        seeds = tuple(sorted(study))
        one = [study[s]["1-D flow + linear"] for s in seeds]
        values = {
            "R^2 + linear re-solved": [study[s]["R^2 flow + linear"].mse_resolved for s in seeds],
            "R^2 + linear as trained": [study[s]["R^2 flow + linear"].mse for s in seeds],
            "1-D + linear re-solved": [f.mse_resolved for f in one],
            "1-D + linear as trained": [f.mse for f in one],
            "1-D min slope of the RK4 map": [f.min_slope for f in one],
            "1-D h*Lip(f)": [f.h_lip for f in one],
        }
        error = max(study[s][m].resolve_error for s in seeds for m in ABS_MODELS)
        judged = abs_parts(
            values["R^2 + linear re-solved"],
            values["1-D + linear re-solved"],
            values["1-D + linear as trained"],
            resolve_error=error,
        )
        return cls(seeds, values, judged, C.ABS_MONOTONE_BOUND, error, rk4_invertible_hlip(), step_size)

    @property
    def verdict(self) -> ClaimVerdict:
        return self.judged.verdict

    @property
    def folded(self) -> list[int]:
        """Indices (into ``seeds``) of the 1-D models that went below the monotone bound as trained."""
        return [i for i, t in enumerate(self.values["1-D + linear as trained"]) if t < self.bound]

    def table(self) -> str:
        """One line per seed: the R^2 model's re-solved MSE; the 1-D model's MSE as trained and re-solved, the
        smallest slope of its RK4 map and its h * Lip(f)."""
        v = self.values
        lines = [
            f"best monotone fit on this grid: MSE {self.bound:.4f}",
            f"{'seed':>4s} {'R^2+linear':>11s} | {'1-D+linear: as trained':>22s} {'re-solved':>10s} "
            f"{'min slope':>10s} {'h*Lip(f)':>9s}",
        ]
        rows = zip(
            self.seeds,
            v["R^2 + linear re-solved"],
            v["1-D + linear as trained"],
            v["1-D + linear re-solved"],
            v["1-D min slope of the RK4 map"],
            v["1-D h*Lip(f)"],
        )
        for s, two, trained, resolved, slope, hlip in rows:
            lines.append(f"{s:4d} {two:11.2g} | {trained:22.2g} {resolved:10.3f} {slope:+10.2f} {hlip:9.2f}")
        return "\n".join(lines)

    def markdown(self) -> str:
        v, folded = self.values, self.folded
        two = v["R^2 + linear re-solved"]
        step = "" if self.step_size is None else f" of {self.step_size:g}"
        text = (
            f"The flow on $\\mathbb{{R}}^2$ plus a linear readout fits $|x|$ to MSE {min(two):.1e}–{max(two):.1e} "
            f"when re-solved. The 1-D model, as trained with RK4 steps{step}, went **below** the best monotone "
            f"fit ({self.bound:.4f}) on {len(folded)} of {len(self.seeds)} seeds"
        )
        if not folded:
            return text + ": at this training budget no fixed-step model was seen to fold."
        trained, resolved, hlip = v["1-D + linear as trained"], v["1-D + linear re-solved"], v["1-D h*Lip(f)"]
        best = min(folded, key=lambda i: trained[i])
        lowest = min(resolved[i] for i in folded)
        monotone = (
            "the flow itself is monotone and stays above the bound"
            if lowest >= self.bound - C.RESOLVE_SLACK
            else "some re-solved flow is below the bound, so that re-solve is not accurate"
        )
        return text + (
            f" (best: MSE {trained[best]:.1e} on seed {self.seeds[best]}): a map below that bound is not monotone, "
            f"so the trained RK4 map is not invertible. Its $h \\cdot \\mathrm{{Lip}}(f)$ is "
            f"{min(hlip[i] for i in folded):.1f}–{max(hlip[i] for i in folded):.1f}, against the "
            f"{self.rk4_invertible_hlip:.2f} below which an RK4 step is sure to be invertible. The same fields solved "
            f"accurately give MSE {min(resolved[i] for i in folded):.3f}–{max(resolved[i] for i in folded):.3f}: "
            f"{monotone}."
        )
