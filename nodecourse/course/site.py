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
  that fit a phone, code colours at 4.5:1 or better) and the script (copy buttons, search);
- :mod:`~nodecourse.course.site_nbconvert`: the page template, the exporter that fills it, and
  nbconvert's theme stylesheets written once for the whole site;
- :mod:`~nodecourse.course.site_figures`: plotly figures, drawn interactively by plotly.js where
  scripts run, with the static PNG (``nodecourse.plotting.RENDERER`` stores one beside the JSON)
  in the page first, so a reader without JavaScript sees it;
- :mod:`~nodecourse.course.site_urls`: the repository's address, written once, as ``Repository``
  in pyproject.toml's ``[project.urls]``, and what is made from it: the README's Binder badge
  (``nodecourse site --update-readme`` rewrites it) and every Binder link of the site;
- :mod:`~nodecourse.course.site_links`: the built site's link check.

This module holds the build's own steps in order: the pages, their links and navigation, the
index, then the link check.
"""

from __future__ import annotations

import html
import re
import shutil
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from nodecourse.course import site_api, site_assets, site_markdown, site_nbconvert, site_notebook, site_page
from nodecourse.course.site_figures import FIGURE_SCRIPT, plotly_output_html
from nodecourse.course.site_links import broken_links
from nodecourse.course.site_notebook import json_for_script
from nodecourse.course.site_urls import binder_url, repository_url, source_url

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


def prepare_notebook(nb, *, launch: str = "", page_label: str = "this lesson") -> int:
    """What the page shows of ``nb`` (in place; see :mod:`nodecourse.course.site_notebook`); the
    count of plotly figures."""
    return site_notebook.prepare_notebook(nb, launch=launch, page_label=page_label, plotly_html=plotly_output_html)


# ---------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------


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

    exporter = site_nbconvert.exporter()
    site_nbconvert.copy_dark_theme(exporter, out)
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
            raw = site_nbconvert.styles_to_files(raw, out)
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
