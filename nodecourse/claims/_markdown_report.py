"""The ledger as a Markdown document (:func:`format_markdown`), every cell escaped."""

from __future__ import annotations

import html
import re

from nodecourse.claims._columns import COLUMNS, cells, verdict_counts
from nodecourse.claims._registry import ClaimResult
from nodecourse.measure import markdown_table

__all__ = ["escape_markdown_cell", "format_markdown"]

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]|])")


def escape_markdown_cell(text: str) -> str:
    """Text safe inside one cell of a Markdown (GFM) table.

    Pipes and Markdown's emphasis/code/link characters are backslash-escaped,
    ``<``, ``>`` and ``&`` become HTML entities (Markdown passes raw HTML through),
    and newlines become ``<br>``.
    """
    text = html.escape(str(text), quote=False)
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", text)
    return "<br>".join(text.splitlines()) if "\n" in text else text


def format_markdown(
    results: list[ClaimResult], header: dict[str, str] | None = None, *, title: str | None = "# Claims ledger"
) -> str:
    """The ledger as a Markdown document (a GFM table), every cell escaped.

    ``title=None`` leaves out the heading (for a table placed inside another document).
    """
    lines = [title, ""] if title else []
    for key, value in (header or {}).items():
        lines.append(f"- {escape_markdown_cell(key)}: {escape_markdown_cell(value)}")
    if header:
        lines.append(f"- verdicts: {verdict_counts(results)}")
        lines.append("")
    rows = []
    for r in results:
        row = [escape_markdown_cell(c) for c in cells(r)]
        row[-1] = f"**{row[-1]}**"
        rows.append(row)
    lines.append(markdown_table(COLUMNS, rows))
    return "\n".join(lines) + "\n"
