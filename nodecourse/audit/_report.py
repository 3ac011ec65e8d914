"""The audit's report: five steps, each with a verdict, a sentence, its measurements and figures.

:class:`AuditReport` serialises to JSON (:meth:`~AuditReport.to_json`), Markdown
(:meth:`~AuditReport.to_markdown`) and one self-contained HTML file (:meth:`~AuditReport.save`:
figures embedded as PNG, no script, no network), and shows itself as a rich report in JupyterLab
(``_repr_html_``; ``_repr_markdown_`` where a front end prefers Markdown; a :class:`StepResult` shows
its verdict and sentence). Figures are drawn with matplotlib on its Agg canvas (no pyplot state, so an
audit never changes the notebook's own figures).
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from nodecourse.measure import json_safe

__all__ = ["AUDIT_VERDICTS", "AuditReport", "StepResult"]

#: ``undecided``: the interval straddles a threshold (step 5); ``not measured``: the step has nothing
#: to measure for this model's shape, and says why; ``failed``: the step raised, its cause is named.
AUDIT_VERDICTS = ("ok", "warning", "problem", "undecided", "not measured", "failed")
_COLOURS = {
    "ok": "#1a7f37",
    "warning": "#9a6700",
    "problem": "#cf222e",
    "undecided": "#6e7781",
    "not measured": "#6e7781",
    "failed": "#8250df",
}


@dataclass
class Figure:
    """One figure of a step: ``title``, ``caption`` (what it shows, with units) and the PNG bytes."""

    title: str
    caption: str
    png: bytes = field(repr=False)

    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")

    def _repr_png_(self) -> bytes:
        return self.png


def render(fig, title: str, caption: str) -> Figure:
    """A matplotlib ``Figure`` (made with ``matplotlib.figure.Figure``) as a :class:`Figure`."""
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=72)
    return Figure(title, caption, buf.getvalue())


def new_figure(n_axes: int = 1, width: float = 5.2, height: float = 3.0):
    """A matplotlib figure with ``n_axes`` axes side by side, off pyplot: ``(fig, [axes])``."""
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=(width * n_axes, height))
    axes = [fig.add_subplot(1, n_axes, i + 1) for i in range(n_axes)]
    return fig, axes


@dataclass
class StepResult:
    """One step of the audit.

    ``step`` (1-5), ``name``, ``verdict`` (one of :data:`AUDIT_VERDICTS`), ``summary`` (one
    sentence with its numbers), ``reasons`` (each finding behind a warning or a problem), ``data`` (the
    measurements, plain JSON values), ``figures`` and ``seconds`` (the step's wall time).
    """

    step: int
    name: str
    verdict: str
    summary: str
    data: dict = field(default_factory=dict)
    figures: list[Figure] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def __post_init__(self):
        if self.verdict not in AUDIT_VERDICTS:
            raise ValueError(f"verdict={self.verdict!r} is not one of {AUDIT_VERDICTS}")

    def as_dict(self, figures: bool = False) -> dict:
        out = {
            "step": self.step,
            "name": self.name,
            "verdict": self.verdict,
            "summary": self.summary,
            "reasons": list(self.reasons),
            "seconds": round(self.seconds, 3),
            "data": json_safe(self.data),
            "figures": [{"title": f.title, "caption": f.caption} for f in self.figures],
        }
        if figures:
            for entry, f in zip(out["figures"], self.figures):
                entry["png_base64"] = base64.b64encode(f.png).decode("ascii")
        return out

    def markdown(self) -> str:
        """The step as Markdown: its verdict, its sentence, and each reason behind a warning or a problem."""
        reasons = "".join(f"\n- {r}" for r in self.reasons)
        return f"**Step {self.step}. {self.name}: {self.verdict}.** {self.summary}{reasons}"

    def _repr_markdown_(self) -> str:  # a notebook cell shows a step in one line: `report.step(2)`
        return self.markdown()

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        # text/plain is the line, not the dataclass repr of every field and float
        return {"text/markdown": self.markdown(), "text/plain": self.markdown()}


def verdict_of(problems: list[str], warnings: list[str]) -> tuple[str, list[str]]:
    """``("problem" | "warning" | "ok", reasons)`` from the findings of a step."""
    if problems:
        return "problem", problems + warnings
    if warnings:
        return "warning", warnings
    return "ok", []


@dataclass
class AuditReport:
    """What :func:`nodecourse.audit.audit` found. ``steps``: the five :class:`StepResult` in order;
    ``model``: what was audited (class, parameters, cores and their settings); ``setup``: the data,
    task, mode and sizes; ``seconds``: the whole audit's wall time."""

    model: dict
    setup: dict
    steps: list[StepResult]
    seconds: float

    @property
    def verdicts(self) -> dict[int, str]:
        return {s.step: s.verdict for s in self.steps}

    def step(self, number: int) -> StepResult:
        return next(s for s in self.steps if s.step == number)

    def as_dict(self, figures: bool = False) -> dict:
        return {
            "model": json_safe(self.model),
            "setup": json_safe(self.setup),
            "seconds": round(self.seconds, 2),
            "verdicts": {str(k): v for k, v in self.verdicts.items()},
            "steps": [s.as_dict(figures) for s in self.steps],
        }

    def to_json(self, *, figures: bool = False, indent: int | None = 1) -> str:
        """The report as one JSON document (``figures=True`` adds each PNG as base64)."""
        return json.dumps(self.as_dict(figures), indent=indent, ensure_ascii=False, allow_nan=False)

    def to_markdown(self) -> str:
        """A Markdown report: the verdict table, then each step's sentence, findings and numbers."""
        from nodecourse.measure import markdown_table

        m = self.model
        lines = [
            f"# Audit of {m['name']}",
            "",
            f"{m['parameters']:,} parameters; cores: " + "; ".join(m["cores"]) + ".",
            "",
            f"{self.setup['mode']} mode, task {self.setup['task']}, {self.setup['n_train']} training and "
            f"{self.setup['n_test']} test rows"
            + (f", {self.setup['n_shift']} shifted rows" if self.setup.get("n_shift") else "")
            + f"; {self.seconds:.0f} s in all.",
            "",
        ]
        rows = [[s.step, _cell(s.name), f"**{s.verdict}**", _cell(s.summary), f"{s.seconds:.1f}"] for s in self.steps]
        lines.append(markdown_table(["step", "name", "verdict", "summary", "seconds"], rows))
        for s in self.steps:
            lines += ["", f"## {s.step}. {s.name}: {s.verdict}", "", s.summary]
            if s.reasons:
                lines += [""] + [f"- {r}" for r in s.reasons]
            table = s.data.get("table")
            if table:
                cells = [[_cell(_fmt(v)) for v in row] for row in table["rows"]]
                lines += ["", markdown_table(table["columns"], cells)]
            for f in s.figures:
                lines += ["", f"*Figure: {f.title}.* {f.caption} (in the HTML report)"]
        return "\n".join(lines) + "\n"

    def _html_body(self) -> str:
        m = self.model
        head = (
            f"<h2>Audit of {html.escape(m['name'])}</h2><p>{m['parameters']:,} parameters; cores: "
            + html.escape("; ".join(m["cores"]))
            + f". {html.escape(self.setup['mode'])} mode, task "
            f"{html.escape(self.setup['task'])}, {self.setup['n_train']} training and {self.setup['n_test']} test "
            f"rows; {self.seconds:.0f} s in all.</p>"
        )
        rows = "".join(
            f"<tr><td>{s.step}</td><td>{html.escape(s.name)}</td><td>{_badge(s.verdict)}</td>"
            f"<td style='text-align:left'>{html.escape(s.summary)}</td><td>{s.seconds:.1f} s</td></tr>"
            for s in self.steps
        )
        table = (
            "<table><thead><tr><th>step</th><th>name</th><th>verdict</th><th>summary</th><th>time</th></tr>"
            f"</thead><tbody>{rows}</tbody></table>"
        )
        parts = [head, table]
        for s in self.steps:
            body = [f"<p>{html.escape(s.summary)}</p>"]
            if s.reasons:
                body.append("<ul>" + "".join(f"<li>{html.escape(r)}</li>" for r in s.reasons) + "</ul>")
            t = s.data.get("table")
            if t:
                body.append(_html_table(t))
            for f in s.figures:
                body.append(
                    f"<figure><img src='{f.data_uri()}' alt='{html.escape(f.title)}' style='max-width:100%'>"
                    f"<figcaption><b>{html.escape(f.title)}.</b> {html.escape(f.caption)}"
                    "</figcaption></figure>"
                )
            parts.append(
                f"<details{' open' if s.verdict != 'ok' else ''}><summary><b>{s.step}. "
                f"{html.escape(s.name)}</b> {_badge(s.verdict)}</summary>{''.join(body)}</details>"
            )
        return "<div class='nc-audit'>" + "".join(parts) + "</div>"

    def _repr_html_(self) -> str:
        return self._html_body()

    def _repr_markdown_(self) -> str:  # for front ends that show Markdown rather than HTML
        return self.to_markdown()

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        # text/plain is the report, not the dataclass repr of every field and float
        text = self.to_markdown()
        return {"text/html": self._html_body(), "text/markdown": text, "text/plain": text}

    def to_html(self) -> str:
        """One self-contained HTML page (figures embedded as PNG data, no scripts)."""
        style = (
            "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top}"
            "details{margin:0.8em 0}figcaption{font-size:90%;color:#444}"
        )
        return (
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Audit of {html.escape(self.model['name'])}"
            f"</title><style>{style}</style></head><body>{self._html_body()}</body></html>\n"
        )

    def save(self, path) -> Path:
        """Write the report to ``path``: ``.html`` (self-contained), ``.md`` or ``.json``; returns the path."""
        path = Path(path)
        suffix = path.suffix.lower()
        writers = {
            ".html": self.to_html,
            ".htm": self.to_html,
            ".md": self.to_markdown,
            ".json": lambda: self.to_json(figures=True),
        }
        if suffix not in writers:
            raise ValueError(f"path={str(path)!r}: give a file name ending in .html, .md or .json")
        path.write_text(writers[suffix](), encoding="utf-8")
        return path

    def save_all(self, path) -> list[Path]:
        """Write the report three times: to ``path`` and beside it with the other two of
        ``.html``, ``.json`` and ``.md`` (same name); returns the paths."""
        path = Path(path)
        written = [self.save(path)]
        for suffix in (".html", ".json", ".md"):
            if suffix != path.suffix.lower() and not (suffix == ".html" and path.suffix.lower() == ".htm"):
                written.append(self.save(path.with_suffix(suffix)))
        return written

    def __str__(self) -> str:
        lines = [f"Audit of {self.model['name']} ({self.seconds:.0f} s)"]
        lines += [f"  {s.step}. {s.name}: {s.verdict.upper()} ({s.seconds:.1f} s): {s.summary}" for s in self.steps]
        return "\n".join(lines)


def _fmt(v) -> str:
    if isinstance(v, float):
        return "n/a" if not math.isfinite(v) else f"{v:.4g}"
    return str(v)


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _badge(verdict: str) -> str:
    return f"<span style='background:{_COLOURS[verdict]};color:white;border-radius:3px;padding:0 5px'>{verdict}</span>"


def _html_table(t: dict) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in t["columns"])
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>" for row in t["rows"])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
