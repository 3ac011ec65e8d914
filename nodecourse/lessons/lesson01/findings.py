"""What lesson 1's comparison shows, judged: agreement with Euler, and a baseline that tells solvers apart."""

from __future__ import annotations

from dataclasses import dataclass

from nodecourse.claims import ClaimVerdict
from nodecourse.lessons.lesson01.config import BASELINE_FACTOR
from nodecourse.lessons.lesson01.studies import ResnetEulerComparison
from nodecourse.lessons.study import Findings

__all__ = ["ResnetEulerFindings"]


@dataclass(frozen=True)
class ResnetEulerFindings(Findings):
    """The comparisons (one per dtype) and the verdict of "a residual update is one Euler step".

    HOLDS: every dtype agrees within its tolerance and the midpoint baseline differs by more than
    ``BASELINE_FACTOR`` x the tolerance; DOES_NOT_HOLD: the baseline differs but Euler does not agree;
    NOT_MEASURABLE: the baseline does not differ (the comparison cannot tell solvers apart).
    """

    runs: tuple[ResnetEulerComparison, ...]

    @classmethod
    def from_runs(cls, runs) -> ResnetEulerFindings:
        """Findings from comparisons (:func:`~nodecourse.lessons.lesson01.studies.resnet_vs_euler` results)."""
        return cls(tuple(runs))

    @property
    def agree(self) -> bool:
        return all(r.agrees for r in self.runs)

    @property
    def baseline_differs(self) -> bool:
        return all(r.max_diff_midpoint > BASELINE_FACTOR * r.tolerance for r in self.runs)

    @property
    def verdict(self) -> ClaimVerdict:
        if not self.baseline_differs:
            return ClaimVerdict.NOT_MEASURABLE
        return ClaimVerdict.HOLDS if self.agree else ClaimVerdict.DOES_NOT_HOLD

    def measured(self) -> str:
        """One line per dtype, for the ledger's measured column."""
        return "; ".join(
            f"{r.dtype}: |ResNet − Euler| = {r.max_diff_euler:.1e} (midpoint baseline {r.max_diff_midpoint:.1e})"
            for r in self.runs
        )

    def markdown(self) -> str:
        lines = [
            f"- {r.dtype}, {r.n_blocks} blocks: max |ResNet − Euler| = {r.max_diff_euler:.1e} "
            f"(tolerance {r.tolerance:.1e}, {'within' if r.agrees else 'outside'} it), midpoint baseline "
            f"{r.max_diff_midpoint:.1e}"
            for r in self.runs
        ]
        return "\n".join(lines + [f"\nVerdict: **{self.verdict.value}**."])
