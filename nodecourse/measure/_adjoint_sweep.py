"""The course's adjoint beside torchdiffeq's ``odeint_adjoint``, setting by setting.

For each setting (problem, dtype, rtol, atol, horizon T) both adjoints differentiate the same solve of
:class:`~nodecourse.measure.DecayFeed` (``L = z2(T)``; gradient with respect to
``(z10, z20, lam, theta, T)``) and each gradient is compared with the analytic one
(:func:`~nodecourse.measure.analytic_gradient`, float64). The problems are lesson 4's:

- ``decay-10``: ``lam = -10`` on the axes (lesson 4's gradient-error sweep);
- ``decay-10-rotated``: the same system rotated by 0.7 rad (lesson 4's rotated probe);
- ``decay-1``: ``lam = -1`` (a mild problem, the gradient table's default).

The criterion, declared here before anything was measured (:func:`judge`):

- wherever torchdiffeq's adjoint returns a gradient, the course's returns one too
  (``gradient="adjoint"`` refuses up front, with a ``ValueError`` naming the fix, tolerances the dtype
  cannot resolve, e.g. rtol 1e-8 with atol below 1.2e-8 in float32: such a setting is ``"refused"``,
  reported, and not counted as a failed solve);
- where both return one, the course's relative gradient error is at most ``ERROR_FACTOR`` times
  torchdiffeq's, or at most ``ERROR_FLOOR_FACTOR * max(rtol, eps)`` (``eps`` of the dtype): two adjoints
  that take different steps differ in their error by a small factor, and below 100 x the tolerance
  both are at what the tolerance promises.

``benchmarks/adjoint_vs_torchdiffeq_sweep.py`` runs the whole grid (:data:`FULL_GRID`) and prints the
table; ``tests/test_adjoint_vs_torchdiffeq.py`` runs a sub-grid (:data:`TEST_GRID`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from nodecourse.measure._gradient_check import gradient_table

#: Declared before measuring: the course's error may be this many times torchdiffeq's ...
ERROR_FACTOR = 10.0
#: ... or at most this many times max(rtol, eps of the dtype).
ERROR_FLOOR_FACTOR = 100.0

#: The step budget of each of the course's solves (torchdiffeq's has none): a backward solve that grinds
#: on rejected steps ends MAX_STEPS after about half a minute instead of several.
MAX_STEPS = 20_000

#: name -> (lam, angle)
PROBLEMS = {"decay-10": (-10.0, 0.0), "decay-10-rotated": (-10.0, 0.7), "decay-1": (-1.0, 0.0)}
DTYPES = {"float64": torch.float64, "float32": torch.float32}


@dataclass(frozen=True)
class SweepGrid:
    """The settings of a sweep: every combination of the five tuples."""

    problems: tuple[str, ...]
    dtypes: tuple[str, ...]
    rtols: tuple[float, ...]
    atols: tuple[float, ...]
    horizons: tuple[float, ...]

    def settings(self):
        """``(problem, dtype, rtol, atol, T)`` tuples, in a fixed order."""
        for problem in self.problems:
            for dtype in self.dtypes:
                for rtol in self.rtols:
                    for atol in self.atols:
                        for T in self.horizons:
                            yield problem, dtype, rtol, atol, T


FULL_GRID = SweepGrid(
    problems=tuple(PROBLEMS),
    dtypes=("float64", "float32"),
    rtols=(1e-3, 1e-4, 1e-6, 1e-8),
    atols=(1e-20, 1e-12, 1e-6),
    horizons=(0.5, 1.0, 2.0, 3.0, 5.0),  # lesson 4's quick list (0.5, 1.5, 3) spread, and a longer one
)
#: The test's sub-grid: lesson 4's setting (rtol 1e-4, atol 1e-20) and the corners of the full grid, in
#: float64 on both lesson-4 problems; float32 in :data:`TEST_GRID_FLOAT32`.
TEST_GRID = SweepGrid(
    problems=("decay-10", "decay-10-rotated"),
    dtypes=("float64",),
    rtols=(1e-3, 1e-4, 1e-8),
    atols=(1e-20, 1e-6),
    horizons=(0.5, 3.0),
)
TEST_GRID_FLOAT32 = SweepGrid(
    problems=("decay-10",), dtypes=("float32",), rtols=(1e-3, 1e-4, 1e-8), atols=(1e-20, 1e-6), horizons=(0.5, 3.0)
)


@dataclass
class SweepRow:
    """One setting: each adjoint's outcome (``"ok"``, ``"failed"`` or ``"refused"``), its relative
    gradient error against the analytic gradient (inf when it gave none) and why it gave none."""

    problem: str
    dtype: str
    rtol: float
    atol: float
    T: float
    ours: str
    ours_error: float
    theirs: str
    theirs_error: float
    ours_note: str = ""
    theirs_note: str = ""

    @property
    def allowed_error(self) -> float:
        """The criterion's bound on the course's error (see the module docstring)."""
        eps = torch.finfo(DTYPES[self.dtype]).eps
        return max(ERROR_FACTOR * self.theirs_error, ERROR_FLOOR_FACTOR * max(self.rtol, eps))


def _outcome(row) -> str:
    if row.status == "failed" and "can resolve" in row.note:
        return "refused"
    return "ok" if row.status == "success" and math.isfinite(row.rel_error) else "failed"


def measure(problem: str, dtype: str, rtol: float, atol: float, T: float, max_steps: int = MAX_STEPS) -> SweepRow:
    """Both adjoints on one setting (dopri5, the same tolerances forwards and backwards; ``max_steps``
    for each of the course's solves)."""
    lam, angle = PROBLEMS[problem]
    table = gradient_table(
        lam,
        T,
        rtol=rtol,
        atol=atol,
        routes=("adjoint", "torchdiffeq_adjoint"),
        max_steps=max_steps,
        dtype=DTYPES[dtype],
        angle=angle,
    )
    ours, theirs = table.row("adjoint"), table.row("torchdiffeq_adjoint")
    return SweepRow(
        problem,
        dtype,
        rtol,
        atol,
        T,
        _outcome(ours),
        ours.rel_error,
        _outcome(theirs),
        theirs.rel_error,
        ours.note,
        theirs.note,
    )


def sweep(grid: SweepGrid = FULL_GRID, progress: bool = False) -> list[SweepRow]:
    """:func:`measure` at every setting of ``grid``."""
    settings = list(grid.settings())
    if progress:
        from tqdm.auto import tqdm

        settings = tqdm(settings, desc="adjoint sweep")
    return [measure(*s) for s in settings]


def judge(row: SweepRow) -> str:
    """``""`` when the row meets the criterion, else the reason it does not."""
    if row.theirs != "ok" or row.ours == "refused":
        return ""
    if row.ours != "ok":
        return f"torchdiffeq's adjoint succeeds, ours {row.ours}: {row.ours_note}"
    if not row.ours_error <= row.allowed_error:
        return (
            f"our error {row.ours_error:.2e} exceeds max({ERROR_FACTOR:g} x torchdiffeq's {row.theirs_error:.2e}, "
            f"{ERROR_FLOOR_FACTOR:g} x max(rtol, eps)) = {row.allowed_error:.2e}"
        )
    return ""


def table_text(rows: list[SweepRow]) -> str:
    """The rows as a markdown table (setting, each adjoint's outcome and error, the criterion)."""
    head = "| problem | dtype | rtol | atol | T | ours | our error | torchdiffeq | its error | criterion |"
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        verdict = judge(r) or ("met" if r.theirs == "ok" and r.ours == "ok" else "-")
        lines.append(
            f"| {r.problem} | {r.dtype} | {r.rtol:g} | {r.atol:g} | {r.T:g} | {r.ours} | {r.ours_error:.2e} | "
            f"{r.theirs} | {r.theirs_error:.2e} | {verdict} |"
        )
    return "\n".join(lines)


def summary(rows: list[SweepRow]) -> str:
    """Counts of each (ours, theirs) outcome pair, the rows that miss the criterion, and the largest ratio
    of our error to torchdiffeq's where both succeeded."""
    pairs: dict[tuple[str, str], int] = {}
    for r in rows:
        pairs[r.ours, r.theirs] = pairs.get((r.ours, r.theirs), 0) + 1
    both = [r for r in rows if r.ours == r.theirs == "ok" and r.theirs_error > 0]
    ratios = sorted(r.ours_error / r.theirs_error for r in both)
    misses = [r for r in rows if judge(r)]
    lines = [f"{len(rows)} settings; (ours, torchdiffeq's) outcomes:"]
    lines += [f"  ours {o:8s} torchdiffeq {t:8s}: {n}" for (o, t), n in sorted(pairs.items())]
    if ratios:
        lines.append(
            f"our error / torchdiffeq's where both succeed: median {ratios[len(ratios) // 2]:.3g}, "
            f"largest {ratios[-1]:.3g} ({len(ratios)} settings)"
        )
    lines.append(f"settings that miss the criterion: {len(misses)}")
    lines += [f"  {r.problem} {r.dtype} rtol {r.rtol:g} atol {r.atol:g} T {r.T:g}: {judge(r)}" for r in misses]
    return "\n".join(lines)
