"""A committed notebook made ready for the website, before nbconvert renders it.

What a page shows differs from what the notebook holds in a few ways, all decided here:

- **test markers** (``# NBVAL_CHECK_OUTPUT`` and the other ``# NBVAL_*`` lines) are for the
  notebook tests, not for a learner: the line leaves the page's copy of the code;
- **progress bars** (tqdm's text, frozen at whatever state it was saved in) leave the page;
- **explorers** (a widget lives only in a running kernel, so the committed output is the line
  :data:`~nodecourse.course.notebook_hygiene.LIVE_WIDGET_TEXT`) become a box that says what the
  explorer shows (its module's docstring) and links to run the lesson on Binder or locally. A
  picture is shown only where the cell's outputs hold one: none is made up;
- **folded cells** (:func:`folds`): a code cell whose every output is Markdown (findings that
  render their own text) or that is tagged ``hide-input`` shows its output, and its code behind
  a "show the code" fold;
- **figures** get a description (``alt``): the titles the cell's code sets, else the cell's
  first comment, else a sentence naming the section of the lesson it is in, the plotting
  function the cell calls and the number of panels;
- **plotly figures** become a live box over their static PNG (see ``site.py``).
"""

from __future__ import annotations

import ast
import html
import json
import re
from functools import lru_cache
from pathlib import Path

from nodecourse.course.notebook_hygiene import LIVE_WIDGET_TEXT

PLOTLY_MIME = "application/vnd.plotly.v1+json"
#: Tags (Jupyter Book's spelling and its underscore variant) that fold a cell's code.
FOLD_TAGS = frozenset({"hide-input", "hide_input", "hide-cell"})
_MARKER = re.compile(r"^\s*#\s*NBVAL_\w+.*$\n?", re.MULTILINE)
#: tqdm's line: "desc: 67%|██████    | 4/6 [...]" (the spaces may be figure spaces, U+2007).
PROGRESS = re.compile(r"\d+%\|[^|\n]*\|[\s\u2007]*\d+/\d+")
_TITLE_CALL = re.compile(r"""(?:set_title|suptitle|title)\(\s*f?(["'])(.+?)\1""")
_PLOT_CALL = re.compile(r"\b(\w*(?:plot|figure|draw)\w*)\s*\(")
_PLOT_PLUMBING = {"plot", "subplots", "subplot", "figure", "add_subplot", "subplots_adjust"}
_AXES = re.compile(r"with (\d+) Axes")
_COMMENT = re.compile(r"^\s*#\s*(?!NBVAL_)(.+)$", re.MULTILINE)
_HEADING = re.compile(r"^#{1,3}\s+(.+)$", re.MULTILINE)
_EXPLORER_CALL = re.compile(r"\b([A-Z]\w*Explorer)\s*\(")
WIDGETS_DIR = Path(__file__).resolve().parents[1] / "widgets"


def strip_markers(source: str) -> str:
    """``source`` without its ``# NBVAL_*`` lines (the notebook tests' markers)."""
    return _MARKER.sub("", source)


def is_progress_output(out: dict) -> bool:
    """True for a saved progress bar: a display of text only, every line a tqdm bar, or a stream
    whose every non-empty line is one."""
    if out.get("output_type") == "stream":
        text = out.get("text", "")
    elif set(out.get("data", {})) == {"text/plain"}:
        text = out["data"]["text/plain"]
    else:
        return False
    lines = [ln for ln in re.split(r"[\r\n]+", text) if ln.strip()]
    return bool(lines) and all(PROGRESS.search(ln) for ln in lines)


def without_progress_lines(out: dict) -> dict:
    """A stream output with its progress-bar lines (and tqdm's carriage-return redraws) taken out."""
    if out.get("output_type") != "stream" or not PROGRESS.search(out.get("text", "")):
        return out
    kept = [ln for ln in out["text"].split("\n") if not PROGRESS.search(ln.split("\r")[-1] or ln)]
    from nbformat import NotebookNode

    return NotebookNode({**out, "text": "\n".join(ln.split("\r")[-1] for ln in kept)})


def is_live_widget(out: dict) -> bool:
    return out.get("data", {}).get("text/plain", "").strip() == LIVE_WIDGET_TEXT


def folds(cell) -> bool:
    """The rule for a folded cell: tagged (:data:`FOLD_TAGS`), or a code cell with outputs, every
    one of them Markdown (text that code assembled, e.g. a lesson's findings)."""
    if cell.cell_type != "code":
        return False
    if FOLD_TAGS & set(cell.get("metadata", {}).get("tags", [])):
        return True
    outputs = cell.get("outputs", [])
    return bool(outputs) and all("text/markdown" in o.get("data", {}) for o in outputs)


@lru_cache(maxsize=None)
def explorer_descriptions() -> dict[str, str]:
    """Each explorer class in ``nodecourse/widgets/`` by name: the first paragraph of its module's
    docstring (read from the source, without importing torch)."""
    found = {}
    for path in sorted(WIDGETS_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        doc = " ".join((ast.get_docstring(tree) or "").split("\n\n")[0].split())
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("Explorer") and doc:
                found[node.name] = doc
    return found


def explorer_box(source: str, launch: str, lesson_label: str, has_picture: bool) -> str:
    """HTML for an explorer's output on the site: what it shows and how to run it."""
    match = _EXPLORER_CALL.search(source)
    about = explorer_descriptions().get(match.group(1)) if match else None
    what = html.escape(about) if about else "An interactive widget: it responds to its controls in a running notebook."
    picture = (
        " The figure below is what the cell drew when the notebook was executed."
        if has_picture
        else " The page has no picture of it: the controls and the figure exist only in a running notebook."
    )
    return (
        f'<div class="nc-explorer-static" role="note"><p class="nc-explorer-title">Interactive explorer</p>'
        f"<p>{what}{picture}</p>"
        f'<p>To use it: <a class="nc-launch" href="{html.escape(launch, quote=True)}">run {lesson_label} on '
        "Binder</a>, or on your own machine run <code>nodecourse lab</code> (JupyterLab) and open it "
        "there.</p></div>"
    )


def image_alt(source: str, section: str, page_label: str, plain: str = "") -> str:
    """A description of a figure from its cell's code: the titles it sets; else the cell's first
    comment; else the section of the page it is in, with the plotting function the cell calls and
    the number of panels (from matplotlib's ``plain`` text, "<Figure size ... with 3 Axes>")."""
    titles = [re.sub(r"\{[^}]*\}", "…", m.group(2)) for m in _TITLE_CALL.finditer(source)]
    if titles:
        return "Figure: " + "; ".join(titles)
    comment = _COMMENT.search(source)
    if comment:
        return f"Figure ({page_label}): {comment.group(1).strip()}"
    where = f", section “{section}”" if section else ""
    calls = [c for c in _PLOT_CALL.findall(source) if c not in _PLOT_PLUMBING]
    what = f": {calls[-1].replace('_', ' ').strip()}" if calls else ""
    axes = _AXES.search(plain)
    panels = f" ({axes.group(1)} panels)" if axes and int(axes.group(1)) > 1 else ""
    return f"Figure from {page_label}{where}{what}{panels}"


def _heading_text(markdown: str) -> str | None:
    found = _HEADING.findall(markdown)
    if not found:
        return None
    return re.sub(r"[*_`$]", "", found[-1]).strip()


def prepare_notebook(nb, *, launch: str = "", page_label: str = "this lesson", plotly_html=None) -> int:
    """Make ``nb`` (in place) what the page shows (see the module docstring); the count of plotly
    figures. ``plotly_html(data)`` renders a plotly output (``site._plotly_output_html``)."""
    count = 0
    section = ""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            section = _heading_text(cell.source) or section
            continue
        if cell.cell_type != "code":
            continue
        cell.source = strip_markers(cell.source)
        outputs = [without_progress_lines(o) for o in cell.get("outputs", []) if not is_progress_output(o)]
        has_picture = any("image/png" in o.get("data", {}) for o in outputs)
        for out in outputs:
            data = out.get("data", {})
            if is_live_widget(out):
                out["data"] = {"text/html": explorer_box(cell.source, launch, page_label, has_picture)}
            elif PLOTLY_MIME in data and plotly_html is not None:
                layout_title = (data[PLOTLY_MIME].get("layout") or {}).get("title") or {}
                title = layout_title.get("text") if isinstance(layout_title, dict) else str(layout_title)
                out["data"] = {"text/html": plotly_html(data, title or image_alt(cell.source, section, page_label))}
                count += 1
            elif "image/png" in data:
                out.setdefault("metadata", {})["nc_alt"] = image_alt(
                    cell.source, section, page_label, data.get("text/plain", "")
                )
        cell.outputs = outputs
        if folds(cell):  # the fold's label: what the hidden code does, where the rule knows it
            tagged = FOLD_TAGS & set(cell.metadata.get("tags", []))
            cell.metadata["nc_fold"] = "Show the code" if tagged else "Show the code that prints this"
    return count


def json_for_script(value) -> str:
    """``value`` as JSON that is safe inside a ``<script>`` element."""
    return json.dumps(value, ensure_ascii=False).replace("</", "<\\/")
