"""The ledger as a plain-text table for a terminal (:func:`format_table`): cells wrap, nothing
is cut."""

from __future__ import annotations

from nodecourse.claims._columns import COLUMNS, cells
from nodecourse.claims._registry import ClaimResult
from nodecourse.measure import text_table

__all__ = ["format_table"]

# Columns sized to their longest entry (short ones), capped ones, and the rest that share what is left.
_FIXED = ("id", "verdict")
_CAPPED = {"source": 22}


def _column_widths(rows: list[list[str]], total: int) -> list[int]:
    """Widths of the columns for a table ``total`` characters wide.

    id and verdict get their longest entry (they are short); source gets up to 22; the other
    columns share the rest. Nothing is truncated: cells wrap.
    """
    longest = [max([len(h)] + [len(row[i]) for row in rows]) for i, h in enumerate(COLUMNS)]
    widths = [0] * len(COLUMNS)
    for i, name in enumerate(COLUMNS):
        if name in _FIXED:
            widths[i] = longest[i]
        elif name in _CAPPED:
            widths[i] = min(_CAPPED[name], longest[i])
    sep = 3 * (len(COLUMNS) - 1)
    sharing = [i for i, name in enumerate(COLUMNS) if name not in _FIXED and name not in _CAPPED]
    free = max(12 * len(sharing), total - sep - sum(widths))
    # Water-filling: short columns take what they need, the rest share what is left equally.
    todo = sorted(sharing, key=lambda i: longest[i])
    for k, i in enumerate(todo):
        share = free // (len(todo) - k)
        widths[i] = max(min(longest[i], 8), min(longest[i], share))
        free -= widths[i]
    return widths


def format_table(results: list[ClaimResult], width: int | None = None) -> str:
    """A plain-text table (id, claim, source, published, measured, verdict) ``width`` characters wide.

    Long cells wrap onto further lines of the same row (rows are separated by a
    rule), so no text is cut; ``width`` defaults to the terminal's (at least 80; 140 when not a terminal).
    """
    import shutil

    if width is None:
        width = max(80, shutil.get_terminal_size((140, 24)).columns)
    rows = [cells(r) for r in results]
    return text_table(COLUMNS, rows, widths=_column_widths(rows, width), rule_between_rows=True)
