"""A generated class of exercise-1 submissions, with the totals a correct gradebook must show.

``make_class(folder, size)`` writes ``size`` notebooks (solutions, unsolved,
half-solved, and every attack of grading_attacks.py, cycled in that order of
kinds) and returns ``{file name: number of checks that must pass}``.

Run as a script to make the 30-submission class the gradebook was measured on::

    .venv/bin/python tests/class_fixtures.py build/class30
    time .venv/bin/nodecourse grade build/class30/*.ipynb --gradebook build/class30.csv --timeout 60
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))

from grading_attacks import ATTACKS, CHECKS, attacked_notebook  # noqa: E402
from nodecourse.course.exercise_builder import answer_id, build_exercise  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SOLUTION = REPO / "solutions" / "01_resnet_as_euler_exercises.ipynb"


def _kinds(solution) -> list[tuple[str, object, int]]:
    """(name, notebook, passes) of each kind of submission, in a fixed order."""
    unsolved = build_exercise(solution)
    step_only, step_and_block = copy.deepcopy(unsolved), copy.deepcopy(unsolved)
    for cell, sol in zip(step_only.cells, solution.cells):
        if answer_id(cell) == "euler-step":
            cell.source = sol.source
    for cell, sol in zip(step_and_block.cells, solution.cells):
        if answer_id(cell) in ("euler-step", "residual-block"):
            cell.source = sol.source
    noted = copy.deepcopy(solution)
    noted.cells[0].source += "\n\nMy notes: done on a Tuesday."
    kinds = [
        ("solution", solution, 4),
        ("unsolved", unsolved, 0),
        ("half-step-and-block", step_and_block, 2),
        ("solution-with-notes", noted, 4),
        ("half-step-only", step_only, 1),
    ]
    kinds += [(f"attack-{name}", attacked_notebook(solution, name), len(a.passes)) for name, a in ATTACKS.items()]
    return kinds


def make_class(folder: Path, size: int = 30) -> dict[str, int]:
    """Write ``size`` submissions into ``folder``; return the expected passes of each file."""
    solution = nbformat.read(SOLUTION, as_version=4)
    kinds = _kinds(solution)
    folder.mkdir(parents=True, exist_ok=True)
    expected = {}
    attacks = [k for k in kinds if k[0].startswith("attack-")]
    plain = [k for k in kinds if not k[0].startswith("attack-")]
    chosen = attacks[: max(0, size - len(plain))]
    order = (chosen + plain * size)[:size]  # every attack once, then the plain kinds in turn
    for i, (name, nb, passes) in enumerate(order):
        path = folder / f"{i + 1:02d}-{name}-01_resnet_as_euler_exercises.ipynb"
        nbformat.write(nb, path)
        expected[path.name] = passes
    return expected


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/class_fixtures.py FOLDER")
    result = make_class(Path(sys.argv[1]))
    print(json.dumps({"checks": list(CHECKS), "expected_passes": result}, indent=1))
