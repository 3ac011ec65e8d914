"""The course as a static website, and the Binder links, from one setting.

``nodecourse site`` (``make site``) renders the committed, executed notebooks with nbconvert into
``site/``: an index, one page per lesson (``notebooks/NN_*.ipynb``, whatever lessons exist, in
order of their number), one per exercise (``exercises/*.ipynb``: the tasks, without solutions),
the claims ledger (``docs/ledger-full.md``), the README's set-up, the guides (:data:`GUIDES`)
and the API reference (:mod:`~nodecourse.course.site_api`). Nothing is fetched while
building, and nothing while reading: nbconvert's own ``lab`` template, the plotly.js that the
plotly package ships and the site's own stylesheet and script are all a page loads.

Why a builder of our own and not Jupyter Book: the site is built from the committed outputs
(quick mode), offline, by the same command a learner has. Jupyter Book 2 builds with a Node
toolchain (mystmd) that downloads its site template when it first builds; Jupyter Book 1 (Sphinx,
myst-nb, sphinx-book-theme) builds offline but brings Sphinx and its extensions into the lock, and
the lesson pages' special cases (explorers, progress bars, findings folded, plotly's static image)
would be Sphinx extensions instead of the few functions here. The parts:

- :mod:`~nodecourse.course.site_notebook`: what a page shows of a notebook (test markers and
  progress bars out, explorers as a description with a launch link, folded cells, alt text);
- :mod:`~nodecourse.course.site_markdown`: formulas as MathML, converted when the site is built
  (no MathJax, no network), and markdown tables whose cells hold a ``|``;
- :mod:`~nodecourse.course.site_page`: the shape of every page (skip link, navigation, contents
  sidebar, previous/next at both ends, footer with version and date) and the search index;
- :mod:`~nodecourse.course.site_api`: the API reference, one page per public package from its
  ``__all__`` and docstrings;
- :mod:`~nodecourse.course.site_assets`: the stylesheet (75-character lines, figures and tables
  that fit a phone, code colours at 4.5:1 or better) and the script (copy buttons, search).

Figures: a plotly output is drawn interactively by plotly.js where scripts run; its static PNG
(``nodecourse.plotting.RENDERER`` stores one beside the JSON) is in the page first, so a reader
without JavaScript sees it.

The repository's address is written once, as ``Repository`` in pyproject.toml's
``[project.urls]``: the README's Binder badge (``nodecourse site --update-readme`` rewrites it) and
every Binder link of the site are made from it.

Why this module is long: it holds the build's own steps in order (the pages, links, navigation, the index, the
broken-link check) and two templates kept as strings beside the code that fills them (:data:`FIGURE_SCRIPT`,
:data:`PAGE_TEMPLATE`, about 85 lines); the parts that stand alone are already modules (listed above), and
moving the broken-link check out is a split that is pending.
"""

from __future__ import annotations

import html
import re
import shutil
import tomllib
import urllib.parse
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from nodecourse.course import site_api, site_assets, site_markdown, site_notebook, site_page
from nodecourse.course.site_notebook import PLOTLY_MIME, json_for_script

START_NOTEBOOK = "notebooks/00_start_here.ipynb"
BINDER = "https://mybinder.org"
BADGE_PREFIX = f"[![Binder]({BINDER}/badge_logo.svg)]("
LESSON_FILE = re.compile(r"^(\d+)_[^/]+\.ipynb$")
#: The README's sections that make the site's set-up page (by their "## " heading).
SETUP_SECTIONS = ("The two commands", "Starting the course")
#: The guides, each a page where its file exists: (file, page, title, the navigation's label). The
#: navigation links the first four; the class's own pages are linked from the instructor's guide.
GUIDES = (
    ("docs/learner.md", "learner.html", "The learner's guide", "Learner's guide"),
    ("docs/instructor.md", "instructor.html", "The instructor's guide", "Instructor's guide"),
    ("docs/library.md", "library.html", "The library guide", "Library"),
    ("CONTRIBUTING.md", "contributing.html", "Contributing to nodecourse", "Contributing"),
    ("docs/hub.md", "hub.html", "A class on JupyterHub", ""),
    ("docs/nbgrader.md", "nbgrader.html", "Grading a class with nbgrader", ""),
    ("docs/cluster.md", "cluster.html", "Running the ledger on a Ray cluster", ""),
    ("docs/learning-curve.md", "learning-curve.html", "Lesson 5's learning curve at the course settings", ""),
)


# ---------------------------------------------------------------------------
# the one setting: the repository's address, and the Binder links made from it
# ---------------------------------------------------------------------------


def repository_url(root: Path) -> str:
    """``Repository`` of ``[project.urls]`` in ``root``/pyproject.toml, without a trailing slash or ``.git``."""
    urls = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"].get("urls", {})
    url = urls.get("Repository")
    if not url:
        raise ValueError(
            f"{root / 'pyproject.toml'} has no Repository in [project.urls]: add "
            'Repository = "https://github.com/OWNER/NAME"'
        )
    return url.rstrip("/").removesuffix(".git")


def binder_url(repo_url: str, path: str | None = None, ref: str = "HEAD") -> str:
    """The mybinder.org address that builds ``repo_url`` at ``ref`` and opens ``path`` in JupyterLab.

    GitHub (``v2/gh/OWNER/NAME``) and GitLab (``v2/gl/...``) addresses get Binder's short forms;
    any other git address its generic one (``v2/git/<quoted URL>``)."""
    parts = urllib.parse.urlsplit(repo_url)
    slug = parts.path.strip("/")
    if parts.netloc == "github.com" and slug.count("/") == 1:
        base = f"{BINDER}/v2/gh/{slug}/{ref}"
    elif parts.netloc == "gitlab.com" and slug:
        base = f"{BINDER}/v2/gl/{urllib.parse.quote(slug, safe='')}/{ref}"
    else:
        base = f"{BINDER}/v2/git/{urllib.parse.quote(repo_url, safe='')}/{ref}"
    return base if path is None else f"{base}?labpath={urllib.parse.quote(path, safe='')}"


def source_url(repo_url: str, path: str) -> str:
    """The address of ``path`` in the repository's web view (GitHub's and GitLab's spelling)."""
    middle = "/-/blob/HEAD/" if urllib.parse.urlsplit(repo_url).netloc == "gitlab.com" else "/blob/HEAD/"
    return repo_url + middle + path


def binder_badge(root: Path) -> str:
    """The README's Binder badge line: lesson 0 of the repository named in pyproject.toml."""
    return f"{BADGE_PREFIX}{binder_url(repository_url(root), START_NOTEBOOK)})"


def readme_badge(root: Path) -> str | None:
    """The Binder badge line the README has now (None when it has none)."""
    for line in (root / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith(BADGE_PREFIX):
            return line
    return None


def update_readme_badge(root: Path) -> bool:
    """Write :func:`binder_badge` over the README's badge line; True when the README changed."""
    readme = root / "README.md"
    text = readme.read_text(encoding="utf-8")
    old = readme_badge(root)
    if old is None:
        raise ValueError(f"{readme} has no line starting with {BADGE_PREFIX!r} to update")
    new = binder_badge(root)
    if old == new:
        return False
    readme.write_text(text.replace(old, new, 1), encoding="utf-8")
    return True


# ---------------------------------------------------------------------------
# what the site holds
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    source: Path  # the notebook or markdown file, in the repository
    rel: str  # its path relative to the repository root
    out: str  # the page's file name in the site
    title: str
    kind: str  # "lesson", "exercise", "ledger", "setup", "guide", "api"
    package: str = ""  # an "api" page's package


def lesson_notebooks(root: Path) -> list[Path]:
    """Every lesson in ``notebooks/`` (``NN_name.ipynb``), in order of its number."""
    found = [p for p in (root / "notebooks").glob("*.ipynb") if LESSON_FILE.match(p.name)]
    return sorted(found, key=lambda p: (int(LESSON_FILE.match(p.name).group(1)), p.name))


def exercise_notebooks(root: Path) -> list[Path]:
    folder = root / "exercises"
    found = [p for p in folder.glob("*.ipynb") if LESSON_FILE.match(p.name)] if folder.is_dir() else []
    return sorted(found, key=lambda p: (int(LESSON_FILE.match(p.name).group(1)), p.name))


def _notebook_title(path: Path) -> str:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return path.stem


def site_pages(root: Path) -> list[Page]:
    pages = [
        Page(p, p.relative_to(root).as_posix(), f"{p.stem}.html", _notebook_title(p), "lesson")
        for p in lesson_notebooks(root)
    ]
    pages += [
        Page(p, p.relative_to(root).as_posix(), f"{p.stem}.html", _notebook_title(p), "exercise")
        for p in exercise_notebooks(root)
    ]
    ledger = root / "docs" / "ledger-full.md"
    if ledger.is_file():
        pages.append(Page(ledger, "docs/ledger-full.md", "ledger.html", "The claims ledger (full mode)", "ledger"))
    pages.append(Page(root / "README.md", "README.md", "setup.html", "Setting up the course", "setup"))
    pages += [Page(root / rel, rel, out, title, "guide") for rel, out, title, _ in GUIDES if (root / rel).is_file()]
    pages.append(Page(root, "api", site_api.INDEX_PAGE, "API reference", "api"))
    pages += [
        Page(root, f"api/{name}", site_api.page_name(name), f"API reference: {name}", "api", name)
        for name in site_api.PUBLIC_PACKAGES
    ]
    return pages


# ---------------------------------------------------------------------------
# links: repository paths to site pages
# ---------------------------------------------------------------------------

#: Folders of the site itself: a link into one is already the site's, not a repository path.
SITE_FOLDERS = (f"{site_page.IMAGES}/", "_static/", "download/")
_HREF = re.compile(r'(?P<attr><a\s(?:[^>]*?\s)?href)="(?P<url>[^"]*)"')  # links (<a>) only, not stylesheets


def rewrite_links(page_html: str, source_rel: str, pages: list[Page], repo_url: str) -> str:
    """Point the page's relative links at the site: a lesson, exercise or the ledger file becomes its
    page, anything else in the repository its address in the repository's web view."""
    by_rel = {p.rel: p.out for p in pages if p.kind != "setup"}
    base = Path(source_rel).parent

    def fix(match: re.Match) -> str:
        url = html.unescape(match.group("url"))
        parts = urllib.parse.urlsplit(url)
        if (
            parts.scheme
            or parts.netloc
            or url.startswith(("#", "/", "mailto:"))
            or not parts.path
            or url.startswith(SITE_FOLDERS)
        ):  # the site's own files (figures), not the repository's
            return match.group(0)
        target = (base / urllib.parse.unquote(parts.path)).as_posix()
        target = _normalise(target)
        frag = f"#{parts.fragment}" if parts.fragment else ""
        if target in by_rel:
            new = by_rel[target] + frag
        else:
            new = source_url(repo_url, target) + frag
        return f'{match.group("attr")}="{html.escape(new, quote=True)}"'

    return _HREF.sub(fix, page_html)


def _normalise(path: str) -> str:
    out: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if out:
                out.pop()
            continue
        out.append(part)
    return "/".join(out)


# ---------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------

PLOTLY_JS = "_static/plotly.min.js"
SITE_JS = "_static/site.js"
SEARCH_JS = "_static/search-index.js"
#: Below this width (px) of its box a figure is laid out for a phone (FIGURE_SCRIPT's ``forNarrow``):
#: the legend under the plot and side-by-side panels stacked, so the plot keeps the width.
NARROW_FIGURE_PX = 600
FIGURE_SCRIPT = """<script src="%s"></script>
<script>
function forNarrow(layout, width) {
  if (width >= NARROW) return layout;
  var margin = Object.assign({b: 40}, layout.margin || {}, {l: 50, r: 10});
  layout.margin = margin;
  // a long title wraps (plotly does not), under the mode bar rather than behind it
  var title = typeof layout.title === 'string' ? {text: layout.title} : Object.assign({}, layout.title || {});
  var lines = 0;
  if (title.text) {
    var room = Math.max(20, Math.floor((width - 20) / 9)), words = String(title.text).split(' '), out = [], line = '';
    words.forEach(function (w) {
      if (line && (line + ' ' + w).replace(/<[^>]*>/g, '').length > room) { out.push(line); line = w; }
      else line = line ? line + ' ' + w : w;
    });
    out.push(line);
    lines = out.length;
    layout.title = Object.assign(title, {text: out.join('<br>'), x: 0, xanchor: 'left', y: 1, yref: 'container',
                                         yanchor: 'top', pad: {t: 44, l: 8}});
  }
  margin.t = 40 + lines * 22 + (lines ? 20 : 0);
  // side-by-side panels (make_subplots' columns) stack, one above the other, each as wide as the box
  var xs = Object.keys(layout).filter(function (k) { return /^xaxis[0-9]*$/.test(k) && layout[k].domain; });
  var columns = {};
  xs.forEach(function (k) { columns[layout[k].domain[0].toFixed(3)] = true; });
  var n = Object.keys(columns).length > 1 ? xs.length : 1;
  var panel = 260, gapPx = 110;
  layout.height = n > 1 ? n * panel + (n - 1) * gapPx + margin.t + margin.b + 100
                        : (layout.height || 360) + 100 + lines * 22;
  var plotHeight = layout.height - margin.t - margin.b;
  if (n > 1) {
    xs.sort(function (a, b) { return layout[a].domain[0] - layout[b].domain[0]; });
    var gap = gapPx / plotHeight, each = (1 - gap * (n - 1)) / n;
    var titles = (layout.annotations || []).filter(function (a) { return a.xref === 'paper' && a.yref === 'paper'; });
    var moves = xs.map(function (k, i) {
      var old = layout[k].domain, top = 1 - i * (each + gap), ykey = 'yaxis' + (layout[k].anchor || 'y').slice(1);
      layout[k] = Object.assign({}, layout[k], {domain: [0, 1]});
      if (layout[ykey]) layout[ykey] = Object.assign({}, layout[ykey], {domain: [top - each, top]});
      return [(old[0] + old[1]) / 2, top];
    });
    titles.forEach(function (a) {  // a panel's title (over its old column) moves with the panel
      var move = moves.filter(function (m) { return Math.abs(a.x - m[0]) < 0.01; })[0];
      if (move) { a.x = 0.5; a.y = move[1]; }
    });
  }
  // the legend under the plot, across the width (not two thirds of it at the side)
  layout.legend = Object.assign({}, layout.legend || {},
    {orientation: 'h', x: 0, xanchor: 'left', y: -80 / plotHeight, yanchor: 'top'});
  return layout;
}
var NARROW = NARROW_PX;
document.querySelectorAll('.nc-plotly').forEach(function (box) {
  var spec = JSON.parse(box.querySelector('script.nc-plotly-json').textContent);
  var plot = box.querySelector('.nc-plotly-live');
  if (!window.Plotly) return;  // the static image stays
  var layout = forNarrow(Object.assign({}, spec.layout || {}), box.clientWidth);
  delete layout.width;  // the box's width, so a phone shows the whole figure
  Plotly.newPlot(plot, spec.data || [], layout, {responsive: true}).then(function () {
    box.classList.add('nc-plotly-drawn');
    if (window.ncMarkScrollers) window.ncMarkScrollers();  // a drawn figure may now scroll
  });
});
</script>""".replace("NARROW_PX", str(NARROW_FIGURE_PX))


def _plotly_output_html(data: dict, alt: str = "") -> str:
    """An output's plotly figure as HTML: the static PNG (shown without scripts), a box that
    plotly.js draws the interactive figure into, and the figure's JSON."""
    spec = json_for_script(data[PLOTLY_MIME])
    png = data.get("image/png")
    static = (
        f'<img class="nc-plotly-static" alt="{html.escape(alt or "Figure", quote=True)}" '
        f'src="data:image/png;base64,{png.strip()}">'
        if png
        else '<p class="nc-plotly-missing">This figure has no static image: run the notebook to see it.</p>'
    )
    return (
        f'<div class="nc-plotly" role="figure" aria-label="{html.escape(alt or "Figure", quote=True)}">{static}'
        f'<div class="nc-plotly-live"></div>'
        f'<script type="application/json" class="nc-plotly-json">{spec}</script></div>'
    )


def prepare_notebook(nb, *, launch: str = "", page_label: str = "this lesson") -> int:
    """What the page shows of ``nb`` (in place; see :mod:`nodecourse.course.site_notebook`); the
    count of plotly figures."""
    return site_notebook.prepare_notebook(nb, launch=launch, page_label=page_label, plotly_html=_plotly_output_html)


# ---------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------

PAGE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{# nothing on these pages needs require.js, mermaid or MathJax (nbconvert would load each from a CDN;
   formulas are MathML, converted when the site is built) #}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{# nbconvert's image block, with a description (alt) that prepare_notebook gives each image #}
{% block data_png scoped %}
<div class="jp-RenderedImage jp-OutputArea-output {{ extra_class }}">
<img src="data:image/png;base64,{{ output.data['image/png'] | escape_html }}" alt="{{ output.metadata.get('nc_alt', 'Figure') | escape_html }}">
</div>
{% endblock data_png %}
{# a folded cell (site_notebook.folds): its code behind a "show the code" fold, its output shown #}
{% block input_group -%}
{%- if cell.metadata.get('nc_fold') -%}
<details class="nc-fold"><summary>{{ cell.metadata.get('nc_fold') | escape_html }}</summary>{{ super() }}</details>
{%- else -%}{{ super() }}{%- endif -%}
{%- endblock input_group %}
{% block extra_css %}<meta name="description" content="{{ resources.metadata.name | escape_html }}"><link rel="stylesheet" href="_static/site.css">{% endblock extra_css %}
{# the figures' script goes inside <body>, with the site's (site._finish), not after it #}
{% block footer_js %}{% endblock footer_js %}
"""  # noqa: E501 (HTML template lines)


def _exporter():
    from jinja2 import DictLoader, pass_context
    from nbconvert import HTMLExporter
    from nbconvert.filters.markdown_mistune import MarkdownWithMath

    class CourseExporter(HTMLExporter):
        """nbconvert's lab HTML with formulas as MathML and markdown tables repaired."""

        @pass_context
        def markdown2html(self, context, source):  # the same arguments as nbconvert's filter
            cell = context.get("cell", {})
            renderer = site_markdown.CourseRenderer(
                escape=False,
                attachments=cell.get("attachments", {}),
                embed_images=self.embed_images,
                path=context.get("resources", {}).get("metadata", {}).get("path", ""),
                anchor_link_text=self.anchor_link_text,
                exclude_anchor_links=self.exclude_anchor_links,
                **self.lexer_options,
            )
            return MarkdownWithMath(renderer=renderer).render(site_markdown.repair_table_pipes(source))

    exporter = CourseExporter(template_name="lab", extra_loaders=[DictLoader({"nc_page.html.j2": PAGE_TEMPLATE})])
    exporter.template_file = "nc_page.html.j2"
    return exporter


def lesson_number(page: Page) -> int:
    return int(page.source.name.split("_", 1)[0])


def page_label(page: Page) -> str:
    """How a link names the page: "lesson 3", "exercise 3", or the page's title."""
    if page.kind in ("lesson", "exercise"):
        return f"{page.kind} {lesson_number(page)}"
    return page.title


def _nav(
    page: Page | None, repo_url: str, *, has_ledger: bool, partner: Page | None = None, pages: tuple[Page, ...] = ()
) -> str:
    links = ['<a href="index.html">Course home</a>', '<a href="setup.html">Set-up</a>']
    present = {p.out for p in pages}
    links += [f'<a href="{out}">{html.escape(label)}</a>' for _, out, _, label in GUIDES if label and out in present]
    if site_api.INDEX_PAGE in present:
        links.append(f'<a href="{site_api.INDEX_PAGE}">API reference</a>')
    if has_ledger:
        links.append('<a href="ledger.html">The course\'s claims ledger</a>')
    links.append(site_page.search_box())
    actions = []
    if page is not None and page.kind in ("lesson", "exercise"):
        label = page_label(page)
        if partner is not None:
            other = page_label(partner)
            text = f"{other.capitalize()}: its tasks" if partner.kind == "exercise" else f"Back to {other}"
            actions.append(f'<a class="nc-partner" href="{partner.out}">{html.escape(text)}</a>')
        actions.append(
            f'<a class="nc-binder" href="{html.escape(binder_url(repo_url, page.rel))}">'
            f"Run {html.escape(label)} on Binder</a>"
        )
        actions.append(
            f'<a class="nc-download" href="download/{page.rel}" download>Download {html.escape(label)} (notebook)</a>'
        )
    action_html = f'<span class="nc-actions">{"".join(actions)}</span>' if actions else ""
    return f'<nav class="nc-site-nav" aria-label="The course">{" ".join(links)}{action_html}</nav>'


def short_title(page: Page) -> str:
    """The page's title without its leading number ("3 · What a flow..." -> "What a flow...")."""
    return re.sub(r"^\d+\s*·\s*", "", page.title)


def _pager(prev: Page | None, nxt: Page | None, where: str) -> str:
    """Previous/next links (``where``: "top" or "bottom", so each has its own class)."""
    parts = []
    if prev is not None:
        label = html.escape(page_label(prev).capitalize())
        parts.append(
            f'<a class="nc-prev" rel="prev" href="{prev.out}">&larr; {label}: {html.escape(short_title(prev))}</a>'
        )
    if nxt is not None:
        parts.append(
            f'<a class="nc-next" rel="next" href="{nxt.out}">{html.escape(page_label(nxt).capitalize())}: '
            f"{html.escape(short_title(nxt))} &rarr;</a>"
        )
    if where == "bottom":
        parts.append('<a class="nc-top" href="#">Back to the top</a>')
    if not parts:
        return ""
    return f'<nav class="nc-pager nc-pager-{where}" aria-label="Previous and next ({where})">{"".join(parts)}</nav>'


def _markdown_page(title: str, body_md: str, *, github_ids: bool = False) -> str:
    return _html_page(title, site_markdown.markdown_to_html(body_md, github_ids=github_ids))


def _html_page(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1.0">'
        f'<title>{html.escape(title)}</title><link rel="stylesheet" href="_static/site.css"></head>'
        f'<body class="nc-plain"><main>{body}</main></body></html>\n'
    )


#: The ledger's section that holds the generated report (``nodecourse claims --format markdown``).
LEDGER_REPORT = "The report"
#: A ledger's opening prose longer than this (characters) goes after the report, under
#: :data:`LEDGER_ABOUT`: the page opens with the report, not with how the run was made.
LEDGER_LEAD_CHARS = 700
LEDGER_ABOUT = "How this run was made"


def ledger_report_first(markdown: str) -> str:
    """``docs/ledger-full.md`` in the order a reader wants it: its title, a short opening paragraph
    (when it is short), the report (its ``## The report`` section: the summary and the table), then
    every other section in its order. A long opening (how the run was made, what changed) moves
    after the report under "## How this run was made". A file without ``## The report`` is shown
    as it is."""
    parts = re.split(r"(?m)^(?=## )", markdown)
    head, sections = parts[0], parts[1:]
    report = [s for s in sections if s.splitlines()[0][3:].strip() == LEDGER_REPORT]
    if not report:
        return markdown
    title, _, lead = head.partition("\n") if head.startswith("# ") else ("", "", head)
    rest = [s for s in sections if s is not report[0]]
    if len(lead.strip()) > LEDGER_LEAD_CHARS:
        rest.insert(0, f"## {LEDGER_ABOUT}\n\n{lead.strip()}\n\n")
        lead = ""
    opening = "\n\n".join(x for x in (title.strip(), lead.strip()) if x)
    return opening + "\n\n" + report[0].rstrip() + "\n\n" + "".join(rest)


def readme_setup(root: Path) -> str:
    """The README's set-up sections (:data:`SETUP_SECTIONS`) as markdown, with the course's intro."""
    text = (root / "README.md").read_text(encoding="utf-8")
    sections = re.split(r"(?m)^## ", text)
    chosen = [f"## {s}" for s in sections[1:] if s.splitlines()[0].strip() in SETUP_SECTIONS]
    return "# Setting up the course\n\n" + "\n".join(chosen)


_HEAD_STYLE = re.compile(r"<style[^>]*>(.*?)</style>", re.DOTALL)


def styles_to_files(page_html: str, out: Path) -> str:
    """``page_html`` with each ``<style>`` of its ``<head>`` (nbconvert's theme: about 262 KB, the
    same on every page) written once to ``_static/nb-<hash>.css`` and linked in its place, so a
    browser loads it once for the whole site. Styles in the body (an output's own) stay."""
    import hashlib

    head_end = page_html.find("</head>")
    if head_end < 0:
        return page_html

    def to_file(match: re.Match) -> str:
        css = match.group(1)
        name = f"_static/nb-{hashlib.sha256(css.encode('utf-8')).hexdigest()[:12]}.css"
        target = out / name
        if not target.is_file():
            target.write_text(css, encoding="utf-8")
        return f'<link rel="stylesheet" href="{name}">'

    return _HEAD_STYLE.sub(to_file, page_html[:head_end]) + DARK_THEME_LINK + page_html[head_end:]


#: nbconvert's dark JupyterLab theme (its lab template's ``static/theme-dark.css``), for a reader
#: whose system asks for dark colours; the site's stylesheet sets its own colours over it.
DARK_THEME = "_static/theme-dark.css"
DARK_THEME_LINK = f'<link rel="stylesheet" href="{DARK_THEME}" media="(prefers-color-scheme: dark)">'


def _copy_dark_theme(exporter, out: Path) -> None:
    for folder in exporter.template_paths:
        source = Path(folder) / "static" / "theme-dark.css"
        if source.is_file():
            shutil.copy2(source, out / DARK_THEME)
            return
    raise FileNotFoundError(
        f"nbconvert's lab template has no static/theme-dark.css in {exporter.template_paths}: "
        "reinstall nbconvert (make setup)"
    )


def _finish(
    body: str,
    *,
    page: Page | None,
    pages: list[Page],
    repo_url: str,
    nav: str,
    top: str,
    bottom: str,
    stamp: str,
    figure_js: str = "",
) -> str:
    """The page's own links rewritten (rewrite_links), then the navigation, footer and scripts put in
    (the site's, then ``figure_js``, the plotly figures' script, all at the end of ``<body>``)."""
    if page is not None and page.kind != "api":  # the reference links only to its own pages
        body = rewrite_links(body, page.rel, pages, repo_url)
    body = body.replace(site_page.NAV_MARK, nav + top, 1).replace(site_page.PAGER_MARK, bottom + stamp, 1)
    scripts = f'<script src="{SEARCH_JS}"></script><script src="{SITE_JS}"></script>{figure_js}'
    return body.replace("</body>", scripts + "</body>", 1)


def build(root: Path, out: Path, *, date: str | None = None) -> list[Path]:
    """Write the site of the course at ``root`` into ``out`` (emptied first); the pages written.
    ``date`` (YYYY-MM-DD) goes in every page's footer; today's (UTC) by default."""
    import datetime

    import nbformat
    import plotly

    from nodecourse import __version__

    repo_url = repository_url(root)
    pages = site_pages(root)
    if out.exists():
        shutil.rmtree(out)
    (out / "_static").mkdir(parents=True)
    (out / "_static" / "site.css").write_text(site_assets.SITE_CSS, encoding="utf-8")
    (out / SITE_JS).write_text(site_assets.SITE_JS, encoding="utf-8")
    shutil.copy2(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", out / PLOTLY_JS)
    stamp = site_page.footer(
        __version__, date or datetime.datetime.now(datetime.timezone.utc).date().isoformat(), repo_url
    )

    exporter = _exporter()
    _copy_dark_theme(exporter, out)
    written = []
    index_entries: list[dict] = []
    has_ledger = any(p.kind == "ledger" for p in pages)
    lessons = [p for p in pages if p.kind == "lesson"]
    exercises = [p for p in pages if p.kind == "exercise"]
    partners = {}
    for ex in exercises:
        lesson = next((p for p in lessons if lesson_number(p) == lesson_number(ex)), None)
        if lesson is not None:
            partners[ex.out], partners[lesson.out] = lesson, ex
    for page in pages:
        prev = nxt = None
        figures = 0
        if page.kind in ("lesson", "exercise"):
            group = lessons if page.kind == "lesson" else exercises
            i = group.index(page)
            prev, nxt = (group[i - 1] if i else None), (group[i + 1] if i + 1 < len(group) else None)
            nb = nbformat.read(page.source, as_version=4)
            figures = prepare_notebook(nb, launch=binder_url(repo_url, page.rel), page_label=page_label(page))
            raw, _ = exporter.from_notebook_node(
                nb,
                resources={"metadata": {"name": page.title}},
            )
            raw = styles_to_files(raw, out)
            download = out / "download" / page.rel
            download.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(page.source, download)
        elif page.kind == "ledger":
            raw = _markdown_page(page.title, ledger_report_first(page.source.read_text(encoding="utf-8")))
        elif page.kind == "guide":
            raw = _markdown_page(page.title, page.source.read_text(encoding="utf-8"), github_ids=True)
        elif page.kind == "api":
            raw = _html_page(*(site_api.package_page(page.package) if page.package else site_api.index_page()))
        else:
            raw = _markdown_page(page.title, readme_setup(root))
        images: dict[str, bytes] = {}
        shaped, _ = site_page.shape(raw, label=page_label(page), images=images, stem=Path(page.out).stem)
        for name, data in images.items():
            (out / name).parent.mkdir(exist_ok=True)
            (out / name).write_bytes(data)
        index_entries += site_page.search_entries(shaped, page=page.title, url=page.out)
        body = _finish(
            shaped,
            page=page,
            pages=pages,
            repo_url=repo_url,
            nav=_nav(page, repo_url, has_ledger=has_ledger, partner=partners.get(page.out), pages=tuple(pages)),
            top=_pager(prev, nxt, "top"),
            bottom=_pager(prev, nxt, "bottom"),
            stamp=stamp,
            figure_js=FIGURE_SCRIPT % PLOTLY_JS if figures else "",
        )
        (out / page.out).write_text(body, encoding="utf-8")
        written.append(out / page.out)
    (out / SEARCH_JS).write_text(f"window.NC_SEARCH = {json_for_script(index_entries)};\n", encoding="utf-8")
    index = site_page.shape(_index(pages, repo_url, has_ledger), label="the course")[0]
    (out / "index.html").write_text(
        _finish(
            index,
            page=None,
            pages=pages,
            repo_url=repo_url,
            nav=_nav(None, repo_url, has_ledger=has_ledger, pages=tuple(pages)),
            top="",
            bottom="",
            stamp=stamp,
        ),
        encoding="utf-8",
    )
    written.append(out / "index.html")
    return written


def _index(pages: list[Page], repo_url: str, has_ledger: bool) -> str:
    exercise_of = {lesson_number(p): p for p in pages if p.kind == "exercise"}
    rows = []
    for p in (p for p in pages if p.kind == "lesson"):
        n = lesson_number(p)
        ex = exercise_of.get(n)
        ex_link = f'<a href="{ex.out}">Exercise {n}</a>' if ex else ""
        rows.append(
            f'<tr><td><a class="nc-lesson" href="{p.out}">{html.escape(p.title)}</a></td><td>{ex_link}</td>'
            f'<td><a href="{html.escape(binder_url(repo_url, p.rel))}">Run lesson {n} on Binder</a></td>'
            f'<td><a href="download/{p.rel}" download>Download lesson {n} (notebook)</a></td></tr>'
        )
    body = (
        '<h1 id="nodecourse">nodecourse: neural ODEs and implicit networks</h1>'
        "<p>The course's lessons as they were executed (quick mode), with their figures; each can be run "
        "on Binder or downloaded. To work through the course on your own machine, see the "
        '<a href="setup.html">set-up</a>; the guides and the API reference are in the navigation above.'
        + (
            ' Every published claim the course reproduces is in the <a href="ledger.html">claims ledger</a>.'
            if has_ledger
            else ""
        )
        + "</p>"
        '<h2 id="lessons">Lessons</h2>'
        f"<table><tr><th>lesson</th><th>exercise</th><th>run</th><th>notebook</th></tr>{''.join(rows)}</table>"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1.0">'
        f'<title>nodecourse</title><link rel="stylesheet" href="_static/site.css"></head>'
        f'<body class="nc-plain"><main>{body}</main></body></html>\n'
    )


# ---------------------------------------------------------------------------
# checking the built site
# ---------------------------------------------------------------------------


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.refs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("id", "name"):
            if attrs.get(name):
                self.ids.add(attrs[name])
        for name in ("href", "src"):
            if attrs.get(name) and not (tag == "a" and name == "src"):
                self.refs.append(attrs[name])


def broken_links(site: Path) -> list[str]:
    """``page: link`` for every internal link (href/src without a scheme) of the site's HTML pages
    whose file does not exist, or whose #anchor names no element of its page."""
    parsed: dict[Path, _Refs] = {}
    for page in sorted(site.resolve().rglob("*.html")):
        refs = _Refs()
        refs.feed(page.read_text(encoding="utf-8"))
        parsed[page] = refs
    root = site.resolve()
    broken = []
    for page, refs in parsed.items():
        for ref in refs.refs:
            parts = urllib.parse.urlsplit(ref)
            if parts.scheme or parts.netloc:
                continue
            target = (page.parent / urllib.parse.unquote(parts.path)).resolve() if parts.path else page
            if not target.is_file() or root not in target.parents:
                broken.append(f"{page.relative_to(root)}: {ref}")
            elif (
                parts.fragment
                and target in parsed  # a browser tries the fragment as written, then decoded
                and not {parts.fragment, urllib.parse.unquote(parts.fragment)} & parsed[target].ids
            ):
                broken.append(f"{page.relative_to(root)}: {ref} (no such anchor)")
    return broken


def main(root: Path, out: Path) -> int:
    import sys
    import time

    start = time.perf_counter()
    written = build(root, out)
    broken = broken_links(out)
    for line in broken:
        print(f"broken link: {line}", file=sys.stderr)
    print(f"site: {len(written)} pages in {out} ({time.perf_counter() - start:.0f} s); open {out / 'index.html'}")
    return 1 if broken else 0
