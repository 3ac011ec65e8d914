"""The course website (`make site`) in a real browser: Debian's Chromium, driven by Playwright,
opens the built site from a local static server (python's http.server on a free port).

* every internal link, from the index on, leads to a page or file the server has (and an
  #anchor to an element of its page);
* each lesson page shows its figures: every plotly box is drawn by plotly.js with its traces
  (no empty container), and no image is broken;
* with JavaScript off, each plotly figure is its static image (what nbconvert and GitHub show).

Requests to any other host are refused, so nothing on the pages depends on the network. Then,
as a learner reads the site:

* lesson 10's formulas are drawn (MathML, laid out by Chromium itself) with no request leaving
  the machine, and its code colours reach 4.5:1 on their background;
* the navigation works: the contents sidebar, previous/next at both ends, lesson <-> exercise,
  the skip link, a copy button, and the search box finds a lesson;
* the ledger's table fits 1280 px and a row's anchor opens the page at it; search finds every
  ledger row and lesson 4's words, counts its results and takes the keyboard (arrows, Escape);
* at a phone's width (390 px) no page scrolls sideways, every plotly figure keeps at least half
  its box for the plot (legend below, panels stacked), targets are 24 px or more, copy buttons sit
  clear of their code, and every box that scrolls sideways takes keyboard focus;
* axe-core (npm's package, pinned in browser_support.AXE_VERSION) finds no violation on a lesson,
  an exercise, the ledger and the setup page, in the light and the dark scheme, at 1300 and 390 px.

Screenshots of every page go to test-artifacts/site/ (git-ignored).
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import subprocess
import threading
import urllib.parse
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
    ids_on: dict[str, set[str]] = {}  # page -> the ids of its elements once loaded
    anchored: list[tuple[str, str, str]] = []  # (link, page, #anchor), checked against ids_on at the end
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
        if anchor:
            anchored.append((url, path, anchor))
        if path in seen_pages:
            continue
        seen_pages.add(path)
        # each page is loaded once; an #anchor link to it is checked against the ids it had then
        # (no second load of a lesson page per link to one of its headings or ledger rows)
        response = page.goto(path, wait_until="load")
        if response is None or response.status != 200:
            problems.append(f"{path}: HTTP {response.status if response else 'no response'}")
            continue
        ids_on[path] = set(page.eval_on_selector_all("[id]", "els => els.map(e => e.id)"))
        if page.locator("nav.nc-site-nav").evaluate("el => getComputedStyle(el).display") != "flex":
            problems.append(f"{path}: the site's stylesheet is not applied")
        name = path[len(base) :]
        if LESSON_PAGE.match(name) and "_exercises" not in name:
            lesson_pages.append(name)
            problems += _figures_shown(page, name)
        # the whole page, as JPEG: PNG's encoding of a page 15,000-29,000 px tall took half again as long
        page.screenshot(path=str(ARTIFACTS / f"{Path(name).stem}.jpg"), full_page=True, quality=80)
        for link in _links(page):
            if link.startswith(base):
                queue.append(link)
    context.close()
    for url, path, anchor in anchored:
        if path in ids_on and not ({anchor, urllib.parse.unquote(anchor)} & ids_on[path]):
            problems.append(f"{url}: no element #{anchor}")
    assert not problems, "\n".join(problems)
    expected_lessons = {f"{p.stem}.html" for p in site.lesson_notebooks(REPO)}
    assert set(lesson_pages) == expected_lessons, "a lesson page is not reachable from the index"
    expected_pages = {p.name for p in out.glob("*.html")}
    assert {p[len(base) :] for p in seen_pages} == expected_pages, "a page is not reachable from the index"
    assert any(f.endswith(".ipynb") for f in checked_files), "no download link was followed"


def _wait_plotly_drawn(page) -> None:
    """Wait until plotly.js has drawn every plotly box of the page open in ``page`` (none: at once)."""
    page.wait_for_function(
        "() => [...document.querySelectorAll('.nc-plotly')].every(b => b.classList.contains('nc-plotly-drawn'))",
        timeout=60_000,
        polling=100,
    )


def _figures_shown(page, name: str) -> list[str]:
    """What is wrong with the figures of the lesson page open in ``page``."""
    boxes = page.locator(".nc-plotly")
    _wait_plotly_drawn(page)
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
                 .map(img => img.alt || img.src.slice(0, 60))"""
    )
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


PHONE = {"width": 390, "height": 844}


def test_lesson_10s_formulas_render_with_every_other_host_blocked(served):
    out, base, browser = served
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    context, blocked = _context(browser, base)
    page = context.new_page()
    page.goto(base + "10_cheaper_and_exact.html", wait_until="load")
    maths = page.evaluate("""() => [...document.querySelectorAll('main math')].map(m => {
        const r = m.getBoundingClientRect();
        return {display: getComputedStyle(m).display, width: r.width, height: r.height}; })""")
    assert len(maths) > 40, len(maths)
    # "math" / "block math" is the display of a MathML box the browser lays out itself
    assert {m["display"] for m in maths} <= {"math", "block math"}, {m["display"] for m in maths}
    assert all(m["width"] > 0 and m["height"] > 0 for m in maths)
    stacked = page.evaluate("""() => [...document.querySelectorAll('main mfrac')].map(f => {
        const [num, den] = f.children; return num.getBoundingClientRect().bottom <= den.getBoundingClientRect().top + 1; })""")
    assert stacked and all(stacked), "a fraction's numerator is drawn above its denominator"
    prose = page.evaluate(
        "() => [...document.querySelectorAll('main .jp-RenderedMarkdown')].map(e => e.innerText).join(' ')"
    )
    assert not re.search(r"\\(frac|partial|int|lambda|mathrm)|\$", prose), "TeX source shows on the page"
    page.locator("main math[display=block], main mfrac").first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "10_cheaper_and_exact-maths-offline.png"))
    low = page.evaluate("""() => {
        const rgb = c => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
        const lum = c => { const v = rgb(c).map(x => { x /= 255; return x <= 0.04045 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
                           return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
        const out = [];
        document.querySelectorAll('.jp-InputArea-editor .highlight pre span').forEach(s => {
          if (!s.textContent.trim()) return;
          let bg = s, c;
          while (bg && (c = getComputedStyle(bg).backgroundColor) && (c === 'rgba(0, 0, 0, 0)' || c === 'transparent')) bg = bg.parentElement;
          const a = lum(getComputedStyle(s).color), b = lum(c);
          const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
          if (ratio < 4.5) out.push(s.className + ' ' + getComputedStyle(s).color + ' on ' + c + ': ' + ratio.toFixed(2));
        });
        return [...new Set(out)]; }""")
    assert not low, low
    context.close()
    assert blocked == [], f"the page asked other hosts for {blocked}"


def test_navigation_contents_previous_next_exercise_copy_and_search(served):
    out, base, browser = served
    context, blocked = _context(browser, base)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base.rstrip("/"))
    page = context.new_page()
    page.goto(base + "03_annulus.html", wait_until="load")
    # the skip link is the first tab stop and leads to the lesson
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.className") == "nc-skip"
    page.keyboard.press("Enter")
    assert page.url.endswith("#nc-main")
    # the contents, beside the lesson on a desktop: a section link scrolls to its heading
    toc = page.locator("details.nc-toc")
    assert toc.evaluate("el => el.open") and toc.is_visible()
    link = toc.locator("a").nth(3)
    target = link.get_attribute("href")
    link.click()
    assert page.url.endswith(target)
    top = page.evaluate("id => document.getElementById(decodeURIComponent(id)).getBoundingClientRect().top", target[1:])
    assert -2 <= top < 200, top  # at the top of the window (to sub-pixel rounding)
    # copy: the button puts the cell's code on the clipboard
    button = page.locator(".jp-InputArea-editor .nc-copy").first
    code_blocks = page.locator(".jp-InputArea-editor pre, .jp-RenderedMarkdown pre").count()
    assert page.locator(".nc-copy").count() == code_blocks > 0
    code = button.evaluate("b => b.parentElement.querySelector('pre').innerText")
    button.click()
    page.wait_for_function("() => document.querySelector('.nc-copy').textContent === 'Copied'")
    assert page.evaluate("() => navigator.clipboard.readText()") == code
    # a code block in the text has its copy button too: the grading line of an exercise page
    page.goto(base + "03_annulus_exercises.html", wait_until="load")
    grade = page.locator(".jp-RenderedMarkdown .nc-code", has_text="nodecourse grade").first
    grade.locator(".nc-copy").click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.nc-code .nc-copy')].some(b => b.textContent === 'Copied')"
    )
    assert "nodecourse grade" in page.evaluate("() => navigator.clipboard.readText()")
    page.goto(base + "03_annulus.html", wait_until="load")
    # previous / next at the bottom and at the top; lesson <-> exercise
    page.locator("nav.nc-pager-bottom a.nc-next").click()
    page.wait_for_url(base + "04_adjoint.html")
    page.locator("nav.nc-pager-top a.nc-prev").click()
    page.wait_for_url(base + "03_annulus.html")
    page.locator("a.nc-partner").click()
    page.wait_for_url(base + "03_annulus_exercises.html")
    page.locator("a.nc-partner").click()
    page.wait_for_url(base + "03_annulus.html")
    # search: a query finds the lesson, and a result opens it
    page.goto(base + "10_cheaper_and_exact.html", wait_until="load")
    page.fill("#nc-q", "circle probe")
    results = page.locator(".nc-results a")
    results.first.wait_for()
    hrefs = [results.nth(i).get_attribute("href") for i in range(results.count())]
    assert hrefs and all(h.startswith("03_annulus") for h in hrefs[:3]), hrefs
    page.screenshot(path=str(ARTIFACTS / "search-circle-probe.png"))
    results.first.click()
    page.wait_for_url(re.compile(re.escape(base) + r"03_annulus\.html#.+"))
    page.fill("#nc-q", "zzzz-nothing-like-this")
    assert page.locator(".nc-count").inner_text() == "No page mentions that."
    assert page.locator(".nc-results li").count() == 0
    context.close()
    assert blocked == [], blocked


def test_at_a_phones_width_no_page_scrolls_sideways(served):
    out, base, browser = served
    context = browser.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True)
    context.route(
        "**/*",
        lambda route: (
            route.continue_()
            if route.request.url.startswith(base) or route.request.url.startswith("data:")
            else route.abort()
        ),
    )
    page = context.new_page()
    page.set_default_timeout(60_000)
    problems = []
    for path in sorted(out.glob("*.html")):
        page.goto(base + path.name, wait_until="load")
        if page.locator(".nc-plotly").count():
            _wait_plotly_drawn(page)
            # each figure's plot keeps at least half the box's width (legend below, panels stacked)
            narrow = page.evaluate("""() => [...document.querySelectorAll('.nc-plotly')].map((box, i) => {
                const full = box.querySelector('.nc-plotly-live')._fullLayout;
                const widths = Object.keys(full).filter(k => /^xaxis[0-9]*$/.test(k)).map(k => full[k]._length);
                return [i, Math.min(...widths) / box.clientWidth]; }).filter(([i, share]) => !(share >= 0.5))""")
            if narrow:
                problems.append(f"{path.name}: plot narrower than half its box (figure, share): {narrow}")
            if path.stem.startswith(("02_", "05_")) and "_exercises" not in path.stem:
                for i in range(page.locator(".nc-plotly").count()):
                    page.locator(".nc-plotly").nth(i).screenshot(
                        path=str(ARTIFACTS / f"{path.stem}-phone-figure-{i}.png")
                    )
        width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        if width[0] > width[1]:
            problems.append(f"{path.name}: {width[0]} px wide in a {width[1]} px window")
        wide = page.evaluate("""() => [...document.querySelectorAll('main img, main .nc-scroll, main .nc-plotly')]
            .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).length""")
        if wide:
            problems.append(f"{path.name}: {wide} figures or tables wider than the screen")
        # targets of 24 px or more (WCAG 2.5.8): the navigation, the contents, the copy buttons
        small = page.evaluate("""() => [...document.querySelectorAll(
              '.nc-site-nav a, .nc-pager a, .nc-toc summary, .nc-toc a, .nc-copy, .nc-fold > summary')]
            .filter(e => e.getClientRects().length && e.getBoundingClientRect().height < 24)
            .map(e => e.className + ' ' + e.textContent.trim().slice(0, 30))""")
        if small:
            problems.append(f"{path.name}: {len(small)} targets under 24 px, e.g. {small[:3]}")
        # a copy button sits above its code, not over its first line
        covering = page.evaluate("""() => [...document.querySelectorAll('.nc-copy')].filter(b => {
            const pre = b.parentElement.querySelector('pre');
            return pre && b.getBoundingClientRect().bottom > pre.getBoundingClientRect().top + 1; }).length""")
        if covering:
            problems.append(f"{path.name}: {covering} copy buttons over their code")
        # every box that scrolls sideways (code, output, formula, figure, table) takes keyboard focus
        unfocusable = page.evaluate("""() => [...document.querySelectorAll('main *')]
            .filter(e => !e.closest('.nc-plotly-live') && e.scrollWidth > e.clientWidth + 1
                         && /auto|scroll/.test(getComputedStyle(e).overflowX) && e.tabIndex < 0)
            .map(e => e.tagName.toLowerCase() + '.' + [...e.classList].join('.'))""")
        if unfocusable:
            problems.append(f"{path.name}: scroll boxes without keyboard focus: {sorted(set(unfocusable))[:4]}")
        if page.locator("details.nc-toc").count() and page.locator("details.nc-toc").evaluate("el => el.open"):
            problems.append(f"{path.name}: the contents are open above the page on a phone")
        if path.name in ("03_annulus.html", "ledger.html", "10_cheaper_and_exact.html", "index.html"):
            page.screenshot(path=str(ARTIFACTS / f"{path.stem}-phone.png"))
    ledger_scrolls = None
    page.goto(base + "ledger.html", wait_until="load")
    ledger_scrolls = page.evaluate(
        "() => { const b = document.querySelector('.nc-scroll'); "
        "return b.scrollWidth > b.clientWidth && getComputedStyle(b).overflowX === 'auto'; }"
    )
    # the box takes keyboard focus, and the arrow keys scroll it
    page.focus(".nc-scroll")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    try:  # Chromium scrolls smoothly: the position moves over a few frames
        page.wait_for_function("() => document.querySelector('.nc-scroll').scrollLeft > 0", timeout=5_000)
    except Exception:  # noqa: BLE001 - the assertion below says what failed
        pass
    ledger_keys = page.evaluate("() => document.querySelector('.nc-scroll').scrollLeft")
    context.close()
    assert not problems, "\n".join(problems)
    assert ledger_scrolls, "the ledger's table scrolls inside its own box on a phone"
    assert ledger_keys > 0, "the arrow keys scroll the ledger's table once it has focus"


DESKTOP = {"width": 1280, "height": 900}


def test_the_ledger_opens_with_its_table_which_fits_a_desktop_and_each_row_has_an_anchor(served):
    out, base, browser = served
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    context, blocked = _context(browser, base)
    page = context.new_page()
    page.set_viewport_size(DESKTOP)
    page.goto(base + "ledger.html", wait_until="load")
    fit = page.evaluate("""() => {
        const box = document.querySelector('main .nc-scroll');
        const right = box.getBoundingClientRect().right;
        const cells = [...box.querySelectorAll('tr')].map(tr => tr.lastElementChild);
        return {scroll: box.scrollWidth - box.clientWidth, rows: cells.length,
                cut: cells.filter(c => c.getBoundingClientRect().right > right + 0.5).length,
                top: box.getBoundingClientRect().top}; }""")
    assert fit["rows"] > 10 and fit["scroll"] <= 0 and fit["cut"] == 0, fit
    assert fit["top"] < 2 * DESKTOP["height"], f"the table starts {fit['top']:.0f} px down the page"
    page.screenshot(path=str(ARTIFACTS / "ledger-1280.png"))
    # a row's anchor opens the page at that row
    page.goto(base + "ledger.html#deq-memory-reduction", wait_until="load")
    row = page.evaluate("""() => { const r = document.getElementById('deq-memory-reduction');
        return r && r.tagName === 'TR' ? r.getBoundingClientRect().top : null; }""")
    # the page scrolls by whole pixels and the layout is fractional: a row opened at the top can sit
    # a fraction of a pixel above it (-0.39 px measured on the 2-core machine with Debian's Chromium)
    assert row is not None and -1 < row < DESKTOP["height"], row
    page.screenshot(path=str(ARTIFACTS / "ledger-row-anchor.png"))
    context.close()
    assert blocked == [], blocked


def test_search_finds_ledger_rows_and_lesson_words_counts_results_and_takes_the_keyboard(served):
    from nodecourse.claims import load_rows

    out, base, browser = served
    context, blocked = _context(browser, base)
    page = context.new_page()
    page.goto(base + "04_adjoint.html", wait_until="load")
    count = page.locator(".nc-count")
    results = page.locator(".nc-results a")
    # every ledger row's id: its row is the first result
    for row_id in load_rows():
        page.fill("#nc-q", row_id)
        assert results.first.get_attribute("href") == f"ledger.html#{row_id}", row_id
    # lesson 4's words; the count says how many results the list holds
    for word in ("L-stability", "subnormal"):
        page.fill("#nc-q", word)
        hrefs = [results.nth(i).get_attribute("href") for i in range(results.count())]
        assert any(h.startswith("04_adjoint.html") for h in hrefs), (word, hrefs)
        n = len(hrefs)
        assert count.inner_text() == (f"{n} results" if n > 1 else "1 result"), (count.inner_text(), n)
    page.fill("#nc-q", "adjoint")
    n = results.count()
    assert n > 12 and count.inner_text() == f"{n} results", (n, count.inner_text())  # no longer cut at 12
    # the keyboard: down into the results and through them, up back to the box, Escape closes
    focused = "() => document.activeElement.getAttribute('href') || document.activeElement.id"
    page.focus("#nc-q")
    page.keyboard.press("ArrowDown")
    assert page.evaluate(focused) == results.nth(0).get_attribute("href")
    page.keyboard.press("ArrowDown")
    assert page.evaluate(focused) == results.nth(1).get_attribute("href")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    assert page.evaluate(focused) == "nc-q"
    panel = page.locator(".nc-results-panel")
    assert panel.is_visible()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Escape")
    assert not panel.is_visible() and page.evaluate(focused) == "nc-q"
    assert page.get_attribute(".nc-results-panel", "hidden") is not None
    # typing opens the results again; a click elsewhere on the page closes them
    page.keyboard.type(" solver")
    assert panel.is_visible() and results.count() > 0
    page.screenshot(path=str(ARTIFACTS / "search-adjoint-solver.png"))
    page.locator("main h1").click()
    assert not panel.is_visible()
    # Enter on a focused result opens it
    page.focus("#nc-q")
    page.keyboard.press("ArrowDown")
    target = page.evaluate(focused)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(re.escape(base + target.partition("#")[0]) + "#.+"))
    context.close()
    assert blocked == [], blocked


#: Text colours against the background they are drawn on (the nearest ancestor with one), for
#: the elements a reader reads: prose, links, code, prompts, navigation, contents, footer.
_LOW_CONTRAST_JS = """() => {
    const rgb = c => c.match(/[\\d.]+/g).slice(0, 4).map(Number);
    const lum = c => { const v = rgb(c).slice(0, 3).map(x => { x /= 255; return x <= 0.04045 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
                       return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
    const clear = c => c === 'transparent' || (rgb(c).length === 4 && rgb(c)[3] === 0);
    const out = [];
    document.querySelectorAll('main p, main li, main a, .highlight pre span, .jp-InputPrompt, .jp-OutputPrompt, '
                              + '.jp-RenderedText pre, .nc-site-nav a, .nc-toc a, .nc-pager a, .nc-footer').forEach(e => {
      if (!e.textContent.trim() || !e.getClientRects().length || e.closest('.nc-plotly')) return;
      let bg = e, c;
      while (bg && clear(c = getComputedStyle(bg).backgroundColor)) bg = bg.parentElement;
      if (!bg) c = 'rgb(255, 255, 255)';
      const a = lum(getComputedStyle(e).color), b = lum(c);
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      if (ratio < 4.5) out.push(e.tagName + '.' + e.className + ' ' + getComputedStyle(e).color + ' on ' + c + ': ' + ratio.toFixed(2));
    });
    return [...new Set(out)]; }"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_text_reaches_4_5_to_1_in_the_light_and_the_dark_scheme(served, scheme):
    out, base, browser = served
    context, blocked = _context(browser, base)
    page = context.new_page()
    page.emulate_media(color_scheme=scheme)
    problems = []
    for name in ("10_cheaper_and_exact.html", "04_adjoint_exercises.html", "ledger.html", "setup.html"):
        page.goto(base + name, wait_until="load")
        background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        dark = page.evaluate("() => matchMedia('(prefers-color-scheme: dark)').matches")
        assert dark == (scheme == "dark"), name
        problems += [f"{name}: {p}" for p in page.evaluate(_LOW_CONTRAST_JS)]
        if scheme == "dark":
            assert background not in ("rgb(255, 255, 255)", "rgba(0, 0, 0, 0)"), (name, background)
        page.screenshot(path=str(ARTIFACTS / f"{Path(name).stem}-{scheme}.png"))
    context.close()
    assert not problems, problems[:12]
    assert blocked == [], blocked


# A lesson with formulas and code, one with plotly figures, an exercise page, the ledger and the
# setup page: every kind of content the builder writes.
AXE_PAGES = (
    "10_cheaper_and_exact.html",
    "02_solvers_and_tolerance.html",
    "04_adjoint_exercises.html",
    "ledger.html",
    "setup.html",
)


@pytest.fixture(scope="module")
def axe_js():
    try:
        return B.install_axe()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        _unavailable(f"axe-core is not available: {exc}")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_core_finds_no_violation_on_a_lesson_an_exercise_the_ledger_and_setup(served, axe_js, scheme):
    out, base, browser = served
    context, blocked = _context(browser, base)
    page = context.new_page()
    page.emulate_media(color_scheme=scheme)
    found = []
    for width in (1300, 390):  # the phone layout has its own rules (the folded contents, tap sizes)
        page.set_viewport_size({"width": width, "height": 900})
        for name in AXE_PAGES:
            page.goto(base + name, wait_until="load")
            _wait_plotly_drawn(page)  # plotly draws after load
            for v in B.axe_violations(page, axe_js):
                found.append(f"{name} at {width} px: {v['id']} ({v['impact']}, {len(v['nodes'])} nodes): {v['help']}")
                found += [f"    {target}: {why.splitlines()[-1].strip()}" for target, why in v["nodes"][:3]]
    context.close()
    assert not found, "\n".join(found)
    assert blocked == [], blocked


def test_axe_core_as_injected_here_reports_a_page_with_known_faults(served, axe_js):
    # the check above can fail: on a page with no lang, no title and an image without alt text,
    # the same injection reports those rules
    out, base, browser = served
    context, blocked = _context(browser, base)
    page = context.new_page()
    page.goto(base + "setup.html", wait_until="load")  # a served page, so the origin is the site's
    page.set_content("<html><body><main><img src='data:,'></main></body></html>")
    ids = {v["id"] for v in B.axe_violations(page, axe_js)}
    context.close()
    assert {"html-has-lang", "document-title", "image-alt"} <= ids, ids
