"""The ledger's table inside the README: the markers around it, replacing what is between them,
and reading the verdicts back."""

from __future__ import annotations

import re

__all__ = ["LEDGER_BEGIN", "LEDGER_END", "replace_between_markers", "verdicts_in_markdown"]

LEDGER_BEGIN = "<!-- ledger:begin (written by `nodecourse claims --quick --format markdown --update README.md`) -->"
LEDGER_END = "<!-- ledger:end -->"


def replace_between_markers(text: str, block: str) -> str:
    """``text`` with everything between :data:`LEDGER_BEGIN` and :data:`LEDGER_END` replaced by ``block``."""
    begin, end = text.find(LEDGER_BEGIN), text.find(LEDGER_END)
    if begin < 0 or end < begin:
        raise ValueError(
            f"the file has no ledger markers: add the lines\n{LEDGER_BEGIN}\n{LEDGER_END}\nwhere the table belongs"
        )
    return text[: begin + len(LEDGER_BEGIN)] + "\n" + block.rstrip("\n") + "\n" + text[end:]


_VERDICT_CELL = re.compile(r"^\|\s*([a-z0-9-]+)\s*\|.*\|\s*\*\*([a-z0-9 ()]+)\*\*\s*\|\s*$")


def verdicts_in_markdown(text: str) -> dict[str, str]:
    """``{id: verdict}`` read back from a table written by
    :func:`~nodecourse.claims._markdown_report.format_markdown` (between the README's markers when
    they are there)."""
    begin, end = text.find(LEDGER_BEGIN), text.find(LEDGER_END)
    if begin >= 0 and end > begin:
        text = text[begin:end]
    out = {}
    for line in text.splitlines():
        m = _VERDICT_CELL.match(line)
        if m:
            out[m.group(1)] = m.group(2)
    return out
