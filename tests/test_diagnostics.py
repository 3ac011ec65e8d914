"""Tolerance sweep and solver-work log."""

from __future__ import annotations

import math

import pytest
import torch

from nodecourse import odeint
from nodecourse.measure import SolverWorkLog, SweepRow, rows_to_columns, rows_to_markdown, tolerance_sweep

F64 = torch.float64
f = lambda t, y: torch.cos(t) * y  # y = exp(sin t)
Y0 = torch.ones(2, dtype=F64)
T = torch.linspace(0.0, 3.0, 4, dtype=F64)


def test_sweep_error_falls_and_work_rises_with_tighter_rtol():
    exact = torch.exp(torch.sin(T))[:, None].expand(4, 2)
    rows = tolerance_sweep(f, Y0, T, [1e-3, 1e-5, 1e-7], reference=exact, repeats=2)
    assert [r.rtol for r in rows] == [1e-3, 1e-5, 1e-7] and all(isinstance(r, SweepRow) for r in rows)
    assert rows[0].max_error > rows[1].max_error > rows[2].max_error
    assert rows[0].nfe < rows[1].nfe < rows[2].nfe
    assert all(r.status == "SUCCESS" and r.seconds > 0 and r.atol == r.rtol / 100 for r in rows)
    # the computed reference gives the same errors to within the reference's own error
    auto = tolerance_sweep(f, Y0, T, [1e-3, 1e-5, 1e-7])
    for a, b in zip(rows, auto):
        assert math.isclose(a.max_error, b.max_error, rel_tol=1e-2, abs_tol=1e-9)


def test_sweep_other_backend_and_fixed_atol():
    rows = tolerance_sweep(f, Y0, T, [1e-4], atol=1e-9, backend="torchdiffeq", method="bosh3")
    assert rows[0].atol == 1e-9 and rows[0].nfe > 0 and rows[0].status == "SUCCESS"


@pytest.mark.parametrize(
    "kwargs,pattern",
    [
        ({"rtols": []}, r"rtols=\[\] must be a non-empty list"),
        ({"rtols": [1e-3, -1.0]}, r"rtols contains -1.0"),
        ({"rtols": [1e-3], "repeats": 0}, r"repeats=0 must be an int >= 1"),
        ({"rtols": [1e-3], "method": "rk4"}, r"method='rk4' is fixed-step"),
        ({"rtols": [1e-3], "method": "ode45"}, r"method='ode45' is not a registered solver"),
        ({"rtols": [1e-3], "atol": 0.0}, r"atol=0.0 must be a number > 0"),
        ({"rtols": [1e-3], "reference": torch.zeros(3, 2)}, r"reference has shape \(3, 2\).*\(4, 2\)"),
    ],
)
def test_sweep_bad_arguments(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        tolerance_sweep(f, Y0, T, **kwargs)


def test_columns_and_table():
    rows = [
        SweepRow(1e-3, 1e-5, 2e-4, 38, 5, 1, 0.01, "SUCCESS"),
        SweepRow(1e-6, 1e-8, 3e-7, 80, 11, 0, 0.02, "SUCCESS"),
    ]
    cols = rows_to_columns(rows)
    assert cols["nfe"] == [38, 80] and list(cols)[0] == "rtol"
    table = rows_to_markdown(rows).splitlines()
    assert table[0].startswith("| rtol | atol | max_error") and len(table) == 4 and "| 38 |" in table[2]
    assert rows_to_markdown([]) == "(no rows)"


def test_work_log_records_every_solve_inside_only():
    odeint(f, Y0, T)  # outside: not recorded
    with SolverWorkLog() as log:
        a = odeint(f, Y0, T, rtol=1e-5, atol=1e-7)
        b = odeint(f, Y0, T, method="rk4", step_size=0.1)
        c = odeint(lambda t, y: y**2, Y0, torch.tensor([0.0, 2.0], dtype=F64), throw=False)
        with pytest.raises(Exception):
            odeint(lambda t, y: y**2, Y0, torch.tensor([0.0, 2.0], dtype=F64))
    odeint(f, Y0, T)  # after: not recorded
    assert log.n_solves == 4
    assert [r.method for r in log.records] == ["dopri5", "rk4", "dopri5", "dopri5"]
    assert log.records[0].nfe == a.stats["nfe"] and log.records[1].nfe == b.stats["nfe"]
    assert log.records[2].status == c.status.name == "STEP_UNDERFLOW"
    assert log.total_nfe == sum(r.nfe for r in log.records) and len(log.failures) == 2
    totals = log.totals()
    assert totals["solves"] == 4 and totals["failures"] == 2
    summary = log.summary()
    assert "4 solves" in summary and "rk4 [nodecourse] step_size=0.1" in summary and "2 failed" in summary
    assert log.table().count("\n") == 5 and len(log.as_dicts()) == 4


def test_work_logs_nest_and_are_not_reentrant():
    with SolverWorkLog() as outer:
        odeint(f, Y0, T)
        with SolverWorkLog() as inner:
            odeint(f, Y0, T)
        with pytest.raises(RuntimeError, match="already active"):
            outer.__enter__()
    assert outer.n_solves == 2 and inner.n_solves == 1
    assert SolverWorkLog().summary() == "SolverWorkLog: no odeint calls recorded"
