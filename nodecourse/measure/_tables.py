"""The one table formatter of the package: plain text for terminals, Markdown (GFM) for documents,
and :func:`json_safe` for the JSON reports.

Every report (solver-work logs, tolerance sweeps, the grader's result, the claims ledger) lays
its rows out here, so column widths, wrapping and rules behave the same everywhere.
"""

from __future__ import annotations

import math
import textwrap
from typing import Any, Sequence

__all__ = ["json_safe", "markdown_table", "text_table"]


def json_safe(value: Any) -> Any:
    """``value`` with tensors, numpy values, enums and non-finite floats made JSON-safe (NaN and
    infinities become None: ``json.dumps`` would otherwise write ``NaN``, which is not JSON)."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "tolist"):  # numpy arrays and scalars, torch tensors
        return json_safe(value.tolist())
    if hasattr(value, "value") and isinstance(value.value, (str, int, float)):
        return value.value  # enums
    return str(value)


def text_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    *,
    widths: Sequence[int] | None = None,
    rule_between_rows: bool = False,
) -> str:
    """Rows as plain text: cells joined by ``" | "``, a ``-+-`` rule under the header.

    ``widths`` (one per column; default: each column's longest cell) are the widths cells are
    padded to; a longer cell wraps onto further lines of the same row, so nothing is cut.
    ``rule_between_rows`` puts a rule between rows too (useful when cells wrap).
    """
    cells = [[str(c) for c in row] for row in rows]
    if widths is None:
        widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]

    def lines_of(row: Sequence[str]) -> list[str]:
        wrapped = [
            textwrap.wrap(c, w, break_long_words=True, break_on_hyphens=False) or [""] if len(c) > w else [c]
            for c, w in zip(row, widths)
        ]
        height = max(len(col) for col in wrapped)
        return [
            " | ".join((col[k] if k < len(col) else "").ljust(w) for col, w in zip(wrapped, widths)).rstrip()
            for k in range(height)
        ]

    rule = "-+-".join("-" * w for w in widths)
    out = lines_of([str(h) for h in headers]) + [rule]
    for i, row in enumerate(cells):
        if i and rule_between_rows:
            out.append(rule)
        out += lines_of(row)
    return "\n".join(out)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Rows as a GFM table (cells as given: escape them first where they may hold ``|``)."""
    lines = ["| " + " | ".join(str(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
