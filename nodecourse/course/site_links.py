"""The built site's link check: every internal link (``href``/``src`` without a scheme) of its HTML
pages must name a file of the site and, with an ``#anchor``, an element of that page.
``nodecourse site`` exits 1 when one does not (:func:`broken_links` names each).
"""

from __future__ import annotations

import urllib.parse
from html.parser import HTMLParser
from pathlib import Path


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
