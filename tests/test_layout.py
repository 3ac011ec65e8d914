"""The three wings of the package and the direction imports may go (CONTRIBUTING.md, "Layout").

library (everything under nodecourse/ except course/ and lessons/)
    <- lessons (nodecourse/lessons/: the code each lesson notebook calls, its ledger rows)
    <- course  (nodecourse/course/: CLI, grader, exercise builder, environment check)

The library never imports the lessons or the course machinery; lesson code
never imports the course machinery. The ledger finds lesson rows by name at
run time (nodecourse.claims.load_rows), never by a static import.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "nodecourse"


def _wing(path: Path) -> str:
    rel = path.relative_to(PACKAGE).parts
    return rel[0] if rel[0] in ("course", "lessons") else "library"


def _package_of(path: Path) -> list[str]:
    """The dotted package ``path`` belongs to (``nodecourse.deq`` for nodecourse/deq/_layer.py)."""
    try:
        rel = path.relative_to(PACKAGE.parent).with_suffix("").parts
    except ValueError:  # a file outside the package (the test's fakes): treat it as top level
        return ["nodecourse"]
    return list(rel[:-1])  # a module's package; an __init__.py's package is its folder


def _import_statements(path: Path, package: list[str] | None = None):
    """``(module, names)`` for every import in ``path``, anywhere in the file, relative imports
    resolved: ``import a.b`` is ``("a.b", ())``, ``from ..course import x`` in nodecourse/deq/ is
    ``("nodecourse.course", ("x",))``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _package_of(path) if package is None else package
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, ()
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            yield module, tuple(a.name for a in node.names)


def _imported_modules(path: Path, package: list[str] | None = None) -> list[str]:
    """Every module ``path`` imports, relative imports resolved (``from ..course import x`` in
    nodecourse/deq/_layer.py is ``nodecourse.course`` and ``nodecourse.course.x``)."""
    names = []
    for module, imported in _import_statements(path, package):
        names.append(module)
        names += [f"{module}.{name}" for name in imported]
    return names


FORBIDDEN = {
    "library": ("nodecourse.course", "nodecourse.lessons"),
    "lessons": ("nodecourse.course",),
    "course": (),
}
SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_toward_the_library(path):
    bad = [
        m
        for m in _imported_modules(path)
        for prefix in FORBIDDEN[_wing(path)]
        if m == prefix or m.startswith(prefix + ".")
    ]
    assert not bad, f"{path.relative_to(PACKAGE.parent)} ({_wing(path)}) imports {sorted(set(bad))}"


def test_the_check_finds_a_violation(tmp_path):
    # The rule above must be able to fail: a library module importing the grader.
    fake = tmp_path / "bad.py"
    fake.write_text("from nodecourse.course import grading\nimport nodecourse.lessons.lesson01\n")
    assert {"nodecourse.course", "nodecourse.lessons.lesson01"} <= set(_imported_modules(fake))


def test_the_check_sees_relative_imports(tmp_path):
    # A relative import is still an import: from nodecourse/deq/, "..course" is the grader's wing.
    fake = tmp_path / "bad.py"
    fake.write_text("from ..course import grading\nfrom . import layer\n")
    found = set(_imported_modules(fake, package=["nodecourse", "deq"]))
    assert {"nodecourse.course", "nodecourse.course.grading", "nodecourse.deq.layer"} <= found


def test_no_module_at_the_package_root_belongs_to_another_wing():
    course_words = ("cli", "grading", "grader", "exercise_builder", "envcheck", "checks")
    at_root = {p.stem for p in PACKAGE.glob("*.py")}
    assert not at_root & set(course_words), at_root & set(course_words)


# --- the parts of the package and the arrows between them ------------------------------------


def _part(module: str) -> str | None:
    """The top-level part of ``nodecourse.x.y`` (``x``: a root module or a subpackage)."""
    bits = module.split(".")
    if bits[0] != "nodecourse" or len(bits) < 2:
        return None
    name = bits[1]
    return name if (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file() else None


def _part_graph() -> tuple[set[str], dict[str, set[str]]]:
    parts, arrows = set(), {}
    for path in SOURCES:
        rel = path.relative_to(PACKAGE).parts
        if rel == ("__init__.py",):
            continue  # the package root re-exports; it is not a part
        src = rel[0].removesuffix(".py")
        parts.add(src)
        for module in _imported_modules(path):
            dst = _part(module)
            if dst and dst != src:
                arrows.setdefault(src, set()).add(dst)
    return parts, arrows


def _cycle(arrows: dict[str, set[str]]) -> list[str] | None:
    """One cycle among the parts, or None (depth-first search)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(arrows.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(arrows):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_between_the_parts_of_the_package():
    parts, arrows = _part_graph()
    assert _cycle(arrows) is None, f"import cycle between parts: {' -> '.join(_cycle(arrows))}"


def test_the_cycle_check_can_fail():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}}) is None


# --- the files of the package and the arrows between them -------------------------------------


def _file_of(module: str) -> Path | None:
    """The source file that defines ``module`` (a module file or a package's ``__init__.py``)."""
    if module.split(".")[0] != "nodecourse":
        return None
    base = PACKAGE.parent.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported_files(path: Path, package: list[str] | None = None) -> set[Path]:
    """The files of ours that ``path`` imports, at module level or inside a function alike (a
    deferred import is still an arrow a reader has to follow). ``from pkg import name`` is an
    arrow to ``pkg/name.py`` when that is a module, otherwise to ``pkg/__init__.py``."""
    found = set()
    for module, imported in _import_statements(path, package):
        if not imported:
            found.add(_file_of(module))
        found |= {_file_of(f"{module}.{name}") or _file_of(module) for name in imported}
    return found - {None, path}


def _file_graph() -> dict[str, set[str]]:
    """Arrows between the package's files, named by their path under ``nodecourse/``."""

    def name(p: Path) -> str:
        return str(p.relative_to(PACKAGE))

    return {name(path): {name(f) for f in _imported_files(path)} for path in SOURCES}


def _part_of_file(name: str) -> str:
    return name.split("/")[0].removesuffix(".py")


# A cycle among the files of one part (a cycle across parts fails the test above).
FILE_CYCLE_CASES = sorted({_part_of_file(str(p.relative_to(PACKAGE))) for p in SOURCES} - {"__init__"})


@pytest.mark.parametrize("part", FILE_CYCLE_CASES)
def test_no_import_cycle_between_the_files_of_a_part(part):
    arrows = {
        src: {dst for dst in dsts if _part_of_file(dst) == part}
        for src, dsts in _file_graph().items()
        if _part_of_file(src) == part
    }
    cycle = _cycle(arrows)
    assert cycle is None, f"import cycle between the files of {part}: {' -> '.join(cycle)}"


def test_the_file_check_sees_deferred_and_package_imports(tmp_path):
    # An import inside a function counts; "from package import module" points at the module's
    # file, "from package import name" at the package's __init__.py.
    fake = tmp_path / "bad.py"
    fake.write_text(
        "def later():\n    from nodecourse.course.cli import main\nfrom nodecourse.solvers import _odeint, SOLVERS\n"
    )
    found = {str(p.relative_to(PACKAGE)) for p in _imported_files(fake, package=["nodecourse", "course"])}
    assert found == {"course/cli.py", "solvers/_odeint.py", "solvers/__init__.py"}


def test_the_package_root_is_grouped_into_parts_a_reader_can_name():
    parts, arrows = _part_graph()
    loose = sorted(p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_"))
    # CONTRIBUTING.md's map names every part; a new root module needs a line there.
    contributing = (PACKAGE.parent / "CONTRIBUTING.md").read_text(encoding="utf-8")
    unnamed = [p for p in sorted(parts) if f"`{p}" not in contributing]
    assert not unnamed, f"parts missing from CONTRIBUTING.md's map: {unnamed}"
    assert len(loose) <= 4, f"loose modules at the package root: {loose}; group them into a subpackage"


# --- the public surface: what each package's __init__ exports, listed in docs/library.md ----------

PACKAGES = sorted(p.parent for p in PACKAGE.rglob("__init__.py"))
# The root modules that are parts of the library (CONTRIBUTING.md's map) have a surface too.
ROOT_MODULES = [p for p in sorted(PACKAGE.glob("*.py")) if not p.stem.startswith("_")]


def _dotted(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent)
    return ".".join(rel.with_suffix("").parts if rel.suffix else rel.parts)


def _readme_surface() -> dict[str, set[str]]:
    """``{module: names}`` from the library guide's "Library surface" table (docs/library.md)."""
    import re

    text = (PACKAGE.parent / "docs" / "library.md").read_text(encoding="utf-8")
    section = text.split("## Library surface", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`nodecourse"):
            rows[cells[0].strip("`")] = set(re.findall(r"`([^`]+)`", cells[1]))
    return rows


@pytest.mark.parametrize("path", PACKAGES + ROOT_MODULES, ids=_dotted)
def test_every_package_declares_its_surface_and_every_name_exists(path):
    import importlib

    module = importlib.import_module(_dotted(path))
    assert isinstance(getattr(module, "__all__", None), list), f"{_dotted(path)} has no __all__"
    missing = [
        n
        for n in module.__all__
        if not hasattr(module, n) and importlib.util.find_spec(f"{module.__name__}.{n}") is None
    ]
    assert not missing, f"{_dotted(path)}.__all__ names what it does not have: {missing}"


LIBRARY_SURFACES = [p for p in PACKAGES + ROOT_MODULES if _wing(p if p.suffix else p / "__init__.py") == "library"]


@pytest.mark.parametrize("path", LIBRARY_SURFACES, ids=_dotted)
def test_the_readme_lists_each_library_surface_exactly(path):
    import importlib

    name = _dotted(path)
    listed = _readme_surface().get(name)
    assert listed is not None, f"docs/library.md's 'Library surface' has no row for {name}"
    exported = set(importlib.import_module(name).__all__)
    assert exported <= listed, f"{name} exports names docs/library.md does not list: {sorted(exported - listed)}"
    extra = {n for n in listed - exported if "." not in n and n.isidentifier()}
    # The row may name submodules imported by name (``augment``) beside the exports.
    extra = {n for n in extra if importlib.util.find_spec(f"{name}.{n}") is None}
    assert not extra, f"docs/library.md lists names {name} does not export: {sorted(extra)}"


# --- private by name: in these wings the package's __init__ is the whole surface ----------------

# Every module of these packages but ``__init__.py`` is private (``_name.py``), as in torchdiffeq and
# diffrax; the package's ``__init__`` exports the public names. Add a package here once its modules
# are private.
PRIVATE_WINGS = [
    "audit",
    "cde",
    "claims",
    "data",
    "data/physionet",
    "deq",
    "measure",
    "models",
    "models/latent",
    "plotting",
    "sde",
    "solvers",
    "widgets",
]


def _public_modules(package: Path) -> list[str]:
    """The module files directly in ``package`` whose names are public (subpackages are not modules)."""
    return sorted(p.name for p in package.glob("*.py") if p.name != "__init__.py" and not p.name.startswith("_"))


@pytest.mark.parametrize("wing", PRIVATE_WINGS)
def test_the_modules_behind_a_private_wing_are_private(wing):
    package = PACKAGE / wing
    assert (package / "__init__.py").is_file(), f"nodecourse/{wing} is not a package; fix PRIVATE_WINGS"
    public = _public_modules(package)
    assert not public, (
        f"nodecourse/{wing} has public modules {public}: name each _name.py (git mv) and export its public "
        "names from the package's __init__.py"
    )


@pytest.mark.parametrize("added, found", [("_helpers.py", []), ("helpers.py", ["helpers.py"])])
def test_the_private_wing_check_finds_a_public_module(tmp_path, added, found):
    # The rule above must be able to fail: a public module added beside private ones is named.
    for name in ("__init__.py", "_solve.py", added):
        (tmp_path / name).write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "__init__.py").write_text("")
    assert _public_modules(tmp_path) == found


# A lazy wing (PEP 562) names each export in its ``_LAZY`` table; the private module the name loads from
# declares it in its ``__all__``. The two lists must agree, or a name is declared and never exported.
LAZY_WINGS = ["nodecourse.data", "nodecourse.measure", "nodecourse.plotting"]


def _lazy_drift(package) -> dict[str, tuple[list[str], list[str]]]:
    """``{module: (in its __all__ only, in the table only)}`` for each module of ``package._LAZY`` whose
    ``__all__`` differs from the names the table loads from it; a name that loads a whole module
    (``plotting.annulus`` -> ``._annulus``) is not one of its module's names."""
    import importlib

    by_module: dict[str, set[str]] = {}
    for name, module in package._LAZY.items():
        if module.lstrip(".") != f"_{name}":
            by_module.setdefault(module, set()).add(name)
    drift = {}
    for module, names in by_module.items():
        declared = set(importlib.import_module(module, package.__name__).__all__)
        if declared != names:
            drift[module] = (sorted(declared - names), sorted(names - declared))
    return drift


@pytest.mark.parametrize("wing", LAZY_WINGS)
def test_a_lazy_wing_exports_what_its_modules_declare(wing):
    import importlib

    drift = _lazy_drift(importlib.import_module(wing))
    assert not drift, f"{wing}: _LAZY and the modules' __all__ differ, {{module: (__all__ only, _LAZY only)}}: {drift}"


def test_the_lazy_check_finds_a_table_that_drifted():
    # The rule above must be able to fail: a table that misses a declared name and names an undeclared one.
    import types

    from nodecourse.data import _toy

    fake = types.ModuleType("fake")
    fake._LAZY = {name: "nodecourse.data._toy" for name in _toy.__all__}
    assert _lazy_drift(fake) == {}
    fake._LAZY = {"annulus": "nodecourse.data._toy", "spiral": "nodecourse.data._toy"}
    assert _lazy_drift(fake) == {"nodecourse.data._toy": (sorted(set(_toy.__all__) - {"annulus"}), ["spiral"])}


def test_no_module_shadows_a_builtin():
    """A module-level class, function or constant named like a builtin (``ReferenceError``, ``input``)
    hides it from every reader of that module, and from anyone who star-imports it."""
    import builtins

    shadowing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            else:
                names = []
            shadowing += [f"{path.relative_to(PACKAGE)}: {n}" for n in names if hasattr(builtins, n) and n[:2] != "__"]
    assert not shadowing, f"module-level names that shadow a builtin: {shadowing}"


# A module over LONG_MODULE lines says why in its docstring, in a sentence of its own that starts with
# LONG_REASON: generated data, one exercise's specs kept in one file, a split that is pending.
LONG_MODULE = 500
LONG_REASON = "Why this module is long:"


def _unexplained_long_modules(root: Path) -> list[str]:
    """The modules under ``root`` longer than LONG_MODULE lines whose docstring has no sentence
    starting with LONG_REASON and followed by the reason."""
    starts = re.compile(r"(?:\A|\n|[.!?:]\s)\s*" + re.escape(LONG_REASON) + r"\s+\S")
    unexplained = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > LONG_MODULE and not starts.search(ast.get_docstring(ast.parse(text)) or ""):
            unexplained.append(path.relative_to(root).as_posix())
    return unexplained


def test_every_long_module_says_why_it_is_long():
    unexplained = _unexplained_long_modules(PACKAGE)
    assert not unexplained, (
        f"modules over {LONG_MODULE} lines without a reason: {unexplained}. Split each by concept into private "
        f'modules, or add a paragraph to its docstring: "{LONG_REASON} <the reason>"'
    )


def test_the_long_module_check_names_a_module_without_a_reason(tmp_path):
    # The rule above must be able to fail: a long module with no docstring, one whose docstring does not
    # give the reason, and one that names the phrase with no reason after it are named; a long module
    # with the reason and a short one without it are not.
    body = "x = 1\n" * LONG_MODULE
    (tmp_path / "bare.py").write_text(body + "y = 2\n")
    (tmp_path / "silent.py").write_text('"""What it does."""\n' + body)
    (tmp_path / "empty.py").write_text(f'"""What it does.\n\n{LONG_REASON}\n"""\n' + body)
    (tmp_path / "quoted.py").write_text(f'"""What it does; not "{LONG_REASON} data".\n"""\n' + body)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "said.py").write_text(f'"""What it does.\n\n{LONG_REASON} generated data.\n"""\n' + body)
    (tmp_path / "short.py").write_text("x = 1\n" * LONG_MODULE)
    assert _unexplained_long_modules(tmp_path) == ["bare.py", "empty.py", "quoted.py", "silent.py"]
