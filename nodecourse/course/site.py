"""The course as a static website, and the Binder links, from one setting.

``nodecourse site`` (``make site``) renders the committed, executed notebooks with nbconvert into
``site/``: an index, one page per lesson (``notebooks/NN_*.ipynb``, whatever lessons exist, in
order of their number), one per exercise (``exercises/*.ipynb``: the tasks, without solutions),
the claims ledger (``docs/ledger-full.md``) and the README's set-up. Each lesson page links to run
it on Binder and to download the notebook. Nothing is fetched while building: nbconvert's own
``lab`` template and the plotly.js that the plotly package ships are all it uses.

Figures: a plotly output is drawn interactively by plotly.js where scripts run; its static PNG
(``nodecourse.plotting.RENDERER`` stores one beside the JSON) is in the page first, so a reader
without JavaScript sees it. Math is typeset by MathJax from its CDN when the reader is online
(nbconvert's default); offline, the TeX source shows.

The repository's address is written once, as ``Repository`` in pyproject.toml's
``[project.urls]``: the README's Binder badge (``nodecourse site --update-readme`` rewrites it) and
every Binder link of the site are made from it.
"""
from __future__ import annotations

import html
import json
import re
import shutil
import tomllib
import urllib.parse
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

START_NOTEBOOK = "notebooks/00_start_here.ipynb"
BINDER = "https://mybinder.org"
BADGE_PREFIX = f"[![Binder]({BINDER}/badge_logo.svg)]("
PLOTLY_MIME = "application/vnd.plotly.v1+json"
LESSON_FILE = re.compile(r"^(\d+)_[^/]+\.ipynb$")
#: The README's sections that make the site's set-up page (by their "## " heading).
SETUP_SECTIONS = ("The two commands", "Starting the course", "Exercises and grading")


# ---------------------------------------------------------------------------
# the one setting: the repository's address, and the Binder links made from it
# ---------------------------------------------------------------------------

def repository_url(root: Path) -> str:
    """``Repository`` of ``[project.urls]`` in ``root``/pyproject.toml, without a trailing slash or ``.git``."""
    urls = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"].get("urls", {})
    url = urls.get("Repository")
    if not url:
        raise ValueError(f"{root / 'pyproject.toml'} has no Repository in [project.urls]: add "
                         'Repository = "https://github.com/OWNER/NAME"')
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
    source: Path   # the notebook or markdown file, in the repository
    rel: str       # its path relative to the repository root
    out: str       # the page's file name in the site
    title: str
    kind: str      # "lesson", "exercise", "ledger", "setup"


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
    pages = [Page(p, p.relative_to(root).as_posix(), f"{p.stem}.html", _notebook_title(p), "lesson")
             for p in lesson_notebooks(root)]
    pages += [Page(p, p.relative_to(root).as_posix(), f"{p.stem}.html", _notebook_title(p), "exercise")
              for p in exercise_notebooks(root)]
    ledger = root / "docs" / "ledger-full.md"
    if ledger.is_file():
        pages.append(Page(ledger, "docs/ledger-full.md", "ledger.html", "The claims ledger (full mode)", "ledger"))
    pages.append(Page(root / "README.md", "README.md", "setup.html", "Setting up the course", "setup"))
    return pages


# ---------------------------------------------------------------------------
# links: repository paths to site pages
# ---------------------------------------------------------------------------

_HREF = re.compile(r'(?P<attr><a\s(?:[^>]*?\s)?href)="(?P<url>[^"]*)"')  # links (<a>) only, not stylesheets


def rewrite_links(page_html: str, source_rel: str, pages: list[Page], repo_url: str) -> str:
    """Point the page's relative links at the site: a lesson, exercise or the ledger file becomes its
    page, anything else in the repository its address in the repository's web view."""
    by_rel = {p.rel: p.out for p in pages if p.kind != "setup"}
    base = Path(source_rel).parent

    def fix(match: re.Match) -> str:
        url = html.unescape(match.group("url"))
        parts = urllib.parse.urlsplit(url)
        if parts.scheme or parts.netloc or url.startswith(("#", "/", "mailto:")) or not parts.path:
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
FIGURE_SCRIPT = """<script src="%s"></script>
<script>
document.querySelectorAll('.nc-plotly').forEach(function (box) {
  var spec = JSON.parse(box.querySelector('script.nc-plotly-json').textContent);
  var plot = box.querySelector('.nc-plotly-live');
  if (!window.Plotly) return;  // the static image stays
  Plotly.newPlot(plot, spec.data || [], spec.layout || {}, {responsive: true}).then(function () {
    box.classList.add('nc-plotly-drawn');
  });
});
</script>"""


def _plotly_output_html(data: dict) -> str:
    """An output's plotly figure as HTML: the static PNG (shown without scripts), a box that
    plotly.js draws the interactive figure into, and the figure's JSON."""
    spec = json.dumps(data[PLOTLY_MIME]).replace("</", "<\\/")
    png = data.get("image/png")
    title = ((data[PLOTLY_MIME].get("layout") or {}).get("title") or {})
    alt = title.get("text") if isinstance(title, dict) else str(title)
    static = (f'<img class="nc-plotly-static" alt="{html.escape(alt or "figure", quote=True)}" '
              f'src="data:image/png;base64,{png.strip()}">' if png else
              '<p class="nc-plotly-missing">This figure has no static image: run the notebook to see it.</p>')
    return (f'<div class="nc-plotly">{static}<div class="nc-plotly-live"></div>'
            f'<script type="application/json" class="nc-plotly-json">{spec}</script></div>')


_TITLE_CALL = re.compile(r"""(?:set_title|suptitle|title)\(\s*f?(["'])(.+?)\1""")


def _image_alt(source: str) -> str:
    """A description of a matplotlib figure from its cell's code: the titles it sets (a figure
    without one is described as the output of the code above it)."""
    titles = [re.sub(r"\{[^}]*\}", "…", m.group(2)) for m in _TITLE_CALL.finditer(source)]
    return "Figure: " + "; ".join(titles) if titles else "Figure drawn by the code cell above"


def prepare_notebook(nb) -> int:
    """Replace each plotly output's data by its HTML (:func:`_plotly_output_html`) and give each
    other image a description (``alt``, from the titles its cell sets); the count of plotly figures."""
    count = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data = out.get("data", {})
            if PLOTLY_MIME in data:
                out["data"] = {"text/html": _plotly_output_html(data)}
                count += 1
            elif "image/png" in data:
                out.setdefault("metadata", {})["nc_alt"] = _image_alt(cell.source)
    return count


# ---------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------

PAGE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{# nothing on these pages needs require.js or mermaid (nbconvert would load both from a CDN) #}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{# nbconvert's image block, with a description (alt) that prepare_notebook gives each image #}
{% block data_png scoped %}
<div class="jp-RenderedImage jp-OutputArea-output {{ extra_class }}">
<img src="data:image/png;base64,{{ output.data['image/png'] | escape_html }}" alt="{{ output.metadata.get('nc_alt', 'Figure') | escape_html }}">
</div>
{% endblock data_png %}
{% block extra_css %}<link rel="stylesheet" href="_static/site.css">{% endblock extra_css %}
{%- block body_header -%}
{{ super() }}
{{ resources.nc_nav }}
{%- endblock body_header -%}
{% block footer_js %}{{ resources.nc_footer_js }}{% endblock footer_js %}
"""  # noqa: E501 (an HTML template line)

SITE_CSS = """
.nc-site-nav { font-family: system-ui, sans-serif; padding: 0.6em 1em; margin-bottom: 1em;
  border-bottom: 1px solid #ccc; display: flex; flex-wrap: wrap; gap: 0.4em 1.2em; align-items: center; }
.nc-site-nav a { text-decoration: none; }
.nc-site-nav .nc-actions { margin-left: auto; display: flex; gap: 1em; }
.nc-plotly { position: relative; }
.nc-plotly-drawn .nc-plotly-static { display: none; }
.nc-plotly-static { max-width: 100%; }
.nc-plotly-missing { color: #a00; }
body.nc-plain { font-family: system-ui, sans-serif; max-width: 60em; margin: 0 auto; padding: 0 1em 3em; }
body.nc-plain table { border-collapse: collapse; font-size: 0.9em; }
body.nc-plain td, body.nc-plain th { border: 1px solid #ccc; padding: 0.3em 0.5em; vertical-align: top; }
"""


#: Where a page's navigation goes: put in after the page's own links are rewritten (rewrite_links).
NAV_MARK = "<!-- nodecourse-site-nav -->"


def _nav(page: Page | None, repo_url: str, prev: Page | None = None, nxt: Page | None = None, *,
         has_ledger: bool) -> str:
    links = ['<a href="index.html">Course home</a>', '<a href="setup.html">Set-up</a>']
    if has_ledger:
        links.append('<a href="ledger.html">Claims ledger</a>')
    if prev is not None:
        links.append(f'<a class="nc-prev" href="{prev.out}">&larr; {html.escape(prev.title)}</a>')
    if nxt is not None:
        links.append(f'<a class="nc-next" href="{nxt.out}">{html.escape(nxt.title)} &rarr;</a>')
    actions = ""
    if page is not None and page.kind in ("lesson", "exercise"):
        binder = html.escape(binder_url(repo_url, page.rel))
        actions = (f'<span class="nc-actions"><a class="nc-binder" href="{binder}">'
                   f'Run it on Binder</a><a class="nc-download" href="download/{page.rel}" download>'
                   f'Download the notebook</a></span>')
    return f'<nav class="nc-site-nav">{" ".join(links)}{actions}</nav>'


def _markdown_page(title: str, body_md: str, nav: str) -> str:
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    body = markdown2html_mistune(body_md)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1.0">'
            f'<title>{html.escape(title)}</title><link rel="stylesheet" href="_static/site.css"></head>'
            f'<body class="nc-plain">{nav}<main>{body}</main></body></html>\n')


def readme_setup(root: Path) -> str:
    """The README's set-up sections (:data:`SETUP_SECTIONS`) as markdown, with the course's intro."""
    text = (root / "README.md").read_text(encoding="utf-8")
    sections = re.split(r"(?m)^## ", text)
    chosen = [f"## {s}" for s in sections[1:] if s.splitlines()[0].strip() in SETUP_SECTIONS]
    return "# Setting up the course\n\n" + "\n".join(chosen)


def build(root: Path, out: Path) -> list[Path]:
    """Write the site of the course at ``root`` into ``out`` (emptied first); the pages written."""
    import nbformat
    import plotly
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    repo_url = repository_url(root)
    pages = site_pages(root)
    if out.exists():
        shutil.rmtree(out)
    (out / "_static").mkdir(parents=True)
    (out / "_static" / "site.css").write_text(SITE_CSS, encoding="utf-8")
    shutil.copy2(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", out / PLOTLY_JS)

    exporter = HTMLExporter(template_name="lab", extra_loaders=[DictLoader({"nc_page.html.j2": PAGE_TEMPLATE})])
    exporter.template_file = "nc_page.html.j2"
    written = []
    has_ledger = any(p.kind == "ledger" for p in pages)
    lessons = [p for p in pages if p.kind == "lesson"]
    exercises = [p for p in pages if p.kind == "exercise"]
    for page in pages:
        if page.kind in ("lesson", "exercise"):
            group = lessons if page.kind == "lesson" else exercises
            i = group.index(page)
            nav = _nav(page, repo_url, group[i - 1] if i else None, group[i + 1] if i + 1 < len(group) else None,
                       has_ledger=has_ledger)
            nb = nbformat.read(page.source, as_version=4)
            figures = prepare_notebook(nb)
            body, _ = exporter.from_notebook_node(nb, resources={
                "metadata": {"name": page.title}, "nc_nav": NAV_MARK,
                "nc_footer_js": FIGURE_SCRIPT % PLOTLY_JS if figures else ""})
            body = rewrite_links(body, page.rel, pages, repo_url).replace(NAV_MARK, nav, 1)
            download = out / "download" / page.rel
            download.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(page.source, download)
        elif page.kind == "ledger":
            md = page.source.read_text(encoding="utf-8")
            body = rewrite_links(_markdown_page(page.title, md, NAV_MARK), page.rel, pages, repo_url)
            body = body.replace(NAV_MARK, _nav(page, repo_url, has_ledger=True), 1)
        else:
            body = rewrite_links(_markdown_page(page.title, readme_setup(root), NAV_MARK), page.rel, pages, repo_url)
            body = body.replace(NAV_MARK, _nav(page, repo_url, has_ledger=has_ledger), 1)
        (out / page.out).write_text(body, encoding="utf-8")
        written.append(out / page.out)
    (out / "index.html").write_text(_index(pages, repo_url, has_ledger), encoding="utf-8")
    written.append(out / "index.html")
    return written


def _index(pages: list[Page], repo_url: str, has_ledger: bool) -> str:
    exercise_of = {p.source.name.split("_", 1)[0]: p for p in pages if p.kind == "exercise"}
    rows = []
    for p in (p for p in pages if p.kind == "lesson"):
        ex = exercise_of.get(p.source.name.split("_", 1)[0])
        ex_link = f'<a href="{ex.out}">exercise</a>' if ex else ""
        rows.append(
            f'<tr><td><a class="nc-lesson" href="{p.out}">{html.escape(p.title)}</a></td><td>{ex_link}</td>'
            f'<td><a href="{html.escape(binder_url(repo_url, p.rel))}">run on Binder</a></td>'
            f'<td><a href="download/{p.rel}" download>notebook</a></td></tr>')
    body = (
        "<h1>nodecourse: neural ODEs and implicit networks</h1>"
        "<p>The course's lessons as they were executed (quick mode), with their figures; each can be run "
        "on Binder or downloaded. To work through the course on your own machine, see the "
        '<a href="setup.html">set-up</a>.'
        + (' Every published claim the course reproduces is in the <a href="ledger.html">claims ledger</a>.'
           if has_ledger else "") + "</p>"
        f'<table><tr><th>lesson</th><th>exercise</th><th></th><th></th></tr>{"".join(rows)}</table>'
        f'<p><a href="{html.escape(repo_url)}">The repository</a></p>'
    )
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1.0">'
            f'<title>nodecourse</title><link rel="stylesheet" href="_static/site.css"></head>'
            f'<body class="nc-plain">{_nav(None, repo_url, has_ledger=has_ledger)}<main>{body}</main></body></html>\n')


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
            elif (parts.fragment and target in parsed  # a browser tries the fragment as written, then decoded
                  and not {parts.fragment, urllib.parse.unquote(parts.fragment)} & parsed[target].ids):
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
