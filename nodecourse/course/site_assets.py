"""The website's stylesheet and its one script (written to ``site/_static/``).

The stylesheet works without the script: the contents, the folds (``<details>``), the figures
and the tables need none. The script adds what only a script can: copy buttons on code, the
search box (over ``_static/search-index.js``), and the contents folded on a narrow screen.
"""

from __future__ import annotations

#: Colours of highlighted code, over nbconvert's JupyterLab-light values (some of which are
#: under 4.5:1 on the code background #f5f5f5: comments #408080 4.17:1, operators #a2f 4.40:1).
#: Each here is 4.5:1 or more on CODE_BACKGROUND (tests/test_site.py computes it).
CODE_BACKGROUND = "#f5f5f5"
CODE_COLOURS = {
    "atom": "#4040c0",
    "attribute": "#0000b0",
    "bracket": "#5c5c40",
    "builtin": "#006d00",
    "comment": "#3b6767",
    "def": "#0000c8",
    "error": "#c00000",
    "header": "#0000c8",
    "hr": "#595959",
    "keyword": "#006d00",
    "link": "#0000b0",
    "meta": "#7a1fa2",
    "number": "#006d00",
    "operator": "#7a1fa2",
    "property": "#004f8a",
    "punctuation": "#004f8a",
    "qualifier": "#555555",
    "quote": "#006d00",
    "string": "#a31515",
    "tag": "#116611",
    "variable": "#212121",
}

#: The ``In [n]:`` / ``Out[n]:`` prompts: nbconvert draws them in grey at half opacity (2.16:1 on
#: white); here at full opacity, each 4.5:1 or more on PROMPT_BACKGROUND (tests/test_site.py).
PROMPT_BACKGROUND = "#ffffff"
PROMPT_COLOURS = {"inprompt": "#1f5f99", "outprompt": "#9a3b1f", "not-active": "#595959"}
#: Links in prose: underlined (not told apart by colour alone), in a blue of 4.5:1 or more.
LINK_COLOUR = "#0d47a1"

#: The dark scheme (``prefers-color-scheme: dark``): nbconvert's dark JupyterLab theme with these
#: over it, each 4.5:1 or more on its background (tests/test_site.py computes it).
DARK_CODE_BACKGROUND = "#1e1e1e"
DARK_CODE_COLOURS = {
    "atom": "#c3a6ff",
    "attribute": "#9cdcfe",
    "bracket": "#d4d4aa",
    "builtin": "#7ee787",
    "comment": "#9ab8b8",
    "def": "#79c0ff",
    "error": "#ff7b72",
    "header": "#79c0ff",
    "hr": "#b0b0b0",
    "keyword": "#7ee787",
    "link": "#79c0ff",
    "meta": "#d2a8ff",
    "number": "#a5d6a7",
    "operator": "#d2a8ff",
    "property": "#9cdcfe",
    "punctuation": "#9cdcfe",
    "qualifier": "#c0c0c0",
    "quote": "#7ee787",
    "string": "#ffab91",
    "tag": "#7ee787",
    "variable": "#e0e0e0",
}
DARK_BACKGROUND = "#111111"  # nbconvert's dark --jp-layout-color0
DARK_TEXT = "#e8e8e8"
DARK_PROMPT_COLOURS = {"inprompt": "#7fb8ff", "outprompt": "#ff9e80", "not-active": "#b0b0b0"}
DARK_LINK_COLOUR = "#8ab4f8"

_CODE_VARS = "\n".join(f"  --jp-mirror-editor-{name}-color: {colour};" for name, colour in CODE_COLOURS.items())
_DARK_CODE_VARS = "\n".join(
    f"    --jp-mirror-editor-{name}-color: {colour};" for name, colour in DARK_CODE_COLOURS.items()
)

SITE_CSS = """
:root { --nc-text-width: 75ch; }
/* on body, not :root: nbconvert's theme sets these on :root after this stylesheet */
body {
  --jp-cell-editor-background: %(background)s;
%(code_vars)s
  --jp-cell-inprompt-font-color: %(inprompt)s;
  --jp-cell-outprompt-font-color: %(outprompt)s;
  --jp-cell-prompt-not-active-font-color: %(not_active)s;
  --jp-cell-prompt-not-active-opacity: 1;
  --jp-content-link-color: %(link)s;
}
/* links in the text are underlined: colour alone does not tell them apart */
.nc-content .jp-RenderedHTMLCommon a:not(.anchor-link), body.nc-plain main a:not(.anchor-link) {
  text-decoration: underline; color: %(link)s; }
.nc-skip { position: absolute; left: -999px; top: 0; background: #fff; padding: 0.5em 1em; z-index: 10; }
.nc-skip:focus { left: 0.5em; }
.nc-site-nav { font-family: system-ui, sans-serif; padding: 0.6em 1em; margin-bottom: 1em;
  border-bottom: 1px solid #ccc; display: flex; flex-wrap: wrap; gap: 0.4em 1.2em; align-items: center; }
.nc-site-nav a { text-decoration: none; }
.nc-site-nav .nc-actions { margin-left: auto; display: flex; flex-wrap: wrap; gap: 0.4em 1em; }
.nc-pager { font-family: system-ui, sans-serif; display: flex; flex-wrap: wrap; justify-content: space-between;
  gap: 0.6em 1em; padding: 0.8em 1em; border-top: 1px solid #ccc; margin-top: 1.5em; }
.nc-pager a { text-decoration: none; }
.nc-pager-top { border-top: 0; margin-top: 0; padding-top: 0; }
.nc-footer { font-family: system-ui, sans-serif; font-size: 0.85em; color: #444; padding: 0.5em 1em 2em; }
/* search */
.nc-search { position: relative; }
.nc-search input { font: inherit; padding: 0.2em 0.4em; width: 14em; max-width: 60vw; }
.nc-search label { position: absolute; left: -999px; }
.nc-results-panel { position: absolute; z-index: 5; background: #fff; border: 1px solid #999; margin: 0.2em 0 0;
  padding: 0.3em 0.6em; width: min(32em, 90vw); max-height: 70vh; overflow-y: auto; }
.nc-results-panel[hidden] { display: none; }
.nc-count { margin: 0.2em 0; font-weight: 600; }
.nc-results { list-style: none; margin: 0; padding: 0; }
.nc-results li { margin: 0.4em 0; }
.nc-results a:focus { outline: 2px solid #1a5fb4; outline-offset: 1px; }
.nc-results small { display: block; color: #444; }
/* the page: contents beside the lesson on a wide screen, above it on a narrow one */
.nc-layout { display: grid; grid-template-columns: 15rem minmax(0, 1fr); gap: 0 2rem;
  max-width: 78rem; margin: 0 auto; padding: 0 1rem; }
.nc-layout.nc-no-sidebar { grid-template-columns: minmax(0, 1fr); }
.nc-sidebar { font-family: system-ui, sans-serif; font-size: 0.95rem; }
.nc-toc { position: sticky; top: 0.5em; max-height: calc(100vh - 1em); overflow-y: auto; }
.nc-toc summary { font-weight: 600; cursor: pointer; }
.nc-toc ol { list-style: none; padding-left: 0.8em; margin: 0.3em 0; }
.nc-toc a { text-decoration: none; display: block; padding: 0.2em 0; min-height: 24px; box-sizing: border-box; }
/* 24 px targets (WCAG 2.5.8) for the navigation's links and the buttons */
.nc-site-nav a, .nc-pager a { display: inline-flex; align-items: center; min-height: 24px; }
.nc-results a { display: flex; align-items: center; min-height: 24px; }
.nc-toc summary, .nc-fold > summary { min-height: 24px; box-sizing: border-box; padding: 0.2em 0; }
.nc-toc .nc-toc-h3 { padding-left: 0.8em; font-size: 0.95em; }
.nc-content { min-width: 0; }
@media (max-width: 60rem) {
  .nc-layout { grid-template-columns: minmax(0, 1fr); padding: 0 0.5rem; }
  .nc-toc { position: static; max-height: none; border: 1px solid #ccc; padding: 0.4em 0.6em; margin-bottom: 1em; }
}
/* readable text, figures that fit, tables that scroll inside their box */
body.jp-Notebook { padding: 0; }
.nc-content .jp-RenderedMarkdown > *, .nc-content .jp-RenderedText pre, body.nc-plain main > p,
body.nc-plain main > ul, body.nc-plain main > ol { max-width: var(--nc-text-width); }
.nc-content .jp-RenderedMarkdown { font-size: 1rem; line-height: 1.55; }
.nc-content img, .nc-plotly-static { max-width: 100%%; height: auto; }
.nc-content .jp-RenderedImage { max-width: 100%%; overflow-x: auto; }
.nc-content pre { overflow-x: auto; }
.nc-content .jp-RenderedMarkdown code, body.nc-plain code { overflow-wrap: anywhere; }
.nc-content .jp-OutputArea-output pre { white-space: pre; }
.nc-figure-link { display: inline-block; max-width: 100%%; }
.nc-scroll { max-width: 100%%; overflow-x: auto; margin: 0.5em 0; }
.nc-scroll table { border-collapse: collapse; }
.nc-scroll td, .nc-scroll th { text-align: left !important; vertical-align: top; padding: 0.3em 0.6em;
  border: 1px solid #ccc; min-width: 6em; max-width: 28em; }
.nc-content .jp-RenderedHTMLCommon td, .nc-content .jp-RenderedHTMLCommon th { text-align: left; vertical-align: top; }
.nc-scroll:focus-visible, [data-nc-scroller]:focus-visible { outline: 2px solid #1a5fb4; outline-offset: 2px; }
/* the claims ledger: seven columns that fit the page's width on a desktop (long words and ids
   break anywhere), and scroll inside their box below 50rem */
table.nc-ledger { table-layout: fixed; width: 100%%; min-width: 50rem; font-size: 0.85em; }
table.nc-ledger td, table.nc-ledger th { min-width: 0; max-width: none; overflow-wrap: anywhere; padding: 0.3em 0.4em; }
table.nc-ledger th:nth-child(1) { width: 14%%; }
table.nc-ledger th:nth-child(2) { width: 17%%; }
table.nc-ledger th:nth-child(3) { width: 13%%; }
table.nc-ledger th:nth-child(4) { width: 12%%; }
table.nc-ledger th:nth-child(5) { width: 14%%; }
table.nc-ledger th:nth-child(6) { width: 18%%; }
table.nc-ledger th:nth-child(7) { width: 12%%; }
table.nc-ledger tr:target { outline: 3px solid #1a5fb4; outline-offset: -3px; background: #eef4fb; }
table.nc-ledger .nc-row-link { font-weight: 600; }
.nc-plotly { position: relative; max-width: 100%%; overflow-x: auto; }
.nc-plotly-drawn .nc-plotly-static { display: none; }
.nc-plotly-missing { color: #a00; }
math[display="block"] { margin: 0.6em 0; overflow-x: auto; overflow-y: hidden; max-width: 100%%; }
/* folds, copy buttons, explorers */
.nc-fold > summary { cursor: pointer; font-family: system-ui, sans-serif; font-size: 0.85em; color: #333;
  padding: 0.2em 0; }
.jp-InputArea-editor { position: relative; }
.nc-code { position: relative; }
.nc-copy { position: absolute; top: 0.2em; right: 0.2em; font: 0.8em system-ui, sans-serif; padding: 0.1em 0.5em;
  background: #fff; border: 1px solid #888; border-radius: 3px; cursor: pointer; color: #222; min-height: 24px;
  min-width: 24px; z-index: 1; }
/* on a phone the button sits above the code, not over the end of its first line */
@media (max-width: 40rem) { .nc-copy { position: static; display: block; margin: 0 0 0.2em auto; } }
.nc-explorer-static { border: 1px solid #9ab; background: #f4f8fb; padding: 0.3em 1em; max-width: var(--nc-text-width); }
.nc-explorer-title { font-weight: 600; }
/* prompts take room a phone does not have */
@media (max-width: 40rem) {
  .jp-InputPrompt, .jp-OutputPrompt { display: none !important; }
  .jp-Cell { padding: 0.3em 0 !important; }
}
a.anchor-link { opacity: 0.4; text-decoration: none; }
body.nc-plain { font-family: system-ui, sans-serif; margin: 0; }
body.nc-plain main { max-width: 60em; padding: 0 0 3em; }
body.nc-plain table { border-collapse: collapse; font-size: 0.9em; }
body.nc-plain td, body.nc-plain th { border: 1px solid #ccc; padding: 0.3em 0.5em; vertical-align: top; }
/* the dark scheme: nbconvert's dark theme (linked for this media) and the site's own colours */
@media (prefers-color-scheme: dark) {
  :root { color-scheme: dark; }
  body {
    --jp-cell-editor-background: %(dark_code_bg)s;
%(dark_code_vars)s
    --jp-cell-inprompt-font-color: %(dark_inprompt)s;
    --jp-cell-outprompt-font-color: %(dark_outprompt)s;
    --jp-cell-prompt-not-active-font-color: %(dark_not_active)s;
    --jp-content-link-color: %(dark_link)s;
    background: %(dark_bg)s; color: %(dark_text)s;
  }
  a, .nc-content .jp-RenderedHTMLCommon a:not(.anchor-link), body.nc-plain main a:not(.anchor-link) { color: %(dark_link)s; }
  .nc-site-nav, .nc-pager, .nc-toc, .nc-scroll td, .nc-scroll th, body.nc-plain td, body.nc-plain th { border-color: #555; }
  .nc-footer, .nc-results small, .nc-fold > summary { color: #c8c8c8; }
  .nc-results-panel, .nc-copy, .nc-skip, .nc-search input { background: %(dark_code_bg)s; color: %(dark_text)s;
    border-color: #888; }
  .nc-explorer-static { background: #16222c; border-color: #46607a; }
  table.nc-ledger tr:target { background: #1a2a3d; }
  .nc-plotly, .jp-RenderedImage img { background: #fff; }  /* figures keep their white ground */
}
""" % {
    "dark_code_bg": DARK_CODE_BACKGROUND,
    "dark_code_vars": _DARK_CODE_VARS,
    "dark_inprompt": DARK_PROMPT_COLOURS["inprompt"],
    "dark_outprompt": DARK_PROMPT_COLOURS["outprompt"],
    "dark_not_active": DARK_PROMPT_COLOURS["not-active"],
    "dark_link": DARK_LINK_COLOUR,
    "dark_bg": DARK_BACKGROUND,
    "dark_text": DARK_TEXT,
    "background": CODE_BACKGROUND,
    "code_vars": _CODE_VARS,
    "inprompt": PROMPT_COLOURS["inprompt"],
    "outprompt": PROMPT_COLOURS["outprompt"],
    "not_active": PROMPT_COLOURS["not-active"],
    "link": LINK_COLOUR,
}

SITE_JS = r"""
(function () {
  // contents: folded on a narrow screen, open beside the page on a wide one
  var toc = document.querySelector('details.nc-toc');
  if (toc && window.matchMedia('(max-width: 60rem)').matches) toc.removeAttribute('open');

  // a box that scrolls sideways (code, an output, a wide formula or figure) takes keyboard focus, so
  // a keyboard reader can scroll it; one that fits is no tab stop. Tables' boxes are focusable in
  // the page itself (site_page._wrap_tables).
  window.ncMarkScrollers = function () {
    document.querySelectorAll('main *').forEach(function (el) {
      if (el.closest('.nc-plotly-live')) return;  // plotly's own drawing
      var scrolls = el.scrollWidth > el.clientWidth + 1 && /auto|scroll/.test(getComputedStyle(el).overflowX);
      if (scrolls && !el.hasAttribute('tabindex')) {
        el.setAttribute('tabindex', '0');
        el.setAttribute('data-nc-scroller', '');
      } else if (!scrolls && el.hasAttribute('data-nc-scroller')) {
        el.removeAttribute('tabindex');
        el.removeAttribute('data-nc-scroller');
      }
    });
  };
  window.ncMarkScrollers();
  var resizing;
  window.addEventListener('resize', function () { clearTimeout(resizing); resizing = setTimeout(window.ncMarkScrollers, 200); });
  window.addEventListener('load', window.ncMarkScrollers);

  // a copy button on every code block: a code cell's, and one in the text (markdown); a block
  // in the text is put in a box (nc-code) that holds the button as a cell's editor does
  var blocks = [];
  document.querySelectorAll('.jp-InputArea-editor').forEach(function (editor) {
    var pre = editor.querySelector('pre');
    if (pre) blocks.push([editor, pre]);
  });
  document.querySelectorAll('main .jp-RenderedMarkdown pre, body.nc-plain main pre').forEach(function (pre) {
    var box = document.createElement('div');
    box.className = 'nc-code';
    pre.parentNode.insertBefore(box, pre);
    box.appendChild(pre);
    blocks.push([box, pre]);
  });
  blocks.forEach(function (pair) {
    var editor = pair[0], pre = pair[1];
    var button = document.createElement('button');
    button.type = 'button';
    button.className = 'nc-copy';
    button.textContent = 'Copy';
    button.setAttribute('aria-label', 'Copy this code');
    button.addEventListener('click', function () {
      var text = pre.innerText;
      var done = function () { button.textContent = 'Copied'; setTimeout(function () { button.textContent = 'Copy'; }, 1500); };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, function () {});
      } else {
        var area = document.createElement('textarea');
        area.value = text; document.body.appendChild(area); area.select();
        try { document.execCommand('copy'); done(); } catch (e) {}
        document.body.removeChild(area);
      }
    });
    editor.insertBefore(button, editor.firstChild);  // first: on a phone it sits above the code
  });

  // search: every term must occur (in the section's heading, its text or its page's title); a
  // match in the heading ranks first, then one in the text. Every result is listed, under a
  // count; ArrowDown/ArrowUp move from the box into the results and through them, Escape or a
  // click elsewhere closes them.
  var form = document.querySelector('form.nc-search');
  if (!form || !window.NC_SEARCH) return;
  form.hidden = false;
  var input = form.querySelector('input');
  var panel = form.querySelector('.nc-results-panel');
  var count = form.querySelector('.nc-count');
  var list = form.querySelector('.nc-results');
  var links = function () { return Array.prototype.slice.call(list.querySelectorAll('a')); };
  var close = function () { panel.hidden = true; };
  var open = function () { panel.hidden = false; };
  form.addEventListener('submit', function (e) { e.preventDefault(); var a = list.querySelector('a'); if (a) a.click(); });
  var search = function () {
    var terms = input.value.toLowerCase().split(/\s+/).filter(function (t) { return t.length > 1; });
    list.innerHTML = '';
    count.textContent = '';
    if (!terms.length) { close(); return; }
    var hits = [];
    window.NC_SEARCH.forEach(function (entry) {
      var section = entry.section.toLowerCase();
      var body = entry.text.toLowerCase();
      var title = entry.page.toLowerCase();
      var score = 0;
      for (var i = 0; i < terms.length; i++) {
        if (section === terms[i]) score += 10;  // a ledger row's id, as typed
        else if (section.indexOf(terms[i]) >= 0) score += 3;
        else if (body.indexOf(terms[i]) >= 0) score += 1;
        else if (title.indexOf(terms[i]) >= 0) score += 0.5;  // the page's title is every section's
        else return;
      }
      hits.push([score, entry]);
    });
    hits.sort(function (a, b) { return b[0] - a[0]; });
    hits.forEach(function (hit) {
      var entry = hit[1];
      var li = document.createElement('li');
      var a = document.createElement('a');
      a.href = entry.url;
      a.textContent = entry.section ? entry.page + ': ' + entry.section : entry.page;
      var at = entry.text.toLowerCase().indexOf(terms[0]);
      var small = document.createElement('small');
      small.textContent = at >= 0 ? '…' + entry.text.slice(Math.max(0, at - 40), at + 100) + '…' : entry.text.slice(0, 120);
      li.appendChild(a); li.appendChild(small); list.appendChild(li);
    });
    count.textContent = hits.length === 0 ? 'No page mentions that.'
      : hits.length === 1 ? '1 result' : hits.length + ' results';
    open();
  };
  input.addEventListener('input', search);
  input.addEventListener('focus', function (e) {  // back to the box from elsewhere: the results again
    if (e.relatedTarget && form.contains(e.relatedTarget)) return;  // from a result (Escape, ArrowUp)
    if (input.value.trim() && panel.hidden) search();
  });
  form.addEventListener('keydown', function (e) {
    var all = links();
    var at = all.indexOf(document.activeElement);
    if (e.key === 'Escape') {
      if (!panel.hidden) { e.preventDefault(); close(); input.focus(); }
    } else if (e.key === 'ArrowDown' && !panel.hidden && all.length) {
      e.preventDefault();
      all[Math.min(at + 1, all.length - 1)].focus();
    } else if (e.key === 'ArrowUp' && at >= 0) {
      e.preventDefault();
      if (at === 0) input.focus(); else all[at - 1].focus();
    }
  });
  document.addEventListener('click', function (e) { if (!form.contains(e.target)) close(); });
  document.addEventListener('focusin', function (e) { if (!form.contains(e.target)) close(); });
})();
"""
