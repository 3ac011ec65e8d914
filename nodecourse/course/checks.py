"""The check helper that exercise notebooks call after each task.

A check cell looks like::

    # NBVAL_CHECK_OUTPUT
    from nodecourse.course.checks import check
    check("euler-step", torch.allclose(y1, expected), f"max error {err:.1e}")

On success it prints one line, ``PASS <name>``, which is the cell's expected
output (nbval compares it). On failure it raises :class:`CheckFailed`, so the
cell errors and the grader reports the reason.
"""
from __future__ import annotations


class CheckFailed(AssertionError):
    """A check in an exercise notebook did not pass."""


def check(name: str, passed: bool, detail: str = "") -> None:
    """Print ``PASS name`` when ``passed`` is true, else raise :class:`CheckFailed` with ``detail``."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name={name!r}: give each check a short non-empty name")
    if bool(passed):
        print(f"PASS {name}")
        return
    raise CheckFailed(f"FAIL {name}" + (f": {detail}" if detail else ""))
