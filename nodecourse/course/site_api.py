"""The website's API reference, generated from the package itself: one page per public package
(:data:`PUBLIC_PACKAGES`), each name of its ``__all__`` with its kind, its signature and the first
paragraph of its docstring, and an index page of the packages.

Why the site builder's own rather than pdoc or Sphinx autodoc: it needs no package beyond the lock,
it reads ``__all__`` (the surface; everything else is internal, docs/library.md) rather than every
module it finds, and its pages share the site's navigation, search and link check.
"""

from __future__ import annotations

import html
import importlib
import importlib.util
import inspect
import re
from dataclasses import dataclass
from types import ModuleType

#: The packages whose ``__all__`` is the library's surface (docs/library.md, "Library surface"), in
#: the order the reference lists them. The lessons' code and the ``nodecourse`` command are left out:
#: each lesson documents its own, and the command its ``--help``.
PUBLIC_PACKAGES = (
    "nodecourse",
    "nodecourse.solvers",
    "nodecourse.models",
    "nodecourse.models.latent",
    "nodecourse.deq",
    "nodecourse.cde",
    "nodecourse.sde",
    "nodecourse.measure",
    "nodecourse.data",
    "nodecourse.data.physionet",
    "nodecourse.plotting",
    "nodecourse.widgets",
    "nodecourse.audit",
    "nodecourse.claims",
    "nodecourse.validation",
    "nodecourse.config",
    "nodecourse.training",
)
INDEX_PAGE = "api.html"
#: A constant's value is shown up to this many characters.
VALUE_CHARS = 80


@dataclass(frozen=True)
class Entry:
    """One public name: what it is ("class", "function", "module", or a constant's type), its
    signature ("" where it has none), and the first paragraph of its docstring ("" where none)."""

    name: str
    kind: str
    signature: str
    summary: str


def page_name(package: str) -> str:
    """The reference page of ``package`` ("nodecourse.deq" -> "api-nodecourse.deq.html")."""
    return f"api-{package}.html"


def first_paragraph(doc: str | None) -> str:
    """The first paragraph of a docstring, on one line ("" for none)."""
    if not doc:
        return ""
    lines = []
    for line in inspect.cleandoc(doc).splitlines():
        if not line.strip():
            break
        lines.append(line.strip())
    return " ".join(lines)


_ROLE = re.compile(r":[a-z]+:`~?(?:[\w.]*\.)?([^`]+)`")  # :class:`~a.b.Name` -> Name
_LITERAL = re.compile(r"``(.+?)``")


def docstring_html(text: str) -> str:
    """A docstring's paragraph as HTML: its ``literals`` and :role:`targets` as code, the rest escaped."""
    out = html.escape(text)
    out = _ROLE.sub(lambda m: f"<code>{m.group(1)}</code>", out)
    return _LITERAL.sub(lambda m: f"<code>{m.group(1)}</code>", out)


def _member(module: ModuleType, name: str):
    if hasattr(module, name):
        return getattr(module, name)
    try:
        spec = importlib.util.find_spec(f"{module.__name__}.{name}")
    except ModuleNotFoundError:  # the module is no package
        spec = None
    if spec is not None:  # a submodule exported by name
        return importlib.import_module(f"{module.__name__}.{name}")
    raise AttributeError(f"{module.__name__}.__all__ names {name!r}, which it does not have: export it or drop it")


def entry(module: ModuleType, name: str) -> Entry:
    """What the reference says of ``module.name``."""
    obj = _member(module, name)
    if inspect.ismodule(obj):
        return Entry(name, "module", "", first_paragraph(obj.__doc__))
    if inspect.isclass(obj) or callable(obj):
        kind = "class" if inspect.isclass(obj) else "function"
        try:
            signature = str(inspect.signature(obj))
        except (TypeError, ValueError):  # a builtin or C type without one
            signature = ""
        own = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
        return Entry(name, kind, signature, first_paragraph(own))
    value = repr(obj)
    if len(value) > VALUE_CHARS:
        value = value[: VALUE_CHARS - 3] + "..."
    return Entry(name, type(obj).__name__, f" = {value}", "")


def entries(package: str) -> list[Entry]:
    """Every name of ``package``'s ``__all__``, in its order."""
    module = importlib.import_module(package)
    names = getattr(module, "__all__", None)
    if not isinstance(names, list | tuple):
        raise TypeError(f"{package} has no __all__ list: declare its public names there")
    return [entry(module, n) for n in names]


def package_page(package: str) -> tuple[str, str]:
    """``(title, body HTML)`` of ``package``'s reference page."""
    module = importlib.import_module(package)
    rows = []
    for e in entries(package):
        signature = f"<code>{html.escape(e.signature)}</code>" if e.signature else ""
        summary = f"<p>{docstring_html(e.summary)}</p>" if e.summary else ""
        rows.append(
            f'<dt id="{html.escape(e.name, quote=True)}"><code><strong>{html.escape(e.name)}</strong></code>'
            f"{signature} <em>{html.escape(e.kind)}</em></dt><dd>{summary}</dd>"
        )
    title = f"API reference: {package}"
    lead = first_paragraph(module.__doc__)
    body = (
        f'<h1 id="api-reference">{html.escape(title)}</h1>'
        + (f"<p>{docstring_html(lead)}</p>" if lead else "")
        + f'<p><a href="{INDEX_PAGE}">Every package</a>. <code>from {html.escape(package)} import ...</code> '
        "each name below (its <code>__all__</code>); everything else in the package is internal.</p>"
        f'<h2 id="names">Names</h2><dl class="nc-api">{"".join(rows)}</dl>'
    )
    return title, body


def index_page() -> tuple[str, str]:
    """``(title, body HTML)`` of the reference's index: each package with its docstring's first paragraph."""
    items = []
    for package in PUBLIC_PACKAGES:
        lead = first_paragraph(importlib.import_module(package).__doc__)
        items.append(
            f'<li><a href="{page_name(package)}"><code>{html.escape(package)}</code></a>'
            + (f": {docstring_html(lead)}" if lead else "")
            + "</li>"
        )
    title = "API reference"
    body = (
        f'<h1 id="api-reference">{title}</h1>'
        "<p>The public names of each package of the library, generated from its <code>__all__</code> and "
        "docstrings: the signature and the first paragraph of each. How the parts fit together is in the "
        "library guide.</p>"
        f'<h2 id="packages">Packages</h2><ul>{"".join(items)}</ul>'
    )
    return title, body
