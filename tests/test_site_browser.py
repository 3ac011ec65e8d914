"""The course website (`make site`) in a real browser: Debian's Chromium, driven by Playwright,
opens the built site from a local static server (python's http.server on a free port).

* every internal link, from the index on, leads to a page or file the server has (and an
  #anchor to an element of its page);
* each lesson page shows its figures: every plotly box is drawn by plotly.js with its traces
  (no empty container), and no image is broken;
* with JavaScript off, each plotly figure is its static image (what nbconvert and GitHub show).

Requests to any other host are refused, so nothing on the pages depends on the network (MathJax,
which nbconvert loads from its CDN, then leaves the TeX source as it is). Screenshots of every
page go to test-artifacts/site/ (git-ignored).
"""
from __future__ import annotations

import functools
import http.server
import os
import re
import threading
from collections import deque
from pathlib import Path

import pytest

import browser_support as B
from nodecourse.course import site
from notebook_fixtures import REPO

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]
ARTIFACTS = REPO / "test-artifacts" / "site"
LESSON_PAGE = re.compile(r"^\d+_.+\.html$")


def _unavailable(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser tests cannot run under CI=true: {reason}")
    pytest.skip(reason)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the test reports what failed; no line per request
        pass


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    if not B.CHROMIUM.exists():
        _unavailable(f"{B.CHROMIUM} not found (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        _unavailable(f"playwright is not installed: {exc}")
    out = tmp_path_factory.mktemp("site") / "site"
    site.build(REPO, out)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        with sync_playwright() as p:
            try:
                browser = p.chromium.launch(executable_path=str(B.CHROMIUM), args=B.CHROMIUM_ARGS, headless=True)
            except Exception as exc:  # noqa: BLE001 - any launch failure means no browser
                _unavailable(f"Chromium did not start: {exc}")
            try:
                yield out, base, browser
            finally:
                browser.close()
    finally:
        server.shutdown()
        server.server_close()


def _context(browser, base: str, *, javascript: bool = True):
    context = browser.new_context(viewport={"width": 1300, "height": 900}, java_script_enabled=javascript)
    blocked: list[str] = []

    def only_local(route):
        if route.request.url.startswith(base) or route.request.url.startswith("data:"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    context.route("**/*", only_local)
    return context, blocked


def _links(page) -> list[str]:
    return page.eval_on_selector_all("a[href]", "els => els.map(a => a.href)")


def test_every_internal_link_resolves_and_every_lesson_shows_its_figures(served):
    out, base, browser = served
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    context, blocked = _context(browser, base)
    page = context.new_page()
    page.set_default_timeout(60_000)
    seen_pages: set[str] = set()
    checked_files: set[str] = set()
    queue = deque([base + "index.html"])
    lesson_pages = []
    problems = []
    while queue:
        url = queue.popleft()
        path, _, anchor = url.partition("#")
        if not path.endswith(".html"):
            if path not in checked_files:
                checked_files.add(path)
                response = context.request.get(path)
                if response.status != 200:
                    problems.append(f"{path}: HTTP {response.status}")
            continue
        if path in seen_pages and not anchor:
            continue
        if page.url.partition("#")[0] != path:
            response = page.goto(path, wait_until="load")
            if response is None or response.status != 200:
                problems.append(f"{path}: HTTP {response.status if response else 'no response'}")
                continue
        if anchor:
            found = page.evaluate("a => !!(document.getElementById(a) || "
                                  "document.getElementById(decodeURIComponent(a)))",
                                  anchor)
            if not found:
                problems.append(f"{url}: no element #{anchor}")
        if path in seen_pages:
            continue
        seen_pages.add(path)
        if page.locator("nav.nc-site-nav").evaluate("el => getComputedStyle(el).display") != "flex":
            problems.append(f"{path}: the site's stylesheet is not applied")
        name = path[len(base):]
        if LESSON_PAGE.match(name) and "_exercises" not in name:
            lesson_pages.append(name)
            problems += _figures_shown(page, name)
        page.screenshot(path=str(ARTIFACTS / f"{Path(name).stem}.png"), full_page=True)
        for link in _links(page):
            if link.startswith(base):
                queue.append(link)
    context.close()
    assert not problems, "\n".join(problems)
    expected_lessons = {f"{p.stem}.html" for p in site.lesson_notebooks(REPO)}
    assert set(lesson_pages) == expected_lessons, "a lesson page is not reachable from the index"
    expected_pages = {p.name for p in out.glob("*.html")}
    assert {p[len(base):] for p in seen_pages} == expected_pages, "a page is not reachable from the index"
    assert any(f.endswith(".ipynb") for f in checked_files), "no download link was followed"


def _figures_shown(page, name: str) -> list[str]:
    """What is wrong with the figures of the lesson page open in ``page``."""
    boxes = page.locator(".nc-plotly")
    if boxes.count():
        page.wait_for_function(
            "() => [...document.querySelectorAll('.nc-plotly')].every(b => b.classList.contains('nc-plotly-drawn'))",
            timeout=60_000)
    problems = []
    for i in range(boxes.count()):
        box = boxes.nth(i)
        live = box.locator(".nc-plotly-live")
        data = live.evaluate("el => (el._fullData || []).length")
        # 2-D traces are SVG groups; 3-D ones (scatter3d) draw on a WebGL canvas
        drawn = live.locator(".main-svg .trace").count() + live.locator(".gl-container canvas").count()
        height = live.evaluate("el => el.getBoundingClientRect().height")
        if data == 0 or drawn == 0 or height < 100:
            problems.append(f"{name}: plotly figure {i} is empty ({data} traces, {drawn} drawn, {height:.0f} px high)")
    broken = page.evaluate(
        """() => [...document.querySelectorAll('img')]
                 .filter(img => !img.closest('.nc-plotly-drawn'))
                 .filter(img => !(img.complete && img.naturalWidth > 0))
                 .map(img => img.alt || img.src.slice(0, 60))""")
    problems += [f"{name}: broken image {alt!r}" for alt in broken]
    return problems


def test_without_javascript_each_plotly_figure_is_its_static_image(served):
    out, base, browser = served
    context, _ = _context(browser, base, javascript=False)
    page = context.new_page()
    problems = []
    for path in site.lesson_notebooks(REPO):
        page.goto(f"{base}{path.stem}.html", wait_until="load")
        boxes = page.locator(".nc-plotly")
        for i in range(boxes.count()):
            img = boxes.nth(i).locator("img.nc-plotly-static")
            if img.count() == 0:
                problems.append(f"{path.stem}.html: plotly figure {i} has no static image")
            elif not img.evaluate("el => el.complete && el.naturalWidth > 0 && el.getBoundingClientRect().height > 50"):
                problems.append(f"{path.stem}.html: the static image of plotly figure {i} does not show")
        if boxes.count():
            boxes.first.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / f"{path.stem}-no-javascript.png"))
    context.close()
    assert not problems, "\n".join(problems)
