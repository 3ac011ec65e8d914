"""The shape every page of the website shares, applied to nbconvert's HTML (and to the markdown
pages): a skip link, the site's navigation, a contents sidebar built from the page's headings,
the page itself, previous/next again at the end, and a footer with the version and the date.

Accessibility on the way: nbconvert's ``tabindex="0"`` on every cell is removed (a reader tabs
through links and controls, not through 60-80 cells), each heading's "¶" anchor is kept for
linking but taken out of the tab order, every table is put in a box that scrolls sideways on
its own (a phone scrolls the table, not the page). Each figure's PNG becomes a file the figure
links to, so a tap opens it at full size.

The search index (:func:`search_entries`) is one entry per section of a page: its heading, its
address and the text of the page's prose under it (code and outputs are left out).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from bs4 import BeautifulSoup

from nodecourse.course import site_markdown

#: Where the navigation goes: put in after the page's own links are rewritten (site.rewrite_links).
NAV_MARK = "<!-- nodecourse-site-nav -->"
PAGER_MARK = "<!-- nodecourse-site-pager -->"
IMAGES = "_images"
#: A page with fewer headings (the index) has no contents sidebar.
MIN_SECTIONS_FOR_CONTENTS = 3


@dataclass(frozen=True)
class Section:
    """One heading of a page: its level (1-3), its text and its element id."""

    level: int
    text: str
    anchor: str


def _heading_text(tag) -> str:
    """The heading as plain text: its "¶" link out, each formula as the text it shows (not its TeX)."""
    for a in tag.select("a.anchor-link"):
        a.extract()
    return site_markdown.plain_text(tag)


def headings(soup) -> list[Section]:
    found = []
    for tag in soup.find_all(["h1", "h2", "h3"]):
        if tag.get("id"):
            found.append(Section(int(tag.name[1]), _heading_text(BeautifulSoup(str(tag), "html.parser")), tag["id"]))
    return found


def toc_html(sections: list[Section], label: str) -> str:
    items = "".join(
        f'<li class="nc-toc-h{s.level}"><a href="#{html.escape(s.anchor, quote=True)}">{html.escape(s.text)}</a></li>'
        for s in sections
        if s.level > 1 or s is sections[0]
    )
    return (
        f'<aside class="nc-sidebar"><nav aria-label="Contents of {html.escape(label, quote=True)}">'
        f'<details class="nc-toc" open><summary>Contents</summary><ol>{items}</ol></details></nav></aside>'
    )


def _wrap_tables(soup, root) -> None:
    """Each table in a box that scrolls sideways on its own; the box takes keyboard focus (a
    keyboard reader scrolls it with the arrow keys) and is named after the table's columns; a name
    a table before it on the page already has gets a number ("Table of model, AUC (2)"), since
    two regions of one name cannot be told apart in a screen reader's list of landmarks."""
    used: dict[str, int] = {}
    for table in root.find_all("table"):
        if table.parent is not None and "nc-scroll" in (table.parent.get("class") or []):
            continue
        for th in table.find_all("th"):  # an empty corner over a column of row labels is no header
            if not th.get_text(strip=True) and not th.find(["img", "math"]):
                th.name = "td"
        heads = [" ".join(th.get_text(" ").split()) for th in table.find_all("th")[:4]]
        label = "Table" + (f" of {', '.join(h for h in heads if h)}" if any(heads) else "")
        used[label] = used.get(label, 0) + 1
        if used[label] > 1:
            label = f"{label} ({used[label]})"
        box = soup.new_tag("div", attrs={"class": "nc-scroll", "tabindex": "0", "role": "region", "aria-label": label})
        table.wrap(box)


#: The claims ledger's table (its first column "id", its last "verdict"): each row gets the row's
#: id as its anchor (``ledger.html#deq-memory-reduction``), and the id cell links to it.
LEDGER_FIRST, LEDGER_LAST = "id", "verdict"


def _anchor_ledger_rows(soup, root) -> None:
    for table in root.find_all("table"):
        heads = [th.get_text(strip=True) for th in table.find_all("th")]
        if not heads or heads[0] != LEDGER_FIRST or heads[-1] != LEDGER_LAST:
            continue
        table["class"] = (table.get("class") or []) + ["nc-ledger"]
        for tr in table.find_all("tr"):
            first = tr.find("td")
            row_id = first.get_text(strip=True) if first is not None else ""
            if not row_id or root.find(id=row_id) is not None:
                continue
            tr["id"] = row_id
            link = soup.new_tag("a", attrs={"href": f"#{row_id}", "class": "nc-row-link"})
            link.string = row_id
            first.clear()
            first.append(link)


def _quiet_anchors(root) -> None:
    for a in root.select("a.anchor-link"):
        a["tabindex"] = "-1"
        a["aria-label"] = "Link to this section"


def _images_to_files(soup, root, images: dict[str, bytes], stem: str) -> None:
    """Each figure's PNG (``.jp-RenderedImage img``, inline as data) becomes a file in ``_images/``,
    linked from the figure: on a phone a tap opens it at full size, to zoom into."""
    import base64

    for n, img in enumerate(root.select(".jp-RenderedImage img[src^='data:image/png;base64,']"), start=1):
        name = f"{IMAGES}/{stem}-{n}.png"
        images[name] = base64.b64decode(img["src"].split(",", 1)[1])
        img["src"] = name
        link = soup.new_tag(
            "a",
            attrs={
                "href": name,
                "class": "nc-figure-link",
                "aria-label": f"Open the figure at full size: {img.get('alt', '')}",
            },
        )
        img.wrap(link)


def shape(
    page_html: str, *, label: str, images: dict[str, bytes] | None = None, stem: str = ""
) -> tuple[str, list[Section]]:
    """``page_html`` (nbconvert's page, or a markdown page with one ``<main>``) in the site's
    shape, with :data:`NAV_MARK` and :data:`PAGER_MARK` where the navigation goes; its sections.
    With ``images`` (a dict), each figure's PNG is put there by its path in the site
    (``_images/<stem>-<n>.png``) and the page links to that file instead of holding the data."""
    soup = BeautifulSoup(page_html, "html.parser")
    for tag in soup.select("[tabindex]"):
        del tag["tabindex"]
    main = soup.find("main")
    _quiet_anchors(main)
    _anchor_ledger_rows(soup, main)
    _wrap_tables(soup, main)
    if images is not None:
        _images_to_files(soup, main, images, stem)
    sections = headings(main)
    main["id"] = "nc-main"
    main["class"] = (main.get("class") or []) + ["nc-content"]
    sidebar = len(sections) >= MIN_SECTIONS_FOR_CONTENTS
    layout = soup.new_tag("div", attrs={"class": "nc-layout" if sidebar else "nc-layout nc-no-sidebar"})
    main.wrap(layout)
    if sidebar:
        layout.insert(0, BeautifulSoup(toc_html(sections, label), "html.parser"))
    layout.insert_before(BeautifulSoup(NAV_MARK, "html.parser"))
    layout.insert_after(BeautifulSoup(PAGER_MARK, "html.parser"))
    body = soup.find("body")
    body.insert(0, BeautifulSoup('<a class="nc-skip" href="#nc-main">Skip to the content</a>', "html.parser"))
    return str(soup), sections


def search_entries(page_html: str, *, page: str, url: str) -> list[dict]:
    """The page's sections for the search index: ``page``, ``section``, ``url`` (with the
    heading's #anchor) and ``text`` (all the prose under the heading: code and outputs are left
    out). A table row with an id (the ledger's) is an entry of its own, its id the section."""
    soup = BeautifulSoup(page_html, "html.parser")
    main = soup.find("main") or soup
    for tag in main.select("a.anchor-link, annotation, .nc-toc, script, style"):
        tag.extract()
    for math in main.find_all("math"):
        math.replace_with(site_markdown._math_text(math))
    prose = main.select(".jp-MarkdownCell .jp-RenderedMarkdown") or [main]
    entries = [{"page": page, "section": "", "url": url, "text": ""}]
    rows: list[dict] = []
    for block in prose:
        for tag in block.find_all(["h1", "h2", "h3", "p", "li", "td", "th", "tr"]):
            if tag.name == "tr":
                if tag.get("id"):
                    text = " ".join(tag.get_text(" ").split())
                    rows.append({"page": page, "section": tag["id"], "url": f"{url}#{tag['id']}", "text": text})
                continue
            if tag.name in ("td", "th") and tag.find_parent("tr", id=True):
                continue  # in its row's own entry
            text = " ".join(tag.get_text(" ").split())
            if tag.name in ("h1", "h2", "h3") and tag.get("id"):
                section = "" if text == page else text  # the page's own title is not a section of it
                entries.append({"page": page, "section": section, "url": f"{url}#{tag['id']}", "text": ""})
            elif text and not tag.find_parent(["li", "td", "th"]):  # nested text is in its parent's already
                entries[-1]["text"] = (entries[-1]["text"] + " " + text).strip()
    return [e for e in entries if e["section"] or e["text"]] + rows


def search_box() -> str:
    """The search form (hidden until the script finds the index): the box, and a panel under it
    with the count of results (announced to a screen reader) and the results. The box is a plain
    search box (no ``aria-expanded``: a searchbox has no such state, and the panel is a list of links,
    not a combobox's listbox); the live count says when results appear."""
    return (
        '<form class="nc-search" role="search" hidden><label for="nc-q">Search the course</label>'
        '<input id="nc-q" type="search" placeholder="Search the course" autocomplete="off" '
        'aria-controls="nc-results-panel" aria-describedby="nc-count">'
        '<div class="nc-results-panel" id="nc-results-panel" hidden>'
        '<p class="nc-count" id="nc-count" role="status" aria-live="polite"></p>'
        '<ol class="nc-results" aria-label="Search results"></ol></div></form>'
    )


def footer(version: str, date: str, repo_url: str) -> str:
    return (
        f'<footer class="nc-footer">nodecourse {html.escape(version)}; this site was built on {html.escape(date)} '
        f"from the committed notebooks (executed in quick mode). "
        f'<a href="{html.escape(repo_url, quote=True)}">The course\'s repository</a>.</footer>'
    )
