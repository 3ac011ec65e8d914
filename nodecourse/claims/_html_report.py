"""The ledger as HTML: a ``<table>`` for a notebook (:func:`html_table`) and a page for
instructors (:func:`format_html`), every cell escaped."""

from __future__ import annotations

import html
from typing import Iterable

from nodecourse.claims._columns import COLUMNS, cells
from nodecourse.claims._registry import ClaimResult

__all__ = ["format_html", "html_table"]


def html_table(results: list[ClaimResult], columns: Iterable[str] = COLUMNS) -> str:
    """A ``<table>`` of the rows, every cell escaped with :func:`html.escape`."""
    columns = list(columns)
    index = {c: i for i, c in enumerate(COLUMNS)}
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for r in results:
        row = cells(r)
        tds = []
        for c in columns:
            text = html.escape(row[index[c]])
            tds.append(
                f'<td class="verdict {r.verdict.name.lower()}"><b>{text}</b></td>'
                if c == "verdict"
                else f"<td>{text}</td>"
            )
        body.append("<tr>" + "".join(tds) + "</tr>")
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>"


def format_html(results: list[ClaimResult], header: dict[str, str] | None = None) -> str:
    """The ledger as a self-contained HTML page for instructors, every cell escaped."""
    meta = "".join(f"<li>{html.escape(k)}: {html.escape(v)}</li>" for k, v in (header or {}).items())
    style = (
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #bbb;padding:4px 8px;vertical-align:top;text-align:left}"
        ".holds{background:#e6f4ea}.holds_in_part{background:#eef3d9}.does_not_hold{background:#fce8e6}"
        ".not_measurable{background:#fef7e0}.error{background:#f4cccc}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>nodecourse claims ledger</title>'
        f"<style>{style}</style></head>\n<body>\n<h1>Claims ledger</h1>\n<ul>{meta}</ul>\n"
        + html_table(results)
        + "\n</body>\n</html>\n"
    )
