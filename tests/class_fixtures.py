"""A generated class of exercise-1 submissions, with the totals a correct gradebook must show.

``make_class(folder, size)`` writes ``size`` notebooks (solutions, unsolved,
half-solved, and every attack of grading_attacks.py, cycled in that order of
kinds) and returns ``{file name: number of checks that must pass}``.
``make_exercise2_class(folder, size)`` writes ``size`` exercise-2 notebooks
(correct, partial, blank, broken, an infinite loop, cycled in that order) and
returns ``{file name: kind}`` (benchmarks/bench_class_grading.py grades them).

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
SOLUTION_2 = REPO / "solutions" / "02_solvers_exercises.ipynb"
EXERCISE2_KINDS = ("correct", "partial", "blank", "broken", "infinite-loop")


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


def _with_answers(solution, exercise, replaced: dict[str, str | None]):
    """``exercise`` with the solution's answer cells whose id ``replaced`` names: the solution's source
    (None) or the text given."""
    notebook = copy.deepcopy(exercise)
    for cell, sol in zip(notebook.cells, solution.cells):
        if answer_id(cell) in replaced:
            cell.source = replaced[answer_id(cell)] or sol.source
    return notebook


def exercise2_kinds() -> dict[str, object]:
    """``{kind: notebook}`` of exercise 2, for :data:`EXERCISE2_KINDS`: the solution; only the RK4 step
    and the error norm answered; the exercise as handed out; the solution with a syntax error in the
    RK4 step; the solution with an adaptive loop that never ends."""
    solution = nbformat.read(SOLUTION_2, as_version=4)
    blank = build_exercise(copy.deepcopy(solution))
    answered = {"rk4-step": None, "error-norm": None, "step-control": None, "adaptive-loop": None}
    return {
        "correct": solution,
        "partial": _with_answers(solution, blank, {"rk4-step": None, "error-norm": None}),
        "blank": blank,
        "broken": _with_answers(solution, blank, {**answered, "rk4-step": "def rk4_step(f, t, y, h)\n    return y\n"}),
        "infinite-loop": _with_answers(solution, blank, {**answered, "adaptive-loop": "while True:\n    pass\n"}),
    }


def make_exercise2_class(folder: Path, size: int = 30) -> dict[str, str]:
    """Write ``size`` exercise-2 submissions into ``folder`` (the kinds of :func:`exercise2_kinds` in
    turn); return ``{file name: kind}``."""
    kinds = exercise2_kinds()
    folder.mkdir(parents=True, exist_ok=True)
    written = {}
    for i in range(size):
        kind = EXERCISE2_KINDS[i % len(EXERCISE2_KINDS)]
        path = folder / f"{i + 1:02d}-{kind}-{SOLUTION_2.name}"
        nbformat.write(kinds[kind], path)
        written[path.name] = kind
    return written


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/class_fixtures.py FOLDER")
    result = make_class(Path(sys.argv[1]))
    print(json.dumps({"checks": list(CHECKS), "expected_passes": result}, indent=1))
