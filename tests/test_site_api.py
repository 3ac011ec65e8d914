"""The website's API reference (nodecourse/course/site_api.py): a page per public package that lists
every name of its ``__all__``, with a signature for what is called and the docstring's first paragraph.
The reference covers every package of the library guide's surface table (docs/library.md), so a new
public package cannot be left out of it. Nothing here builds the whole site (tests/test_site.py does)."""

from __future__ import annotations

import importlib
import re
import types

import pytest

from nodecourse.course import site_api
from notebook_fixtures import REPO


def _surface_table() -> set[str]:
    """The packages the library guide's "Library surface" table has a row for."""
    text = (REPO / "docs" / "library.md").read_text(encoding="utf-8")
    section = text.split("## Library surface", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(nodecourse[\w.]*)` \|", section, re.M))


def test_the_reference_covers_every_library_package_of_the_surface_table():
    listed = _surface_table()
    assert "nodecourse.solvers" in listed, listed  # the table is where the test reads it
    # the lessons' code and the command are documented where they are used, not in the reference
    missing = listed - set(site_api.PUBLIC_PACKAGES) - {"nodecourse.lessons", "nodecourse.course"}
    assert not missing, f"packages in docs/library.md's surface table with no reference page: {sorted(missing)}"


@pytest.mark.parametrize("package", site_api.PUBLIC_PACKAGES)
def test_each_package_page_lists_every_name_of_its_all(package):
    module = importlib.import_module(package)
    title, body = site_api.package_page(package)
    assert package in title
    ids = re.findall(r'<dt id="([^"]+)">', body)
    assert ids == list(module.__all__), f"{package}'s page lists {ids}, its __all__ is {module.__all__}"
    for name in module.__all__:
        obj = getattr(module, name, None)
        if obj is None:
            obj = importlib.import_module(f"{package}.{name}")
        entry = site_api.entry(module, name)
        if isinstance(obj, types.FunctionType):
            assert entry.kind == "function" and entry.signature.startswith("("), (package, name, entry)
        own_doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else obj.__doc__
        if own_doc and isinstance(obj, type | types.FunctionType | types.ModuleType):
            assert entry.summary and site_api.docstring_html(entry.summary) in body, (package, name, entry)


def test_the_index_links_a_page_per_package():
    _, body = site_api.index_page()
    assert [f"api-{p}.html" for p in site_api.PUBLIC_PACKAGES] == re.findall(r'href="(api-[^"]+)"', body)


def test_a_name_in_all_that_the_package_lacks_is_named_with_the_fix():
    module = types.ModuleType("fake_package")
    module.__all__ = ["missing"]
    with pytest.raises(AttributeError, match=r"fake_package.__all__ names 'missing'.*export it or drop it"):
        site_api.entry(module, "missing")


def test_the_first_paragraph_and_its_markup():
    assert site_api.first_paragraph("One line\n    goes on.\n\n    Not this.") == "One line goes on."
    assert site_api.first_paragraph(None) == ""
    shown = site_api.docstring_html("a ``x<1`` and :class:`~nodecourse.solvers.Status`")
    assert shown == "a <code>x&lt;1</code> and <code>Status</code>"
