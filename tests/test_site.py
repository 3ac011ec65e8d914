"""The course website (`make site`, nodecourse/course/site.py), the Binder links made from one
setting, and the static image beside every plotly figure of the committed lessons.

The site is built once into a temporary folder; the browser test (tests/test_site_browser.py)
opens it in Chromium.
"""
from __future__ import annotations

import base64
import json
import logging
import re
import shutil
import warnings
from pathlib import Path

import nbformat
import pytest

from nodecourse.course import site
from notebook_fixtures import REPO

PLOTLY = site.PLOTLY_MIME


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
    repo = site.repository_url(REPO)
    assert re.fullmatch(r"https://\S+", repo), repo
    assert site.readme_badge(REPO) == site.binder_badge(REPO), (
        "README.md's Binder badge differs from pyproject.toml's [project.urls] Repository: "
        "run `nodecourse site --update-readme`")
    assert "labpath=notebooks%2F00_start_here.ipynb" in site.binder_badge(REPO)


def test_binder_urls_for_github_gitlab_and_any_git_host():
    assert site.binder_url("https://github.com/me/fork", "notebooks/03_annulus.ipynb") == (
        "https://mybinder.org/v2/gh/me/fork/HEAD?labpath=notebooks%2F03_annulus.ipynb")
    assert site.binder_url("https://gitlab.com/group/sub/course") == (
        "https://mybinder.org/v2/gl/group%2Fsub%2Fcourse/HEAD")
    assert site.binder_url("https://git.example.org/course") == (
        "https://mybinder.org/v2/git/https%3A%2F%2Fgit.example.org%2Fcourse/HEAD")


def test_a_fork_changes_one_line_and_the_badge_follows(tmp_path):
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, tmp_path / name)
    pyproject = tmp_path / "pyproject.toml"
    text = pyproject.read_text()
    assert text.count(site.repository_url(REPO)) == 1, "the repository's address is written once in pyproject.toml"
    pyproject.write_text(text.replace(site.repository_url(REPO), "https://github.com/learner/nodecourse-fork"))
    assert site.update_readme_badge(tmp_path) is True
    badge = site.readme_badge(tmp_path)
    assert badge == ("[![Binder](https://mybinder.org/badge_logo.svg)](https://mybinder.org/v2/gh/learner/"
                     "nodecourse-fork/HEAD?labpath=notebooks%2F00_start_here.ipynb)")
    readme_before = (REPO / "README.md").read_text().splitlines()
    readme_after = (tmp_path / "README.md").read_text().splitlines()
    assert [a for a, b in zip(readme_before, readme_after) if a != b] == [site.readme_badge(REPO)]
    assert site.update_readme_badge(tmp_path) is False


def test_the_readme_says_how_to_point_binder_at_a_fork():
    text = (REPO / "README.md").read_text()
    assert "[project.urls]" in text and "nodecourse site --update-readme" in text


# ---------------------------------------------------------------------------
# the site
# ---------------------------------------------------------------------------

@pytest.mark.slow
def test_the_site_builds_without_warnings_and_its_internal_links_resolve(built):
    out, warned, logged = built
    assert not warned, warned
    assert not logged, logged
    assert site.broken_links(out) == []
    pages = {p.name for p in out.glob("*.html")}
    expected = {f"{p.stem}.html" for p in site.lesson_notebooks(REPO)} | {
        f"{p.stem}.html" for p in site.exercise_notebooks(REPO)} | {"index.html", "setup.html", "ledger.html"}
    assert pages == expected


def test_broken_links_finds_a_missing_page_and_a_missing_anchor(tmp_path):
    (tmp_path / "a.html").write_text('<a href="b.html">b</a><a href="a.html#here">x</a><h1 id="there">t</h1>'
                                     '<img src="_static/none.png"><a href="https://example.org/x">out</a>')
    assert site.broken_links(tmp_path) == ["a.html: b.html", "a.html: a.html#here (no such anchor)",
                                           "a.html: _static/none.png"]


@pytest.mark.slow
def test_every_lesson_page_links_binder_and_its_download_in_order(built):
    out, _, _ = built
    repo = site.repository_url(REPO)
    lessons = site.lesson_notebooks(REPO)
    assert [int(p.name.split("_")[0]) for p in lessons] == sorted(int(p.name.split("_")[0]) for p in lessons)
    index = (out / "index.html").read_text()
    positions = [index.index(f'href="{p.stem}.html"') for p in lessons]
    assert positions == sorted(positions), "the index lists the lessons in order of their number"
    for path in lessons:
        rel = path.relative_to(REPO).as_posix()
        page = (out / f"{path.stem}.html").read_text()
        binder = site.binder_url(repo, rel).replace("&", "&amp;")
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
    assert site.broken_links(out) == []


@pytest.mark.slow
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
        solved = [ln.strip() for c in nbformat.read(solution, as_version=4).cells
                  if c.get("metadata", {}).get("nodecourse", {}).get("answer") for ln in c.source.splitlines()]
        shown = [ln for ln in solved if len(ln) > 20 and ln not in given and ln in text]
        assert not shown, f"{path.stem}.html shows lines of the solution: {shown}"


@pytest.mark.slow
def test_the_ledger_and_setup_pages_carry_their_sources(built):
    out, _, _ = built
    ledger = (out / "ledger.html").read_text()
    rows = [ln for ln in (REPO / "docs" / "ledger-full.md").read_text().splitlines() if ln.startswith("| ")]
    ids = [r.split("|")[1].strip() for r in rows[2:]]
    assert ids and all(f"<td>{i}</td>" in ledger for i in ids), "every row of docs/ledger-full.md is on the page"
    setup = _text((out / "setup.html").read_text())
    assert "make course" in setup and "nodecourse grade exercises/" in setup


def _text(page: str) -> str:
    """A page's text, as a reader sees it (tags removed, entities decoded)."""
    import html

    return html.unescape(re.sub(r"<[^>]+>", "", page))


@pytest.mark.slow
def test_each_plotly_figure_is_a_live_box_over_its_static_image(built):
    out, _, _ = built
    for path in site.lesson_notebooks(REPO):
        nb = nbformat.read(path, as_version=4)
        outputs = [o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
        plotly = [d for d in outputs if PLOTLY in d]
        page = (out / f"{path.stem}.html").read_text()
        assert page.count('<div class="nc-plotly">') == len(plotly), path.name
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
    assert not missing, ("plotly outputs without a static PNG (re-execute the lesson with kaleido and "
                         f"Chrome/Chromium installed): {missing}")


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
