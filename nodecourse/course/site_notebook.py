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
- **figures** get a description (``alt``): a figure object's own title and caption where its
  text form carries them (the audit's ``Figure(title=..., caption=...)``), else the titles and
  axis labels the cell's code sets (a plotly figure's own, from its JSON), else the cell's first
  comment, else a sentence naming
  the section of the lesson it is in, the plotting function the cell calls and the number of
  panels;
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
#: An axis label or title given as a keyword (``ax.set(xlabel="h", ylabel="error", title="...")``)
#: or by its setter (``ax.set_xlabel("h")``).
_LABEL = {
    kind: re.compile(rf"""(?:\b{kind}\s*=\s*|set_{kind}\(\s*|\b{kind}\(\s*)f?(["'])(.+?)\1""")
    for kind in ("xlabel", "ylabel")
}
_TITLE_KEYWORD = re.compile(r"""(?<![\w.])title\s*=\s*f?(["'])(.+?)\1""")
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


def _label_text(text: str) -> str:
    """A title or label from code as a reader reads it: ``{...}`` placeholders as "…", TeX's
    ``$`` and backslashes out (``$\\lambda$`` -> "lambda")."""
    text = re.sub(r"\{[^}]*\}", "…", text)
    return " ".join(re.sub(r"\\([A-Za-z]+)", r"\1", text).replace("$", "").split()).strip(" ,;:")


def _says_something(text: str) -> bool:
    """False for a title that is mostly placeholders: "label …" (fewer than two words of its own),
    "batch …, MLP …, …" (three placeholders or more)."""
    return "…" not in text or (text.count("…") < 3 and len(re.findall(r"[A-Za-z]{2,}", text)) >= 2)


def _axes(source: str) -> str:
    """ "y against x" for each distinct pair of axis labels the code sets (at most three)."""
    xs = [_label_text(m.group(2)) for m in _LABEL["xlabel"].finditer(source)]
    ys = [_label_text(m.group(2)) for m in _LABEL["ylabel"].finditer(source)]
    pairs = list(dict.fromkeys(f"{y} against {x}" for x, y in zip(xs, ys) if x and y))
    return "; ".join(pairs[:3])


def _titles(source: str) -> str:
    """The titles that ``source`` sets, joined ("loss at … steps; training"), or ""."""
    found = [m.group(2) for m in _TITLE_CALL.finditer(source)] + [m.group(2) for m in _TITLE_KEYWORD.finditer(source)]
    return "; ".join(t for t in dict.fromkeys(_label_text(t) for t in found) if t and _says_something(t))


def _described(source: str) -> str:
    """The titles and axes that ``source`` sets ("loss at … steps (loss against epoch)"), or ""."""
    titles, axes = _titles(source), _axes(source)
    return f"{titles} ({axes})" if titles and axes else titles or axes


PACKAGE_DIR = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=None)
def _plot_functions() -> dict[str, tuple[tuple[str, str], ...]]:
    """The course package's plotting functions (a name with "plot", "figure" or "draw") by name:
    (module path, source) of each definition (two lessons may each have a ``plot_memory``)."""
    found: dict[str, list[tuple[str, str]]] = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "def " not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef) and _PLOT_CALL.match(node.name + "("):
                found.setdefault(node.name, []).append((path.as_posix(), ast.get_source_segment(text, node) or ""))
    return {name: tuple(defs) for name, defs in found.items()}


def _library_figure(calls: list[str], page_label: str) -> str:
    """What the course's own plotting function that the cell calls draws (its titles and axes), or
    "". Of two functions with one name, the one in the page's lesson (``lessonNN``) is taken."""
    number = re.search(r"(\d+)$", page_label)
    lesson = f"lesson{int(number.group(1)):02d}" if number else None
    for name in reversed(calls):
        defs = _plot_functions().get(name, ())
        mine = [d for d in defs if lesson and f"/{lesson}/" in d[0]] or (list(defs) if len(defs) == 1 else [])
        if mine and _described(mine[0][1]):
            return _described(mine[0][1])
    return ""


def _titled_figure(plain: str) -> str:
    """ "title: caption" from a figure object's text form when it is a call with a ``title`` (and
    perhaps a ``caption``) given as plain strings, as the audit's figures show themselves
    (``Figure(title='Contraction', caption="spectral radius at ...")``); "" for anything else."""
    try:
        call = ast.parse(plain.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return ""
    if not isinstance(call, ast.Call):
        return ""
    given = {k.arg: k.value.value for k in call.keywords if isinstance(k.value, ast.Constant)}
    title, caption = given.get("title"), given.get("caption")
    if not isinstance(title, str) or not title.strip():
        return ""
    return title.strip() + (f": {caption.strip()}" if isinstance(caption, str) and caption.strip() else "")


def image_alt(source: str, section: str, page_label: str, plain: str = "") -> str:
    """A description of a figure: the title and caption its object carries (``plain``, its text
    form, as the audit's ``Figure(title=..., caption=...)``); else from its cell's code, the titles
    it sets and its axes ("error against h"); else the cell's first comment; else the titles and
    axes of the course's plotting function the cell calls; else the section of the page it is in,
    with the plotting function the cell calls and the number of panels (from matplotlib's
    ``plain`` text, "<Figure size ... with 3 Axes>")."""
    own = _titled_figure(plain)
    if own:
        return f"Figure: {own}"
    titles, axes = _titles(source), _axes(source)
    if titles:
        return f"Figure: {_described(source)}"
    comment = _COMMENT.search(source)
    if comment:
        return f"Figure ({page_label}): {comment.group(1).strip()}" + (f" ({axes})" if axes else "")
    calls = [c for c in _PLOT_CALL.findall(source) if c not in _PLOT_PLUMBING]
    where = f", section “{section}”" if section else ""
    if axes:
        return f"Figure from {page_label}{where}: {axes}"
    library = _library_figure(calls, page_label)
    if library:
        return f"Figure from {page_label}{where}: {library}"
    what = f": {calls[-1].replace('_', ' ').strip()}" if calls else ""
    axes = _AXES.search(plain)
    panels = f" ({axes.group(1)} panels)" if axes and int(axes.group(1)) > 1 else ""
    return f"Figure from {page_label}{where}{what}{panels}"


def _plotly_text(value) -> str:
    """A plotly title (a string or ``{"text": ...}``) as plain text (its ``<br>``/``<b>`` tags out)."""
    text = value.get("text", "") if isinstance(value, dict) else str(value or "")
    return " ".join(re.sub(r"<[^>]+>", " ", text).split())


def plotly_alt(figure: dict) -> str:
    """A description of a plotly figure from its JSON: its title, its panels' titles and its axes
    ("error against rtol"); "" when it has none of them."""
    layout = figure.get("layout") or {}
    title = _plotly_text(layout.get("title"))
    xs = sorted(k for k in layout if re.fullmatch(r"xaxis\d*", k))
    pairs = []
    for key in xs:
        x = _plotly_text((layout[key] or {}).get("title"))
        anchor = (layout[key] or {}).get("anchor") or "y"
        y = _plotly_text((layout.get("yaxis" + anchor[1:]) or {}).get("title"))
        if x and y:
            pairs.append(f"{y} against {x}")
    panels = []
    if len(xs) > 1:  # make_subplots' titles: annotations placed on the page (paper) over each panel
        panels = [
            _plotly_text(a.get("text"))
            for a in layout.get("annotations") or []
            if a.get("xref") == "paper" and a.get("yref") == "paper" and a.get("text")
        ]
    parts = [p for p in (title, "panels: " + ", ".join(panels) if panels else "") if p]
    axes = "; ".join(list(dict.fromkeys(pairs))[:3])
    if not parts and not axes:
        return ""
    return "Figure: " + ("; ".join(parts) or axes) + (f" ({axes})" if parts and axes else "")


def _heading_text(markdown: str) -> str | None:
    found = _HEADING.findall(markdown)
    if not found:
        return None
    return re.sub(r"[*_`$]", "", found[-1]).strip()


def prepare_notebook(nb, *, launch: str = "", page_label: str = "this lesson", plotly_html=None) -> int:
    """Make ``nb`` (in place) what the page shows (see the module docstring); the count of plotly
    figures. ``plotly_html(data)`` renders a plotly output (``site_figures.plotly_output_html``)."""
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
                described = plotly_alt(data[PLOTLY_MIME]) or image_alt(cell.source, section, page_label)
                out["data"] = {"text/html": plotly_html(data, described)}
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
