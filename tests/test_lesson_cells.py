"""Lesson notebooks are for people: a code cell shows the science or displays findings in one line.

Checked on every lesson's code cells:
- at most 25 non-blank lines;
- no ``Markdown(`` / ``display_markdown``: findings render themselves (``nodecourse.lessons.study.Findings``);
- no prose assembled from dict lookups in f-strings: no nested string-key lookup
  (``f"{ro['with']['rho']}"``) and at most 3 string-key lookups per cell (one line that prints
  ``sol.stats['nfe']`` shows the solver's work; a paragraph of them belongs in a findings class, where
  it is typed and tested).
"""

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MAX_LINES = 25
MAX_LOOKUPS = 3


def _code_cells(path: Path):
    for index, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] == "code":
            yield index, "".join(cell["source"])


def _is_key_lookup(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)
    )


def _lookups_in_fstrings(source: str) -> tuple[list[str], list[str]]:
    """(every string-key lookup inside an f-string, the nested ones among them)."""
    # IPython magics are not Python: drop them before parsing.
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    found, nested = [], []
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.JoinedStr):
            for part in ast.walk(node):
                if _is_key_lookup(part):
                    found.append(ast.unparse(part))
                    if _is_key_lookup(part.value):
                        nested.append(ast.unparse(part))
    return found, nested


def _problems(path: Path) -> list[str]:
    problems = []
    for index, source in _code_cells(path):
        n = sum(1 for line in source.splitlines() if line.strip())
        if n > MAX_LINES:
            problems.append(f"cell {index}: {n} lines (at most {MAX_LINES})")
        if "Markdown(" in source or "display_markdown" in source:
            problems.append(f"cell {index}: builds Markdown (give the findings a .markdown() and display them)")
        lookups, nested = _lookups_in_fstrings(source)
        if nested or len(lookups) > MAX_LOOKUPS:
            shown = ", ".join((nested or lookups)[:3])
            problems.append(
                f"cell {index}: f-strings read {len(lookups)} values by key ({shown}; move the prose into findings)"
            )
    return problems


def test_lessons_are_found():
    assert len(LESSONS) >= 11


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lesson_cells_show_science_not_string_assembly(path):
    problems = _problems(path)
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


def test_the_check_catches_what_it_names():
    assert _lookups_in_fstrings("x = f'{run[\"rho\"]:.2f} and {a}'") == (["run['rho']"], [])
    assert _lookups_in_fstrings("x = f'{runs[0]:.2f}'") == ([], [])
    assert _lookups_in_fstrings('%matplotlib inline\nprint(f\'{ro["with"]["rho"]}\')') == (
        ["ro['with']['rho']", "ro['with']"],
        ["ro['with']['rho']"],
    )
