"""The claims ledger: small reproductions of the course's published figures.

Each row is a function registered with :func:`claim` together with its
:class:`Threshold`, declared in code before anything is measured: the published
figure itself (kind ``published``) or, where nothing is published, the course's
own (kind ``course``, with the reason). The row runs a measurement (smaller in
quick mode) and returns a :class:`Measurement` whose verdict is computed by code
from what was measured, never written by hand. Verdicts that rest on several
seeds compare an interval over the seeds with the threshold (:func:`judge`), so
floating-point noise between machines cannot flip them; a two-part claim is
judged on both parts (:func:`combine`).

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

from nodecourse.measure.tables import markdown_table, text_table

class Verdict(str, enum.Enum):
    HOLDS = "holds"
    # Two-part claims where one part holds and the other does not (or cannot be decided), and
    # claims whose reasonable readings disagree.
    HOLDS_IN_PART = "holds in part"
    DOES_NOT_HOLD = "does not hold"
    NOT_MEASURABLE = "not measurable at this scale"
    # Only the runner sets ERROR (a row that raised, with ``keep_going``); a row never returns it.
    ERROR = "error"


THRESHOLD_KINDS = ("published", "course")


@dataclass(frozen=True)
class Threshold:
    """What a row is judged against, declared with the row (before anything runs).

    ``text`` says the test in words (e.g. "growth >= 3x: last tenth of training over the first
    tenth"); ``kind`` is ``"published"`` (the published figure itself) or ``"course"`` (nothing is
    published: the course's own, and ``why`` says why); ``value`` is the number the code compares
    with, where there is one.
    """

    text: str
    kind: str
    why: str = ""
    value: float | None = None

    def __post_init__(self):
        if self.kind not in THRESHOLD_KINDS:
            raise ValueError(f"Threshold kind={self.kind!r}: expected one of {THRESHOLD_KINDS}")
        if not self.text.strip():
            raise ValueError("Threshold text is empty: say what the row is judged against")
        if self.kind == "course" and not self.why.strip():
            raise ValueError(f"Threshold {self.text!r} is the course's own (kind='course'): say why in `why`")

    def describe(self) -> str:
        """One line for a report: the test, whose threshold it is, and (for the course's own) why."""
        whose = "published figure" if self.kind == "published" else "course threshold"
        return f"{self.text} ({whose}" + (f": {self.why})" if self.why else ")")


@dataclass(frozen=True)
class Interval:
    """A spread over seeds: ``mean`` ± ``half_width`` (Student t, 95 %), with min, max and n."""

    mean: float
    half_width: float
    lo: float
    hi: float
    minimum: float
    maximum: float
    n: int


def seed_interval(values: Iterable[float]) -> Interval:
    """The 95 % Student-t interval of the mean of ``values`` (one per seed; at least two)."""
    import math
    import statistics

    from scipy import stats

    vals = [float(v) for v in values]
    if len(vals) < 2:
        raise ValueError(f"seed_interval needs at least two values (one per seed), got {len(vals)}")
    mean = statistics.fmean(vals)
    half = float(stats.t.ppf(0.975, len(vals) - 1)) * statistics.stdev(vals) / math.sqrt(len(vals))
    return Interval(mean, half, mean - half, mean + half, min(vals), max(vals), len(vals))


def judge(values: Iterable[float], threshold: float, *, above: bool = True,
          min_seeds: int = 3) -> tuple[Verdict, Interval | None, str]:
    """Judge per-seed ``values`` against ``threshold`` by their 95 % interval, not their mean.

    ``above=True``: the claim is "value >= threshold". HOLDS when the whole interval is on the
    claimed side, DOES_NOT_HOLD when it is wholly on the other side, NOT_MEASURABLE when it
    contains the threshold (undecided at this many seeds) or there are fewer than ``min_seeds``.
    Returns the verdict, the interval and a short reason.
    """
    vals = [float(v) for v in values]
    if len(vals) < max(2, min_seeds):
        return Verdict.NOT_MEASURABLE, None, f"{len(vals)} seed(s): too few to judge a spread (need {min_seeds})"
    iv = seed_interval(vals)
    side = ">=" if above else "<="
    if (iv.lo >= threshold) if above else (iv.hi <= threshold):
        return Verdict.HOLDS, iv, f"the whole 95 % interval is {side} {threshold:g}"
    if (iv.hi < threshold) if above else (iv.lo > threshold):
        return Verdict.DOES_NOT_HOLD, iv, f"the whole 95 % interval misses {side} {threshold:g}"
    return Verdict.NOT_MEASURABLE, iv, f"undecided: the 95 % interval contains {threshold:g} at {iv.n} seeds"


def combine(parts: dict[str, Verdict]) -> Verdict:
    """The verdict of a claim made of several parts (or readings), each judged on its own.

    All hold: HOLDS. None holds and some fails: DOES_NOT_HOLD. Some hold and others fail or
    cannot be decided: HOLDS_IN_PART. All undecidable: NOT_MEASURABLE.
    """
    if not parts:
        raise ValueError("combine() needs at least one part")
    vs = set(parts.values())
    if vs == {Verdict.HOLDS}:
        return Verdict.HOLDS
    if Verdict.HOLDS in vs or Verdict.HOLDS_IN_PART in vs:
        return Verdict.HOLDS_IN_PART
    if Verdict.DOES_NOT_HOLD in vs:
        return Verdict.DOES_NOT_HOLD
    return Verdict.NOT_MEASURABLE


def parts_text(parts: dict[str, Verdict]) -> str:
    """``"part A: holds; part B: does not hold"``, for a row's measured text."""
    return "; ".join(f"{name}: {v.value}" for name, v in parts.items())


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
    threshold: Threshold


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
    threshold: Threshold | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "claim": self.claim,
            "source": self.source,
            "published": self.published,
            "measured": self.measured,
            "threshold": None if self.threshold is None else self.threshold.text,
            "threshold_kind": None if self.threshold is None else self.threshold.kind,
            "threshold_why": None if self.threshold is None else self.threshold.why,
            "verdict": self.verdict.value,
            "seconds": round(self.seconds, 2),
            "details": self.details,
        }


REGISTRY: dict[str, ClaimSpec] = {}

# Rows live in the lesson modules (nodecourse/lessons/lessonNN.py), found by
# name at run time: the ledger machinery never imports lesson code statically,
# and a new lesson's rows join the ledger without an edit here.
_ROW_PACKAGE = "nodecourse.lessons"


def claim(*, id: str, claim: str, source: str, published: str, lesson: str, threshold: Threshold):
    """Register ``measure(quick: bool) -> Measurement`` as the ledger row ``id``, judged against
    ``threshold`` (declared here, before the row ever runs)."""
    if not isinstance(threshold, Threshold):
        raise TypeError(f"claim {id!r}: threshold must be a Threshold, got {type(threshold).__name__}")

    def register(measure: Callable[[bool], Measurement]):
        if id in REGISTRY:
            raise ValueError(f"claim id {id!r} is registered twice")
        REGISTRY[id] = ClaimSpec(id, claim, source, published, lesson, measure, threshold)
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
                    time.perf_counter() - start, m.details, spec.threshold,
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

COLUMNS = ("id", "claim", "source", "published", "threshold", "measured", "verdict")


def _threshold_cell(r: ClaimResult) -> str:
    return "" if r.threshold is None else r.threshold.describe()


def _cells(r: ClaimResult) -> list[str]:
    return [r.id, r.claim, r.source, r.published, _threshold_cell(r), r.measured, r.verdict.value]


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
    rows = [_cells(r) for r in results]
    return text_table(COLUMNS, rows, widths=_column_widths(rows, width), rule_between_rows=True)


def _cpu_model() -> str:
    """The processor's name (Linux's /proc/cpuinfo; ``platform.processor()`` elsewhere)."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def report_header(results: list[ClaimResult], *, quick: bool) -> dict[str, str]:
    """What a published ledger must say besides its rows: date (UTC), mode, machine, software, time."""
    import datetime
    import os
    import platform

    import torch

    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "mode": "quick" if quick else "full",
        "machine": f"{_cpu_model()}, {platform.machine()}, {os.cpu_count()} CPU cores, "
                   f"{platform.system()} {platform.release()}",
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


def verdict_counts(results: list[ClaimResult]) -> str:
    """``"12 hold, 3 hold in part, 2 do not hold, 4 not measurable at this scale"`` (zeros left out)."""
    words = {Verdict.HOLDS: "hold", Verdict.HOLDS_IN_PART: "hold in part", Verdict.DOES_NOT_HOLD: "do not hold",
             Verdict.NOT_MEASURABLE: "not measurable at this scale", Verdict.ERROR: "raised an error"}
    counts = [(sum(r.verdict is v for r in results), w) for v, w in words.items()]
    return ", ".join(f"{n} {w}" for n, w in counts if n)


def format_markdown(results: list[ClaimResult], header: dict[str, str] | None = None, *,
                    title: str | None = "# Claims ledger") -> str:
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
        cells = [escape_markdown_cell(c) for c in _cells(r)]
        cells[-1] = f"**{cells[-1]}**"
        rows.append(cells)
    lines.append(markdown_table(COLUMNS, rows))
    return "\n".join(lines) + "\n"


LEDGER_BEGIN = "<!-- ledger:begin (written by `nodecourse claims --quick --format markdown --update README.md`) -->"
LEDGER_END = "<!-- ledger:end -->"


def replace_between_markers(text: str, block: str) -> str:
    """``text`` with everything between :data:`LEDGER_BEGIN` and :data:`LEDGER_END` replaced by ``block``."""
    begin, end = text.find(LEDGER_BEGIN), text.find(LEDGER_END)
    if begin < 0 or end < begin:
        raise ValueError(f"the file has no ledger markers: add the lines\n{LEDGER_BEGIN}\n{LEDGER_END}\n"
                         "where the table belongs")
    return text[: begin + len(LEDGER_BEGIN)] + "\n" + block.rstrip("\n") + "\n" + text[end:]


_VERDICT_CELL = re.compile(r"^\|\s*([a-z0-9-]+)\s*\|.*\|\s*\*\*([a-z ]+)\*\*\s*\|\s*$")


def verdicts_in_markdown(text: str) -> dict[str, str]:
    """``{id: verdict}`` read back from a table written by :func:`format_markdown` (between the
    README's markers when they are there)."""
    begin, end = text.find(LEDGER_BEGIN), text.find(LEDGER_END)
    if begin >= 0 and end > begin:
        text = text[begin:end]
    out = {}
    for line in text.splitlines():
        m = _VERDICT_CELL.match(line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


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
             ".holds{background:#e6f4ea}.holds_in_part{background:#eef3d9}.does_not_hold{background:#fce8e6}"
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

        display(HTML(html_table(results, columns=("claim", "source", "published", "threshold", "measured",
                                                  "verdict"))))
    except ImportError:
        print(format_table(results))
    return results
