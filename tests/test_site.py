"""The course website (`make site`, nodecourse/course/site.py), the Binder links made from one
setting, and the static image beside every plotly figure of the committed lessons.

The site is built once into a temporary folder (about 20 s: the tests that read it are marked
slow); the browser test (tests/test_site_browser.py) opens it in Chromium.
"""

from __future__ import annotations

import base64
import html
import json
import logging
import re
import shutil
import warnings
from pathlib import Path

import nbformat
import pytest

from nodecourse.course import (
    site,
    site_api,
    site_assets,
    site_links,
    site_markdown,
    site_nbconvert,
    site_notebook,
    site_urls,
)
from nodecourse.course.notebook_hygiene import LIVE_WIDGET_TEXT
from notebook_fixtures import REPO

PLOTLY = site_notebook.PLOTLY_MIME


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "site"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        handler = _Collect()
        logging.getLogger().addHandler(handler)
        try:
            site.build(REPO, out)
        finally:
            logging.getLogger().removeHandler(handler)
    return out, [str(w.message) for w in caught], handler.records


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.records: list[str] = []

    def emit(self, record):
        self.records.append(record.getMessage())


# ---------------------------------------------------------------------------
# Binder: one setting
# ---------------------------------------------------------------------------


def test_the_readme_badge_is_made_from_pyprojects_repository_url():
    repo = site_urls.repository_url(REPO)
    assert re.fullmatch(r"https://\S+", repo), repo
    assert site_urls.readme_badge(REPO) == site_urls.binder_badge(REPO), (
        "README.md's Binder badge differs from pyproject.toml's [project.urls] Repository: "
        "run `nodecourse site --update-readme`"
    )
    assert "labpath=notebooks%2F00_start_here.ipynb" in site_urls.binder_badge(REPO)


def test_binder_urls_for_github_gitlab_and_any_git_host():
    assert site_urls.binder_url("https://github.com/me/fork", "notebooks/03_annulus.ipynb") == (
        "https://mybinder.org/v2/gh/me/fork/HEAD?labpath=notebooks%2F03_annulus.ipynb"
    )
    assert site_urls.binder_url("https://gitlab.com/group/sub/course") == (
        "https://mybinder.org/v2/gl/group%2Fsub%2Fcourse/HEAD"
    )
    assert site_urls.binder_url("https://git.example.org/course") == (
        "https://mybinder.org/v2/git/https%3A%2F%2Fgit.example.org%2Fcourse/HEAD"
    )


def test_a_fork_changes_one_line_and_the_badge_follows(tmp_path):
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, tmp_path / name)
    pyproject = tmp_path / "pyproject.toml"
    text = pyproject.read_text()
    assert text.count(site_urls.repository_url(REPO)) == 1, "the repository's address is written once in pyproject.toml"
    pyproject.write_text(text.replace(site_urls.repository_url(REPO), "https://github.com/learner/nodecourse-fork"))
    assert site_urls.update_readme_badge(tmp_path) is True
    badge = site_urls.readme_badge(tmp_path)
    assert badge == (
        "[![Binder](https://mybinder.org/badge_logo.svg)](https://mybinder.org/v2/gh/learner/"
        "nodecourse-fork/HEAD?labpath=notebooks%2F00_start_here.ipynb)"
    )
    readme_before = (REPO / "README.md").read_text().splitlines()
    readme_after = (tmp_path / "README.md").read_text().splitlines()
    assert [a for a, b in zip(readme_before, readme_after) if a != b] == [site_urls.readme_badge(REPO)]
    assert site_urls.update_readme_badge(tmp_path) is False


def test_the_readme_says_how_to_point_binder_at_a_fork():
    text = (REPO / "README.md").read_text()
    assert "[project.urls]" in text and "nodecourse site --update-readme" in text


# ---------------------------------------------------------------------------
# the site
# ---------------------------------------------------------------------------


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_the_site_builds_without_warnings_and_its_internal_links_resolve(built):
    out, warned, logged = built
    assert not warned, warned
    assert not logged, logged
    assert site_links.broken_links(out) == []
    pages = {p.name for p in out.glob("*.html")}
    expected = (
        {f"{p.stem}.html" for p in site.lesson_notebooks(REPO)}
        | {f"{p.stem}.html" for p in site.exercise_notebooks(REPO)}
        | {"index.html", "setup.html", "ledger.html"}
        | {out for rel, out, _, _ in site.GUIDES}
        | {site_api.INDEX_PAGE}
        | {site_api.page_name(p) for p in site_api.PUBLIC_PACKAGES}
    )
    assert pages == expected
    assert all((REPO / rel).is_file() for rel, _, _, _ in site.GUIDES), "a guide the site lists is missing"


def test_broken_links_finds_a_missing_page_and_a_missing_anchor(tmp_path):
    (tmp_path / "a.html").write_text(
        '<a href="b.html">b</a><a href="a.html#here">x</a><h1 id="there">t</h1>'
        '<img src="_static/none.png"><a href="https://example.org/x">out</a>'
    )
    assert site_links.broken_links(tmp_path) == [
        "a.html: b.html",
        "a.html: a.html#here (no such anchor)",
        "a.html: _static/none.png",
    ]


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_every_lesson_page_links_binder_and_its_download_in_order(built):
    out, _, _ = built
    repo = site_urls.repository_url(REPO)
    lessons = site.lesson_notebooks(REPO)
    assert [int(p.name.split("_")[0]) for p in lessons] == sorted(int(p.name.split("_")[0]) for p in lessons)
    index = (out / "index.html").read_text()
    positions = [index.index(f'href="{p.stem}.html"') for p in lessons]
    assert positions == sorted(positions), "the index lists the lessons in order of their number"
    for path in lessons:
        rel = path.relative_to(REPO).as_posix()
        page = (out / f"{path.stem}.html").read_text()
        binder = site_urls.binder_url(repo, rel).replace("&", "&amp;")
        assert f'href="{binder}"' in page, f"{path.name}: no Binder link {binder}"
        assert f'href="download/{rel}"' in page
        assert 'href="_static/site.css"' in page
        assert (out / "download" / rel).read_bytes() == path.read_bytes()


def test_the_site_picks_up_whatever_lessons_exist(tmp_path):
    """Lessons are found by their file names (NN_*.ipynb) and ordered by number, not listed anywhere."""
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, tmp_path / name)
    (tmp_path / "notebooks").mkdir()
    for number, title in ((9, "Nine"), (10, "Ten"), (2, "Two")):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# {number} · {title}")])
        nbformat.write(nb, tmp_path / "notebooks" / f"{number:02d}_{title.lower()}.ipynb")
    (tmp_path / "notebooks" / "scratch.ipynb").write_text((tmp_path / "notebooks" / "02_two.ipynb").read_text())
    out = tmp_path / "site"
    site.build(tmp_path, out)
    index = (out / "index.html").read_text()
    order = [m.group(1) for m in re.finditer(r'class="nc-lesson" href="([^"]+)"', index)]
    assert order == ["02_two.html", "09_nine.html", "10_ten.html"]
    assert site_links.broken_links(out) == []


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_exercise_pages_hold_the_tasks_and_no_solution(built):
    out, _, _ = built
    for path in site.exercise_notebooks(REPO):
        page = (out / f"{path.stem}.html").read_text()
        exercise = nbformat.read(path, as_version=4)
        answers = [c for c in exercise.cells if c.get("metadata", {}).get("nodecourse", {}).get("answer")]
        assert answers, f"{path.name} has no answer cells"
        assert page.count("NotImplementedError") >= len(answers), path.name
        text = _text(page)
        given = "\n".join(c.source for c in exercise.cells)  # what the exercise itself says
        solution = REPO / "solutions" / path.name
        assert solution.is_file(), f"{path.name} has no solution in solutions/"
        solved = [
            ln.strip()
            for c in nbformat.read(solution, as_version=4).cells
            if c.get("metadata", {}).get("nodecourse", {}).get("answer")
            for ln in c.source.splitlines()
        ]
        shown = [ln for ln in solved if len(ln) > 20 and ln not in given and ln in text]
        assert not shown, f"{path.stem}.html shows lines of the solution: {shown}"


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_the_ledger_and_setup_pages_carry_their_sources(built):
    out, _, _ = built
    ledger = (out / "ledger.html").read_text()
    rows = [ln for ln in (REPO / "docs" / "ledger-full.md").read_text().splitlines() if ln.startswith("| ")]
    ids = [r.split("|")[1].strip() for r in rows[2:]]
    assert ids and all(f'<tr id="{i}">' in ledger for i in ids), "every row of docs/ledger-full.md is on the page"
    setup = _text((out / "setup.html").read_text())
    assert "make course" in setup and "NODECOURSE_QUICK=1 make course" in setup
    learner = _text((out / "learner.html").read_text())
    assert "nodecourse grade exercises/" in learner and "pytest --nbval exercises/" in learner


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_every_guide_is_a_page_the_navigation_links_with_githubs_section_ids(built):
    out, _, _ = built
    index = (out / "index.html").read_text()
    for rel, page, title, label in site.GUIDES:
        shown = _text((out / page).read_text())
        first = next(ln for ln in (REPO / rel).read_text().splitlines() if ln.startswith("# "))
        assert first[2:].strip() in shown, f"{page} does not show {rel}'s title"
        if label:
            assert f'href="{page}"' in index, f"the navigation does not link {page}"
    # a guide's link to another guide's section, written for the repository's web view, lands on it
    learner = (out / "learner.html").read_text()
    assert 'id="exercises-and-grading"' in learner
    assert 'href="learner.html#exercises-and-grading"' in (out / "instructor.html").read_text()


LEDGER_SAMPLE = """# Claims ledger: one full run

How it was run: one paragraph.

## The report

- verdicts: 1 hold

| id | claim | source | published | threshold | measured | verdict |
|---|---|---|---|---|---|---|
| row-one | a claim | a paper | 1 | 2 | 3 | **holds** |

## What changed since the previous full run

- row-one: the same.
"""


def test_the_ledger_page_opens_with_the_report_whatever_comes_before_it():
    # the order the ledger is written in: a short opening, the report, then the changes
    shown = site.ledger_report_first(LEDGER_SAMPLE)
    assert [ln for ln in shown.splitlines() if ln.startswith("#")] == [
        "# Claims ledger: one full run",
        "## The report",
        "## What changed since the previous full run",
    ]
    assert shown.index("How it was run") < shown.index("| row-one")
    # a long opening (a changelog before the report) moves after the report
    long_lead = LEDGER_SAMPLE.replace("How it was run: one paragraph.", "A changelog line.\n\n" * 80)
    shown = site.ledger_report_first(long_lead)
    headings = [ln for ln in shown.splitlines() if ln.startswith("#")]
    assert headings[:3] == ["# Claims ledger: one full run", "## The report", f"## {site.LEDGER_ABOUT}"]
    assert shown.index("| row-one") < shown.index("A changelog line.")
    assert shown.count("A changelog line.") == 80
    # without a report section the file is shown as it is
    assert site.ledger_report_first("# Notes\n\nprose\n") == "# Notes\n\nprose\n"


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_the_built_ledger_opens_with_its_table_and_every_row_has_an_anchor(built):
    from nodecourse.claims import load_rows

    out, _, _ = built
    soup = _soup(out / "ledger.html")
    main = soup.find("main")
    table = main.find("table")
    assert "nc-ledger" in table["class"]
    # nothing but the title, the report's heading and its summary list come before the table
    before = [t.name for t in table.find_all_previous(["h1", "h2", "h3", "p", "ul", "ol"]) if main in t.parents]
    assert before.count("h2") == 1 and before.count("p") <= 1, before
    # the table scrolls in a box that takes keyboard focus and has a name
    box = table.parent
    assert box.get("tabindex") == "0" and box.get("role") == "region" and box.get("aria-label"), box.attrs
    row_ids = [tr["id"] for tr in table.find_all("tr", id=True)]
    assert set(row_ids) == set(load_rows()), set(load_rows()) ^ set(row_ids)
    for row_id in row_ids:
        assert soup.find(id=row_id).find("a", href=f"#{row_id}"), row_id
    # a lesson's or the README's link to a row becomes the row's anchor on the site
    pages = site.site_pages(REPO)
    link = '<a href="../docs/ledger-full.md#deq-memory-reduction">the row</a>'
    fixed = site.rewrite_links(link, "notebooks/00_start_here.ipynb", pages, site_urls.repository_url(REPO))
    assert 'href="ledger.html#deq-memory-reduction"' in fixed
    assert soup.find("tr", id="deq-memory-reduction")


#: TeX's commands (a backslash and letters): never text a reader sees, only in code and annotations.
_TEX_COMMAND = re.compile(r"\\[A-Za-z]+")


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_no_page_shows_tex_commands_or_namespace_prefixed_mathml(built):
    out, _, _ = built
    problems = []
    for page in sorted(out.glob("*.html")):
        soup = _soup(page)
        prefixed = {t.name for t in soup.find_all(lambda t: ":" in t.name)}
        if prefixed:
            problems.append(f"{page.name}: {sorted(prefixed)}")
        for tag in soup.select("code, pre, annotation, script, style"):
            tag.extract()
        text = soup.get_text(" ")
        problems += [f"{page.name}: …{text[m.start() - 30 : m.end() + 10]}…" for m in _TEX_COMMAND.finditer(text)]
    assert not problems, problems
    # lesson 8's heading with a formula: MathML in the heading; plain text in the contents and the index
    soup = _soup(out / "08_continuous_normalising_flows.html")
    heading = next(h for h in soup.find_all("h2") if "of the solved map" in h.get_text())
    assert heading.find("math") is not None
    assert "%5C" not in heading["id"] and "det" in heading["id"], heading["id"]  # the formula's text, no TeX
    toc = soup.select_one(f'.nc-toc a[href="#{heading["id"]}"]').get_text()
    assert toc == "The discrete baseline: log|det J| of the solved map"
    sections = {e["section"] for e in _search_index(out)}
    assert "The discrete baseline: log|det J| of the solved map" in sections


def test_a_heading_with_a_formula_keeps_mathml_and_a_plain_id():
    rendered = site_markdown.markdown_to_html("## Cost of $\\frac{a}{b}$ here\n")
    assert "<math" in rendered and "ns0:" not in rendered and "<mfrac>" in rendered
    assert 'id="Cost-of-a-b-here"' in rendered, rendered  # the formula's text, not its TeX
    assert site_markdown.plain_text(rendered) == "Cost of a b here ¶"
    assert "\\frac" not in site_markdown.plain_text(rendered)


def _search_index(out: Path) -> list[dict]:
    text = (out / site.SEARCH_JS).read_text()
    return json.loads(text.removeprefix("window.NC_SEARCH = ").rstrip().removesuffix(";"))


def _text(page: str) -> str:
    """A page's text, as a reader sees it (tags removed, entities decoded)."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_each_plotly_figure_is_a_live_box_over_its_static_image(built):
    out, _, _ = built
    for path in site.lesson_notebooks(REPO):
        nb = nbformat.read(path, as_version=4)
        outputs = [o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
        plotly = [d for d in outputs if PLOTLY in d]
        page = (out / f"{path.stem}.html").read_text()
        assert page.count('class="nc-plotly"') == len(plotly), path.name
        assert page.count('class="nc-plotly-static"') == sum("image/png" in d for d in plotly), path.name
        if plotly:
            assert 'src="_static/plotly.min.js"' in page
    assert (out / site.PLOTLY_JS).stat().st_size > 1_000_000


# ---------------------------------------------------------------------------
# static fallbacks
# ---------------------------------------------------------------------------


def test_every_plotly_figure_in_the_committed_lessons_carries_a_static_image():
    """nbconvert, the website and GitHub's viewer show a plotly figure only through its PNG."""
    missing = []
    for path in site.lesson_notebooks(REPO):
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
                data = out.get("data", {})
                if PLOTLY in data:
                    png = data.get("image/png", "")
                    if not png or not base64.b64decode(png).startswith(b"\x89PNG"):
                        missing.append(f"{path.name} cell {i}")
    assert not missing, (
        "plotly outputs without a static PNG (re-execute the lesson with kaleido and "
        f"Chrome/Chromium installed): {missing}"
    )


def test_a_course_figure_shows_json_and_png_and_falls_back_to_json(monkeypatch):
    import IPython.display
    import plotly.io as pio

    import nodecourse.plotting as plotting

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda bundle, raw=False: shown.append(bundle))
    fig = plotting.figure("a figure", "x", "y")
    fig.add_scatter(x=[0, 1, 2], y=[1, 3, 2], name="line")
    if shutil.which("chromium") or Path("/usr/bin/chromium").exists():
        fig.show()
        assert set(shown[-1]) >= {PLOTLY, "image/png"}
        assert base64.b64decode(shown[-1]["image/png"]).startswith(b"\x89PNG")
    real_show = pio.show

    def no_chrome(figure, renderer=None, **kw):
        if "png" in (renderer or ""):
            raise RuntimeError("Kaleido requires Google Chrome to be installed.")
        return real_show(figure, renderer=renderer, **kw)

    monkeypatch.setattr(pio, "show", no_chrome)
    monkeypatch.setattr(plotting, "static_image_problem", None)
    fig._ipython_display_()
    assert PLOTLY in shown[-1] and "image/png" not in shown[-1]
    assert plotting.static_image_problem == "Kaleido requires Google Chrome to be installed."
    assert json.loads(json.dumps(shown[-1][PLOTLY]))["layout"]["title"]["text"] == "a figure"


# ---------------------------------------------------------------------------
# a site a learner finds their way in, offline
# ---------------------------------------------------------------------------


def _soup(path: Path):
    from bs4 import BeautifulSoup

    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def _formulas(nb) -> list[str]:
    """Every TeX formula of a notebook's markdown (cells and Markdown outputs), as nbconvert's parser finds them."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    found: list[str] = []

    class Collect(IPythonRenderer):
        def inline_math(self, body):
            found.append(body)
            return ""

        block_math = inline_math

    for cell in nb.cells:
        sources = (
            [cell.source]
            if cell.cell_type == "markdown"
            else [o.get("data", {}).get("text/markdown", "") for o in cell.get("outputs", [])]
        )
        for source in filter(None, sources):
            MarkdownWithMath(renderer=Collect(escape=False)).render(source)
    return found


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_no_page_loads_anything_from_another_host(built):
    out, _, _ = built
    for page in sorted(out.glob("*.html")):
        soup = _soup(page)
        remote = [
            t.get("src") or t.get("href")
            for t in soup.find_all(["script", "link", "img", "iframe"])
            if re.match(r"(https?:)?//", t.get("src") or t.get("href") or "")
        ]
        assert not remote, f"{page.name} loads {remote}"
        assert "mathjax" not in page.read_text().lower(), page.name


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_every_formula_of_lesson_10_is_mathml_with_its_tex(built):
    out, _, _ = built
    path = REPO / "notebooks" / "10_cheaper_and_exact.ipynb"
    formulas = _formulas(nbformat.read(path, as_version=4))
    assert len(formulas) > 40  # lesson 10 is dense with them
    soup = _soup(out / "10_cheaper_and_exact.html")
    maths = soup.find_all("math")
    assert len(maths) == len(formulas)
    assert [m.find("annotation").get_text() for m in maths] == formulas
    assert all(m.find(["mi", "mn", "mo"]) for m in maths)
    for block in soup.select(".jp-RenderedMarkdown"):
        for tag in block.find_all(["math", "code", "pre"]):
            tag.extract()
        text = block.get_text()
        assert not re.search(r"\\(frac|partial|int|lambda|mathrm)|\$[^$\s][^$]*\$", text), text[:200]


def test_tex_to_mathml_reads_the_course_notation_and_keeps_what_it_cannot_read():
    mathml = site_markdown.tex_to_mathml(r"\frac{d \log p}{dt} = -\mathrm{tr}(\partial f/\partial z)")
    assert mathml.startswith('<math xmlns="http://www.w3.org/1998/Math/MathML" display="inline">')
    assert "<mfrac>" in mathml and 'encoding="application/x-tex">' in mathml
    bars = re.findall(r"<mo[^>]*>&#x0007C;</mo>", site_markdown.tex_to_mathml("|x| = 1.25"))
    assert len(bars) == 2 and all('lspace="0" rspace="0"' in b for b in bars), bars
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kept = site_markdown.tex_to_mathml(r"\frac{1}{")  # unbalanced: not converted
    assert kept.startswith('<code class="nc-tex">') and r"\frac{1}{" in kept


def test_no_formula_of_the_course_draws_tex_as_text():
    """latex2mathml leaves what it does not know as text (``\\Big\\|`` drew "\\|"): no drawn token
    of any formula in the lessons and exercises holds a backslash."""
    formulas = [
        f
        for path in site.lesson_notebooks(REPO) + site.exercise_notebooks(REPO)
        for f in _formulas(nbformat.read(path, as_version=4))
    ]
    assert len(formulas) > 300
    drawn = {
        f: re.findall(r">([^<]*\\[^<]*)<", site_markdown.tex_to_mathml(f).split("<annotation")[0]) for f in formulas
    }
    assert not {f: d for f, d in drawn.items() if d}
    assert "min_factor" in site_markdown.tex_to_mathml(r"\text{min\_factor}")


def test_a_pipe_inside_a_table_cell_keeps_the_table_a_table():
    md = (
        "| setting | largest exp(|c| T) | error |\n|---|---|---|\n| none | 7.9 | 3.6e-03 |\n"
        "| a\\|b | 1 | 2 |\n\n```\n| x |c| y |\n|---|---|\n```\n"
    )
    fixed = site_markdown.repair_table_pipes(md)
    assert "largest exp(\\|c\\| T)" in fixed
    assert "| a\\|b | 1 | 2 |" in fixed  # a row that fits its table is left alone
    assert fixed.endswith("```\n| x |c| y |\n|---|---|\n```\n")  # code is not a table
    rendered = site_markdown.markdown_to_html(md)
    assert "<th>largest exp(|c| T)</th>" in rendered and rendered.count("<th>") == 3


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_lesson_10s_contraction_table_renders_as_a_table(built):
    out, _, _ = built
    soup = _soup(out / "10_cheaper_and_exact.html")
    headers = [[th.get_text(strip=True) for th in t.find_all("th")] for t in soup.find_all("table")]
    assert any("largest exp(-c T)" in h and len(h) == 5 for h in headers), headers
    assert "|---|" not in _text((out / "10_cheaper_and_exact.html").read_text())


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_test_markers_and_progress_bars_leave_the_pages(built):
    out, _, _ = built
    markers = bars = 0
    for path in site.lesson_notebooks(REPO) + site.exercise_notebooks(REPO):
        nb = nbformat.read(path, as_version=4)
        markers += sum("NBVAL_" in c.source for c in nb.cells)
        bars += sum(site_notebook.is_progress_output(o) for c in nb.cells for o in c.get("outputs", []))
        text = _text((out / f"{path.stem}.html").read_text())
        assert "NBVAL_" not in text, path.name
        assert not site_notebook.PROGRESS.search(text), (path.name, site_notebook.PROGRESS.search(text))
    assert markers > 10 and bars > 10  # the notebooks do carry both


def test_progress_bars_are_told_from_output_that_only_mentions_percent():
    bar = {
        "output_type": "display_data",
        "data": {"text/plain": "baseline:\u2007\u200780%|█████ |\u20074/5 [00:00<00:00]"},
    }
    stream = {"output_type": "stream", "name": "stderr", "text": "runs:  50%|█   | 1/2\rruns: 100%|██| 2/2\n"}
    table = {"output_type": "stream", "name": "stdout", "text": "accuracy 97%|loss 0.1\nseed 1/5 done\n"}
    mixed = {"output_type": "stream", "name": "stdout", "text": "runs: 100%|██| 2/2\nresult: 0.83\n"}
    assert site_notebook.is_progress_output(bar) and site_notebook.is_progress_output(stream)
    assert not site_notebook.is_progress_output(table) and not site_notebook.is_progress_output(mixed)
    assert site_notebook.without_progress_lines(mixed)["text"] == "result: 0.83\n"
    assert site_notebook.without_progress_lines(table) == table


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_explorers_are_described_with_a_launch_link_and_no_made_up_picture(built):
    out, _, _ = built
    repo = site_urls.repository_url(REPO)
    for path in site.lesson_notebooks(REPO):
        nb = nbformat.read(path, as_version=4)
        live = sum(site_notebook.is_live_widget(o) for c in nb.cells for o in c.get("outputs", []))
        soup = _soup(out / f"{path.stem}.html")
        boxes = soup.select(".nc-explorer-static")
        assert len(boxes) == live, path.name
        assert LIVE_WIDGET_TEXT not in soup.get_text()
        binder = site_urls.binder_url(repo, path.relative_to(REPO).as_posix())
        for box in boxes:
            assert box.find("a", class_="nc-launch")["href"] == binder
            assert not box.find("img")
    lesson2 = _soup(out / "02_solvers_and_tolerance.html").select_one(".nc-explorer-static").get_text()
    assert "solver work" in lesson2 and "Run lesson 2 on Binder" not in lesson2 and "run lesson 2 on Binder" in lesson2
    assert set(site_notebook.explorer_descriptions()) >= {
        "SolverExplorer",
        "AnnulusExplorer",
        "AdjointExplorer",
        "DEQExplorer",
        "CheaperExplorer",
    }


def test_a_figures_description_comes_from_its_titles_its_comment_or_its_section():
    alt = site_notebook.image_alt
    assert alt('ax.set_title(f"loss at {n} steps")\nfig.suptitle("training")', "S", "lesson 1") == (
        "Figure: loss at … steps; training"
    )
    assert alt("# the decision boundary on a grid\nshow(grid)", "S", "lesson 3") == (
        "Figure (lesson 3): the decision boundary on a grid"
    )
    assert alt(
        "fig = P.probe_sketch_figure(probes)\nax.plot(x)",  # a function the course does not define
        "The circle probe",
        "lesson 3",
        "<Figure size 900x300 with 3 Axes>",
    ) == ("Figure from lesson 3, section “The circle probe”: probe sketch figure (3 panels)")
    assert alt("plt.show()", "", "lesson 6", "<Figure size 640x480 with 1 Axes>") == "Figure from lesson 6"
    # axes from a keyword or a setter; TeX's $ and backslashes out; a placeholder-only title left out
    code = 'ax.set(xlabel="step $k$", ylabel="$\\lambda$ error", title=f"label {k}")'
    assert alt(code, "S", "lesson 6") == "Figure from lesson 6, section “S”: lambda error against step k"
    # a figure drawn by the course's own plotting function: that function's titles and axes
    described = alt("fig = plot_memory(sweep)", "The promise: memory", "lesson 4")
    assert described.startswith("Figure from lesson 4, section “The promise: memory”: ")
    assert "against rk4 steps" in described  # lesson 4's plot_memory, not lesson 10's (reversible Heun steps)


def test_a_figure_that_carries_its_title_and_caption_is_described_by_them():
    # lesson 9's audit figures: the cell only shows `step.figures[0]`; the object's text form names it
    plain = "Figure(title='Contraction', caption=\"spectral radius at 8 test inputs' fixed points\")"
    assert site_notebook.image_alt("step.figures[0]", "Step 4", "lesson 9", plain) == (
        "Figure: Contraction: spectral radius at 8 test inputs' fixed points"
    )
    assert site_notebook.image_alt("x", "S", "lesson 9", "Figure(title='Work')") == "Figure: Work"
    # a call whose title is not a plain string, or matplotlib's own text, falls back to the section
    for other in ("Figure(title=name)", "<Figure size 640x480 with 1 Axes>", "Figure(title='')"):
        assert site_notebook.image_alt("x", "S", "lesson 9", other) == "Figure from lesson 9, section “S”"


def test_a_plotly_figures_description_names_its_title_panels_and_axes():
    figure = {
        "layout": {
            "title": {"text": "Cost <b>against</b> rtol"},
            "xaxis": {"domain": [0, 0.45], "anchor": "y", "title": {"text": "rtol"}},
            "yaxis": {"anchor": "x", "title": {"text": "error"}},
            "xaxis2": {"domain": [0.55, 1], "anchor": "y2", "title": {"text": "rtol"}},
            "yaxis2": {"anchor": "x2", "title": "NFE"},
            "annotations": [
                {"text": "error", "xref": "paper", "yref": "paper", "x": 0.2, "y": 1},
                {"text": "work", "xref": "paper", "yref": "paper", "x": 0.8, "y": 1},
            ],
        }
    }
    assert site_notebook.plotly_alt(figure) == (
        "Figure: Cost against rtol; panels: error, work (error against rtol; NFE against rtol)"
    )
    assert site_notebook.plotly_alt({"layout": {}}) == ""


def test_the_fold_rule():
    code = nbformat.v4.new_code_cell
    markdown_out = nbformat.v4.new_output("display_data", data={"text/markdown": "**holds**", "text/plain": "holds"})
    figure_out = nbformat.v4.new_output("display_data", data={"image/png": "iVBOR", "text/plain": "<Figure>"})
    assert site_notebook.folds(code("show(findings)", outputs=[markdown_out, markdown_out]))
    assert not site_notebook.folds(code("plot()", outputs=[markdown_out, figure_out]))
    assert not site_notebook.folds(code("x = 1"))
    assert site_notebook.folds(code("setup()", metadata={"tags": ["hide-input"]}))
    assert not site_notebook.folds(nbformat.v4.new_markdown_cell("# title"))
    nb = nbformat.v4.new_notebook(
        cells=[
            code("show(findings)", outputs=[markdown_out]),
            code("setup()", metadata={"tags": ["hide-input"]}),
            code("plot()"),
        ]
    )
    site_notebook.prepare_notebook(nb)
    assert [c.metadata.get("nc_fold") for c in nb.cells] == ["Show the code that prints this", "Show the code", None]


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_cells_that_print_findings_are_folded_with_their_output_shown(built):
    out, _, _ = built
    soup = _soup(out / "10_cheaper_and_exact.html")
    nb = nbformat.read(REPO / "notebooks" / "10_cheaper_and_exact.ipynb", as_version=4)
    expected = sum(site_notebook.folds(c) for c in nb.cells)
    folds = soup.select("details.nc-fold")
    assert expected >= 10 and len(folds) == expected
    for fold in folds:
        assert "open" not in fold.attrs and fold.find("summary").get_text() == "Show the code that prints this"
        cell = fold.find_parent(class_="jp-CodeCell")
        assert cell.select_one(".jp-RenderedMarkdown") is not None  # the output stays outside the fold


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_each_lesson_has_contents_previous_next_at_both_ends_and_its_exercise(built):
    out, _, _ = built
    lessons = site.lesson_notebooks(REPO)
    exercises = {int(p.name.split("_")[0]): p for p in site.exercise_notebooks(REPO)}
    for i, path in enumerate(lessons):
        soup = _soup(out / f"{path.stem}.html")
        toc = [a["href"] for a in soup.select("aside.nc-sidebar details.nc-toc a")]
        h2 = ["#" + h["id"] for h in soup.select("main h2[id]")]
        assert h2 and set(h2) <= set(toc), path.name
        for where in ("top", "bottom"):
            pager = soup.select_one(f"nav.nc-pager-{where}")
            prev, nxt = pager.select_one("a.nc-prev"), pager.select_one("a.nc-next")
            assert (prev["href"] if prev else None) == (f"{lessons[i - 1].stem}.html" if i else None)
            assert (nxt["href"] if nxt else None) == (f"{lessons[i + 1].stem}.html" if i + 1 < len(lessons) else None)
        number = int(path.name.split("_")[0])
        partner = soup.select_one("a.nc-partner")
        if number in exercises:
            assert partner["href"] == f"{exercises[number].stem}.html"
            assert f"Exercise {number}" in partner.get_text()
            back = _soup(out / f"{exercises[number].stem}.html").select_one("a.nc-partner")
            assert back["href"] == f"{path.stem}.html" and f"lesson {number}" in back.get_text()
        else:
            assert partner is None


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_accessibility_markup(built):
    out, _, _ = built
    for page in sorted(out.glob("*.html")):
        soup = _soup(page)
        # the only tab stops besides links and controls: scroll boxes, each a named region
        focusable = soup.select('[tabindex]:not([tabindex="-1"])')
        assert all(
            t.get("tabindex") == "0" and "nc-scroll" in t["class"] and t.get("role") == "region" and t.get("aria-label")
            for t in focusable
        ), (page.name, [t.attrs for t in focusable][:3])
        names = [t["aria-label"] for t in soup.select('[role="region"]')]  # one name, one region
        assert len(names) == len(set(names)), (page.name, sorted(n for n in names if names.count(n) > 1))
        anchors = soup.select("a.anchor-link")
        assert all(a.get("tabindex") == "-1" for a in anchors), page.name
        skip = soup.body.find("a")
        assert skip.get("class") == ["nc-skip"] and soup.find(id=skip["href"][1:]), page.name
        footer = soup.select_one("footer.nc-footer").get_text()
        assert re.search(r"nodecourse \d+\.\d+\.\d+", footer) and re.search(r"\d{4}-\d{2}-\d{2}", footer), page.name
        for img in soup.find_all("img"):
            alt = img.get("alt", "")
            assert alt.strip() and alt not in ("Figure", "Figure drawn by the code cell above"), (page.name, alt)
            # it says what the figure shows, not only where it is
            assert not re.fullmatch(r"Figure from lesson \d+(, section “[^”]*”)?", alt), (page.name, alt)
        # a link's text says where it goes: one text, one destination
        by_text: dict[str, set[str]] = {}
        for a in soup.find_all("a", href=True):
            by_text.setdefault(" ".join(a.get_text().split()), set()).add(a["href"])
        repeated = {t: h for t, h in by_text.items() if len(h) > 1 and t not in ("¶", "")}
        assert not repeated, (page.name, repeated)


def _luminance(colour: str) -> float:
    c = colour.lstrip("#")
    c = "".join(ch * 2 for ch in c) if len(c) == 3 else c
    rgb = [int(c[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    lin = [v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4 for v in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two #rgb / #rrggbb colours."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_each_figure_is_a_file_the_page_links_to_at_full_size(built):
    """A phone shrinks a figure to the screen; a tap on it opens the PNG itself, to zoom into."""
    out, _, _ = built
    for path in site.lesson_notebooks(REPO):
        nb = nbformat.read(path, as_version=4)
        pngs = [
            o["data"]["image/png"]
            for c in nb.cells
            if c.cell_type == "code"
            for o in c.get("outputs", [])
            if "image/png" in o.get("data", {}) and PLOTLY not in o["data"]
        ]
        links = _soup(out / f"{path.stem}.html").select("a.nc-figure-link")
        assert len(links) == len(pngs), path.name
        for link, png in zip(links, pngs):
            assert link.find("img")["src"] == link["href"]
            assert (out / link["href"]).read_bytes() == base64.b64decode(png)
            assert link["aria-label"].startswith("Open the figure at full size: Figure")


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_code_colours_reach_4_5_to_1_on_the_code_background(built):
    out, _, _ = built
    assert contrast("#408080", "#f5f5f5") < 4.5  # nbconvert's comment colour, which the site replaces
    low = {
        n: round(contrast(c, site_assets.CODE_BACKGROUND), 2)
        for n, c in site_assets.CODE_COLOURS.items()
        if contrast(c, site_assets.CODE_BACKGROUND) < 4.5
    }
    assert not low, low
    css = (out / "_static" / "site.css").read_text()
    assert all(f"--jp-mirror-editor-{n}-color: {c};" in css for n, c in site_assets.CODE_COLOURS.items())


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_the_search_index_covers_every_page_and_points_at_real_sections(built):
    out, _, _ = built
    text = (out / site.SEARCH_JS).read_text()
    entries = json.loads(text.removeprefix("window.NC_SEARCH = ").rstrip().removesuffix(";"))
    assert {e["url"].partition("#")[0] for e in entries} == {p.name for p in out.glob("*.html")} - {"index.html"}
    ids: dict[str, set[str]] = {}
    for e in entries:
        page, _, anchor = e["url"].partition("#")
        if anchor:
            if page not in ids:
                ids[page] = {html.unescape(i) for i in re.findall(r'\sid="([^"]*)"', (out / page).read_text())}
            assert anchor in ids[page], e["url"]
    annulus = [e for e in entries if "circle probe" in e["text"].lower()]
    assert any(e["url"].startswith("03_annulus.html") for e in annulus)


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_the_search_index_holds_the_full_text_and_every_ledger_row(built):
    from nodecourse.claims import load_rows

    out, _, _ = built
    entries = _search_index(out)
    # every ledger row is an entry of its own, named by its id, pointing at the row's anchor
    rows = {e["section"]: e for e in entries if e["url"].startswith("ledger.html#") and e["url"].endswith(e["section"])}
    for row_id in load_rows():
        assert row_id in rows, row_id
        assert rows[row_id]["url"] == f"ledger.html#{row_id}" and len(rows[row_id]["text"]) > len(row_id)
    # the full text: every paragraph and list item of lesson 4's prose is in its page's entries
    lesson4 = " ".join(e["text"] for e in entries if e["url"].startswith("04_adjoint.html"))
    for word in ("L-stability", "subnormal"):
        assert word.lower() in lesson4.lower(), word
    soup = _soup(out / "04_adjoint.html")
    for math in soup.find_all("math"):  # formulas are in the index as the text they show
        math.replace_with(site_markdown._math_text(math))
    blocks = soup.select(".jp-MarkdownCell .jp-RenderedMarkdown p, .jp-MarkdownCell .jp-RenderedMarkdown li")
    assert len(blocks) > 20
    missing = [b for b in blocks if " ".join(b.get_text(" ").split()) not in lesson4]
    assert not missing, [" ".join(b.get_text(" ").split())[:80] for b in missing[:3]]


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_nbconverts_stylesheet_is_written_once_and_linked_from_every_lesson(built):
    out, _, _ = built
    files = sorted((out / "_static").glob("nb-*.css"))
    assert files and sum(f.stat().st_size for f in files) > 100_000  # nbconvert's theme, once
    for path in site.lesson_notebooks(REPO) + site.exercise_notebooks(REPO):
        page = (out / f"{path.stem}.html").read_text()
        head = page[: page.index("</head>")]
        assert "<style" not in head, path.name
        linked = re.findall(r'href="(_static/nb-[0-9a-f]+\.css)"', head)
        assert sorted(linked) == sorted(f"_static/{f.name}" for f in files), (path.name, linked)


def test_prompts_and_links_reach_4_5_to_1():
    for name, colour in site_assets.PROMPT_COLOURS.items():
        assert contrast(colour, site_assets.PROMPT_BACKGROUND) >= 4.5, name
    assert contrast(site_assets.LINK_COLOUR, "#ffffff") >= 4.5
    css = site_assets.SITE_CSS
    assert "--jp-cell-prompt-not-active-opacity: 1;" in css  # nbconvert's 0.5 halves the contrast
    assert re.search(r"a:not\(\.anchor-link\)[^{]*\{\s*text-decoration: underline", css)


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_no_table_has_an_empty_header_cell(built):
    out, _, _ = built
    empty = [
        page.name
        for page in sorted(out.glob("*.html"))
        for th in _soup(page).find_all("th")
        if not th.get_text(strip=True) and not th.find(["img", "math"])
    ]
    assert not empty, empty
    # the instructor's guide's comparison table keeps its row labels, under an empty corner cell
    guide = _soup(out / "instructor.html")
    table = next(t for t in guide.find_all("table") if "otter-grader" in t.get_text())
    assert [c.name for c in table.find("tr").find_all(["td", "th"])][:2] == ["td", "th"]


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_every_script_is_inside_the_body(built):
    out, _, _ = built
    for page in sorted(out.glob("*.html")):
        text = page.read_text()
        assert "".join(text[text.rindex("</body>") :].split()) == "</body></html>", page.name
    annulus = (out / "03_annulus.html").read_text()
    assert annulus.index(site.PLOTLY_JS) < annulus.index("</body>")  # the figures' script too


@pytest.mark.slow  # uses the site built once for this module (about 20 s)
def test_the_dark_scheme_reaches_4_5_to_1_and_each_notebook_page_links_its_theme(built):
    out, _, _ = built
    low = {
        n: round(contrast(c, site_assets.DARK_CODE_BACKGROUND), 2)
        for n, c in site_assets.DARK_CODE_COLOURS.items()
        if contrast(c, site_assets.DARK_CODE_BACKGROUND) < 4.5
    }
    assert not low, low
    assert set(site_assets.DARK_CODE_COLOURS) == set(site_assets.CODE_COLOURS)
    for name, colour in {**site_assets.DARK_PROMPT_COLOURS, "link": site_assets.DARK_LINK_COLOUR}.items():
        assert contrast(colour, site_assets.DARK_BACKGROUND) >= 4.5, name
    assert contrast(site_assets.DARK_TEXT, site_assets.DARK_BACKGROUND) >= 4.5
    assert (out / site_nbconvert.DARK_THEME).stat().st_size > 1000
    for path in site.lesson_notebooks(REPO) + site.exercise_notebooks(REPO):
        link = _soup(out / f"{path.stem}.html").find("link", href=site_nbconvert.DARK_THEME)
        assert link is not None and link["media"] == "(prefers-color-scheme: dark)", path.name
