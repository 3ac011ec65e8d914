"""The claims ledger: small reproductions of the course's published figures.

Each row is a function registered with :func:`claim`. It runs a measurement
(smaller in quick mode), and returns a :class:`Measurement` whose verdict is
computed by code from what was measured, never written by hand.

``nodecourse claims [--quick] [--only ID] [--json | --format text|markdown|html]``
runs the rows and prints one table (wrapped, never truncated), one JSON
document, or an escaped Markdown/HTML report; a lesson shows its own rows with
``show(["annulus"])``.

Rows live in ``nodecourse/lessons/lessonNN.py`` (one module per lesson);
:func:`load_rows` imports them, which registers their rows.
"""
from __future__ import annotations

import enum
import html
import importlib
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable


class Verdict(str, enum.Enum):
    HOLDS = "holds"
    DOES_NOT_HOLD = "does not hold"
    NOT_MEASURABLE = "not measurable at this scale"
    # Only the runner sets ERROR (a row that raised, with ``keep_going``); a row never returns it.
    ERROR = "error"


@dataclass
class Measurement:
    """What one row measured: a short human-readable figure, the verdict, raw numbers."""

    measured: str
    verdict: Verdict
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ClaimSpec:
    id: str
    claim: str
    source: str
    published: str
    lesson: str
    measure: Callable[[bool], Measurement]


@dataclass
class ClaimResult:
    id: str
    claim: str
    source: str
    published: str
    measured: str
    verdict: Verdict
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "claim": self.claim,
            "source": self.source,
            "published": self.published,
            "measured": self.measured,
            "verdict": self.verdict.value,
            "seconds": round(self.seconds, 2),
            "details": self.details,
        }


REGISTRY: dict[str, ClaimSpec] = {}

# Rows live in the lesson modules (nodecourse/lessons/lessonNN.py), found by
# name at run time: the ledger machinery never imports lesson code statically,
# and a new lesson's rows join the ledger without an edit here.
_ROW_PACKAGE = "nodecourse.lessons"


def claim(*, id: str, claim: str, source: str, published: str, lesson: str):
    """Register ``measure(quick: bool) -> Measurement`` as the ledger row ``id``."""

    def register(measure: Callable[[bool], Measurement]):
        if id in REGISTRY:
            raise ValueError(f"claim id {id!r} is registered twice")
        REGISTRY[id] = ClaimSpec(id, claim, source, published, lesson, measure)
        return measure

    return register


def load_rows() -> dict[str, ClaimSpec]:
    """Import every lesson module (in lesson order) so its rows register; return the registry."""
    import pkgutil

    package = importlib.import_module(_ROW_PACKAGE)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("lesson"):
            importlib.import_module(f"{_ROW_PACKAGE}.{info.name}")
    return REGISTRY


def run_claims(
    only: Iterable[str] | None = None, *, quick: bool = True, progress: bool = False,
    keep_going: bool = False,
) -> list[ClaimResult]:
    """Run the selected rows (all when ``only`` is None) and return their results in ledger order.

    ``progress`` shows a tqdm bar (on stderr) whose description names the row
    running. With ``keep_going`` a row that raises is recorded with verdict
    :attr:`Verdict.ERROR` (the exception in ``measured``) and the rest still run;
    without it the exception propagates.
    """
    registry = load_rows()
    ids = list(registry) if only is None else list(only)
    unknown = [i for i in ids if i not in registry]
    if unknown:
        raise ValueError(f"unknown claim id(s) {unknown}; valid ids: {sorted(registry)}")
    results = []
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(ids), desc="claims", unit="claim", file=sys.stderr)
    try:
        for cid in ids:
            if bar is not None:
                # Name the row running: rows take seconds to minutes, a bare counter says nothing.
                bar.set_description(f"claims: {cid}")
            spec = registry[cid]
            start = time.perf_counter()
            try:
                m = spec.measure(quick)
                if not isinstance(m.verdict, Verdict) or m.verdict is Verdict.ERROR:
                    raise TypeError(f"claim {cid!r} returned verdict {m.verdict!r}; expected one of "
                                    f"{[v for v in Verdict if v is not Verdict.ERROR]}")
            except Exception as exc:  # noqa: BLE001 - recorded, not swallowed: the verdict says error
                if not keep_going:
                    raise
                import traceback

                traceback.print_exc(file=sys.stderr)
                m = Measurement(f"the row raised {type(exc).__name__}: {exc}", Verdict.ERROR,
                                {"exception": type(exc).__name__})
            results.append(
                ClaimResult(
                    spec.id, spec.claim, spec.source, spec.published, m.measured, m.verdict,
                    time.perf_counter() - start, m.details,
                )
            )
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.set_description("claims")
            bar.close()
    return results


# --- reports ----------------------------------------------------------------------------------

COLUMNS = ("id", "claim", "source", "published", "measured", "verdict")


def _cells(r: ClaimResult) -> list[str]:
    return [r.id, r.claim, r.source, r.published, r.measured, r.verdict.value]


def _column_widths(rows: list[list[str]], total: int) -> list[int]:
    """Widths of the six columns for a table ``total`` characters wide.

    id and verdict get their longest entry (they are short); source gets up to
    22; claim, published and measured share the rest. Nothing is truncated: cells wrap.
    """
    longest = [max([len(h)] + [len(row[i]) for row in rows]) for i, h in enumerate(COLUMNS)]
    widths = [longest[0], 0, min(22, longest[2]), 0, 0, longest[5]]
    sep = 3 * (len(COLUMNS) - 1)
    free = max(48, total - sep - widths[0] - widths[2] - widths[5])
    # Water-filling: short columns take what they need, the rest share what is left equally.
    todo = sorted((1, 3, 4), key=lambda i: longest[i])
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
    import textwrap

    if width is None:
        width = max(80, shutil.get_terminal_size((140, 24)).columns)
    rows = [_cells(r) for r in results]
    widths = _column_widths(rows, width)

    def fmt(cells: list[str]) -> list[str]:
        wrapped = [textwrap.wrap(c, w, break_long_words=True, break_on_hyphens=False) or [""]
                   for c, w in zip(cells, widths)]
        height = max(len(w) for w in wrapped)
        return [" | ".join((col[k] if k < len(col) else "").ljust(w) for col, w in zip(wrapped, widths)).rstrip()
                for k in range(height)]

    rule = "-+-".join("-" * w for w in widths)
    lines = fmt(list(COLUMNS)) + [rule]
    for i, row in enumerate(rows):
        if i:
            lines.append(rule)
        lines += fmt(row)
    return "\n".join(lines)


def report_header(results: list[ClaimResult], *, quick: bool) -> dict[str, str]:
    """What a published ledger must say besides its rows: date (UTC), mode, machine, software, time."""
    import datetime
    import os
    import platform

    import torch

    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "mode": "quick" if quick else "full",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores, {platform.system()} {platform.release()}",
        "torch threads": str(torch.get_num_threads()),
        "software": f"Python {platform.python_version()}, torch {torch.__version__}",
        "total time": f"{sum(r.seconds for r in results):.0f} s for {len(results)} rows",
    }


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


def format_markdown(results: list[ClaimResult], header: dict[str, str] | None = None) -> str:
    """The ledger as a Markdown document (a GFM table), every cell escaped."""
    lines = ["# Claims ledger", ""]
    for key, value in (header or {}).items():
        lines.append(f"- {escape_markdown_cell(key)}: {escape_markdown_cell(value)}")
    if header:
        lines.append("")
    lines.append("| " + " | ".join(COLUMNS) + " |")
    lines.append("|" + "|".join("---" for _ in COLUMNS) + "|")
    for r in results:
        cells = [escape_markdown_cell(c) for c in _cells(r)]
        cells[-1] = f"**{cells[-1]}**"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def html_table(results: list[ClaimResult], columns: Iterable[str] = COLUMNS) -> str:
    """A ``<table>`` of the rows, every cell escaped with :func:`html.escape`."""
    columns = list(columns)
    index = {c: i for i, c in enumerate(COLUMNS)}
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for r in results:
        cells = _cells(r)
        tds = []
        for c in columns:
            text = html.escape(cells[index[c]])
            tds.append(f'<td class="verdict {r.verdict.name.lower()}"><b>{text}</b></td>' if c == "verdict"
                       else f"<td>{text}</td>")
        body.append("<tr>" + "".join(tds) + "</tr>")
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>"


def format_html(results: list[ClaimResult], header: dict[str, str] | None = None) -> str:
    """The ledger as a self-contained HTML page for instructors, every cell escaped."""
    meta = "".join(f"<li>{html.escape(k)}: {html.escape(v)}</li>" for k, v in (header or {}).items())
    style = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #bbb;padding:4px 8px;vertical-align:top;text-align:left}"
             ".holds{background:#e6f4ea}.does_not_hold{background:#fce8e6}"
             ".not_measurable{background:#fef7e0}.error{background:#f4cccc}")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>nodecourse claims ledger</title>"
        f"<style>{style}</style></head>\n<body>\n<h1>Claims ledger</h1>\n<ul>{meta}</ul>\n"
        + html_table(results) + "\n</body>\n</html>\n"
    )


def show(ids: Iterable[str], *, quick: bool | None = None):
    """Run rows and display them in a notebook as a small table (pandas-free HTML, escaped)."""
    from nodecourse.config import quick_mode

    results = run_claims(ids, quick=quick_mode() if quick is None else quick)
    try:
        from IPython.display import HTML, display

        display(HTML(html_table(results, columns=("claim", "source", "published", "measured", "verdict"))))
    except ImportError:
        print(format_table(results))
    return results
