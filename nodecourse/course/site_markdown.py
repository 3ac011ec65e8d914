"""Markdown for the course website: formulas as MathML, tables whose cells hold a ``|``.

Formulas are converted from TeX to MathML when the site is built (``latex2mathml``), so a page
shows them with no script and no network: Chromium, Firefox and Safari draw MathML natively.
The TeX source travels with each formula as its ``annotation`` (what a screen reader or a
copy can fall back on).

A markdown table whose header or rows contain ``|`` inside a cell (``exp(|c| T)``) is not a
table for a GFM parser: the pipe splits the cell. :func:`repair_table_pipes` escapes a pipe
that is not a column separator (a separator has white space on both sides, or starts or ends
the row) wherever a row would otherwise have more cells than the table's delimiter row.
"""

from __future__ import annotations

import html
import logging
import re

from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.filters.strings import _convert_header_id

log = logging.getLogger(__name__)

#: ``\Big\|``: TeX's size hints before a delimiter, which latex2mathml draws as text; without
#: the hint the delimiter is drawn at the size of the text around it.
_SIZE_HINT = re.compile(r"\\[Bb]igg?[lrm]?\s*(?=\\\||\\[{}]|\\[lr]?[Vv]ert|\\[lr]angle|[()\[\]|./])")
#: Escapes inside ``\text{...}`` (``\text{min\_factor}``) that latex2mathml keeps as written.
_TEXT_ARG = re.compile(r"\\text\{([^{}]*)\}")
_TEXT_ESCAPE = re.compile(r"\\([_%&$#{}])")
_BAR = re.compile(r"<mo((?: (?:stretchy|fence)=\"\w+\")*)>(&#x0007C;|&#x02016;)</mo>")
_DELIMITER_ROW = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def tex_to_mathml(tex: str, *, display: str = "inline") -> str:
    """``tex`` as a MathML ``<math>`` element (``display`` "inline" or "block"), with the TeX as its
    annotation. TeX that latex2mathml cannot read stays as code, and a warning names it."""
    from latex2mathml.converter import convert

    source = _SIZE_HINT.sub("", tex)
    source = _TEXT_ARG.sub(lambda m: "\\text{" + _TEXT_ESCAPE.sub(r"\1", m.group(1)) + "}", source)
    try:
        mathml = convert(source, display=display)
    except Exception as exc:  # noqa: BLE001 - latex2mathml raises several kinds; the formula stays readable
        log.warning("formula not converted to MathML (%s: %s): %s", type(exc).__name__, exc, tex)
        return f'<code class="nc-tex">{html.escape(tex)}</code>'
    # A bar or double bar (|x|, ||f||) is a fence: without this the browser spaces a bar in the middle
    # of a row like a relation ("|x | = 1.25").
    mathml = _BAR.sub(r'<mo\1 lspace="0" rspace="0">\2</mo>', mathml)
    head, _, rest = mathml.partition(">")
    body = rest.removesuffix("</math>")
    annotation = f'<annotation encoding="application/x-tex">{html.escape(tex, quote=False)}</annotation>'
    return f"{head}><semantics>{body}{annotation}</semantics></math>"


def plain_text(fragment) -> str:
    """The text a reader sees in an HTML ``fragment`` (a string or a BeautifulSoup tag), with each
    formula as the text of its MathML (``log|det J|``), not that text followed by its TeX
    annotation (``log|detJ|\\log|\\det J|``): for headings' ids, the contents and the search index."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(str(fragment), "html.parser")
    for note in soup.find_all("annotation"):
        note.extract()
    for math in soup.find_all("math"):
        math.replace_with(_math_text(math))
    return " ".join(soup.get_text(" ").split())


def _math_text(math) -> str:
    """A formula's MathML tokens joined as they read: ``log | det J |`` -> ``log|det J|`` (a space
    only between two words or numbers, which the formula draws apart)."""
    out = ""
    for token in math.find_all(["mi", "mn", "mo", "mtext"]):
        text = token.get_text().strip()
        if not text:
            continue
        if out and out[-1].isalnum() and text[0].isalnum():
            out += " "
        out += text
    return out


class CourseRenderer(IPythonRenderer):
    """nbconvert's markdown renderer with formulas as MathML instead of TeX left for MathJax."""

    def heading(self, text: str, level: int, **attrs) -> str:
        """A heading with its id and "¶" link, made here rather than by nbconvert's ``add_anchor``:
        that one round-trips the heading through ElementTree, which writes a formula's MathML as
        ``<ns0:math>`` (no browser draws it), and makes the id from the TeX annotation too."""
        if self.exclude_anchor_links:
            return super().heading(text, level, **attrs)
        anchor = html.escape(_convert_header_id(plain_text(text)), quote=True)
        link = f'<a class="anchor-link" href="#{anchor}">{self.anchor_link_text}</a>'
        return f'<h{level} id="{anchor}">{text}{link}</h{level}>\n'

    def block_math(self, body: str) -> str:
        return tex_to_mathml(body, display="block")

    def latex_environment(self, name: str, body: str) -> str:
        return tex_to_mathml(f"\\begin{{{name}}}{body}\\end{{{name}}}", display="block")

    def inline_math(self, body: str) -> str:
        return tex_to_mathml(body, display="inline")


def _split_row(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return re.split(r"(?<!\\)\|", body)


def _escape_inner_pipes(line: str) -> str:
    """Escape every ``|`` of ``line`` that is not a column separator (white space on both sides,
    or the row's first or last character)."""
    stripped = line.strip()
    out = []
    for i, ch in enumerate(stripped):
        if ch != "|" or (i > 0 and stripped[i - 1] == "\\"):
            out.append(ch)
            continue
        edge = i == 0 or i == len(stripped) - 1
        spaced = (i > 0 and stripped[i - 1].isspace()) and (i + 1 < len(stripped) and stripped[i + 1].isspace())
        out.append(ch if edge or spaced else "\\|")
    return "".join(out)


def repair_table_pipes(markdown: str) -> str:
    """``markdown`` with the pipes inside table cells escaped where they would split a cell
    (see the module docstring); rows that already fit their table are left as they are."""
    lines = markdown.split("\n")
    fenced = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
        if fenced or i == 0 or not _DELIMITER_ROW.match(line) or "|" not in lines[i - 1]:
            continue
        columns = len(_split_row(line))
        j = i - 1
        rows = [j]
        k = i + 1
        while k < len(lines) and lines[k].strip() and "|" in lines[k]:
            rows.append(k)
            k += 1
        for r in rows:
            if len(_split_row(lines[r])) != columns:
                fixed = _escape_inner_pipes(lines[r])
                if len(_split_row(fixed)) == columns:
                    lines[r] = fixed
    return "\n".join(lines)


def github_slug(text: str) -> str:
    """A heading's id as GitHub writes it for a markdown file ("Exercises and grading" ->
    "exercises-and-grading"): lower case, punctuation dropped, spaces as hyphens. The guides link
    to each other's sections this way, and the site keeps those links working."""
    kept = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return kept.replace(" ", "-")


class GuideRenderer(CourseRenderer):
    """The markdown renderer for the guides (``docs/*.md``, CONTRIBUTING.md): heading ids as GitHub's
    (:func:`github_slug`), so a link written for the repository's web view finds its section here."""

    def heading(self, text: str, level: int, **attrs) -> str:
        anchor = html.escape(github_slug(plain_text(text)), quote=True)
        link = f'<a class="anchor-link" href="#{anchor}">{self.anchor_link_text}</a>'
        return f'<h{level} id="{anchor}">{text}{link}</h{level}>\n'


def markdown_to_html(source: str, *, github_ids: bool = False, **renderer_options) -> str:
    """``source`` (markdown with TeX) as HTML with MathML formulas and repaired tables; with
    ``github_ids``, headings get GitHub's ids (:class:`GuideRenderer`)."""
    renderer = (GuideRenderer if github_ids else CourseRenderer)(escape=False, **renderer_options)
    return MarkdownWithMath(renderer=renderer).render(repair_table_pipes(source))
