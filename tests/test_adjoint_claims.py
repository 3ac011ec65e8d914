"""Ledger rows of lesson 4 in quick mode: each computes its verdict from what it measured."""
from __future__ import annotations

import pytest

from nodecourse.claims import Verdict, load_rows, run_claims


def test_lesson04_rows_are_registered():
    rows = load_rows()
    for cid in ("reversal-steps", "adjoint-memory", "adjoint-gradient-error"):
        assert cid in rows and rows[cid].lesson == "04"


@pytest.mark.slow
@pytest.mark.parametrize("cid,needle", [
    ("reversal-steps", "forward Euler 497430 steps"),
    ("adjoint-memory", "peak MiB backprop"),
    ("adjoint-gradient-error", "checkpoint <="),
])
def test_lesson04_row_holds_in_quick_mode(cid, needle):
    (res,) = run_claims([cid], quick=True)
    assert needle in res.measured, res.measured
    assert res.verdict is Verdict.HOLDS, res.measured
