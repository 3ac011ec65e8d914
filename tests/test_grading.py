"""The grader on fixture exercises: solutions pass, and nothing a learner's file
contains besides correct answer code can make a check pass.

These fixture exercises keep check cells that run inside the kernel (not task
specs), so they test the in-kernel path with its guard, now inside the sandbox;
the numbered cases are that path's (the design before CONTRIBUTING.md's
"Grading trust model" moved the verdict outside the kernel; the routes of issue
20 are in test_grading_attacks.py). Cases that run the real grader (a kernel)
are marked slow.
"""

from __future__ import annotations

import copy
import json
import re

import nbformat
import pytest
from nbformat.v4 import new_output

from nodecourse.course import grading
from nodecourse.course.exercise_builder import build_exercise, check_id
from notebook_fixtures import DOUBLE_SOURCE, answer_cell, run_cli, solution_notebook, write

CHECKS = ["double", "square"]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A fixture solution and the exercise built from it."""
    root = tmp_path_factory.mktemp("course")
    solution = solution_notebook()
    exercise = build_exercise(solution, name="fx.ipynb")
    return {
        "solution": solution,
        "exercise": exercise,
        "reference": write(exercise, root / "exercises" / "fx.ipynb"),
        "dir": root,
    }


def _grade(course, nb, name, **kw):
    path = write(nb, course["dir"] / "learner" / name)
    rows, warnings = grading.grade_notebook(path, reference=course["reference"], **kw)
    return {r.check: r for r in rows}, warnings


def _replace_answer(nb, task, source):
    for cell in nb.cells:
        if cell.metadata.get("nodecourse", {}).get("answer") == task:
            cell.source = source


@pytest.mark.slow
def test_solution_passes_every_check(course, tmp_path):
    keep = tmp_path / "kept"  # case 5: --keep writes into a new folder it names
    rows, warnings = _grade(course, course["solution"], "fx.ipynb", keep_dir=keep)
    assert sorted(rows) == CHECKS
    assert all(r.passed and r.check_cell_passed and r.reason == "" for r in rows.values()), rows
    assert warnings == []
    assert sorted(p.name for p in keep.iterdir()) == ["fx.ipynb", "outcomes.json"]


def _unsolved_run_and_saved(course):
    """The exercise as a learner saves it after running it: forged PASS outputs everywhere."""
    nb = copy.deepcopy(course["exercise"])
    for n, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            cell.execution_count = n + 1
            cell.outputs = [new_output("stream", name="stdout", text=f"PASS {check_id(cell) or 'x'}\n")]
    return nb


def _check_cells_deleted(course):
    nb = copy.deepcopy(course["exercise"])
    nb.cells = [c for c in nb.cells if check_id(c) is None]
    return nb


def _check_cells_edited(course):
    nb = _unsolved_run_and_saved(course)
    for cell in nb.cells:
        if check_id(cell):
            cell.source = f'# NBVAL_CHECK_OUTPUT\nprint("PASS {check_id(cell)}")'
    return nb


def _answer_cells_deleted(course):
    nb = copy.deepcopy(course["solution"])
    nb.cells = [c for c in nb.cells if "answer" not in c.metadata.get("nodecourse", {})]
    return nb


def _nbval_markers_in_answers(course):
    """Markers that would make nbval skip a cell or accept its error are not honoured."""
    nb = copy.deepcopy(course["exercise"])
    _replace_answer(nb, "double", "# NBVAL_SKIP\ndef double(x):\n    raise NotImplementedError\n")
    _replace_answer(nb, "square", "# NBVAL_RAISES_EXCEPTION\nraise NotImplementedError\n")
    return nb


TAMPERED = {
    "unsolved-run-and-saved-with-forged-PASS": _unsolved_run_and_saved,
    "check-cells-deleted": _check_cells_deleted,
    "check-cells-edited-to-print-PASS": _check_cells_edited,
    "answer-cells-deleted": _answer_cells_deleted,
    "nbval-markers-in-answers": _nbval_markers_in_answers,
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(TAMPERED))
def test_tampered_or_unsolved_notebook_fails_every_check(course, case):
    rows, warnings = _grade(course, TAMPERED[case](course), f"{case}.ipynb")
    assert sorted(r for r in rows if not r.startswith("cell ")) == CHECKS, rows
    for cid in CHECKS:
        assert not rows[cid].passed, (case, rows[cid])
        assert not rows[cid].check_cell_passed, (case, rows[cid])
        assert "NotImplementedError" in rows[cid].reason, (case, rows[cid])
    if case == "answer-cells-deleted":
        assert any("not found in the notebook" in w for w in warnings), warnings


@pytest.mark.slow
def test_solved_answers_pass_even_with_check_cells_deleted(course):
    """Deleting check cells changes nothing: the reference's checks run anyway."""
    nb = copy.deepcopy(course["solution"])
    nb.cells = [c for c in nb.cells if check_id(c) is None]
    rows, _ = _grade(course, nb, "solved-no-checks.ipynb")
    assert sorted(rows) == CHECKS and all(r.passed for r in rows.values()), rows


@pytest.mark.slow
def test_infinite_loop_times_out_and_later_tasks_are_still_graded(course):
    """Issue 14 item 8: a loop that ignores interrupts used to hide every later check
    ("failed after an earlier cell timed out"). The kernel is restarted, the cells that
    passed are replayed, and the output says so."""
    nb = copy.deepcopy(course["solution"])
    _replace_answer(nb, "double", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass")
    # The limit applies to every cell of these fixtures, each a few milliseconds: torch is imported
    # when the kernel guard is installed, under a limit of its own (at least 120 s). 3 s leaves
    # a loaded machine a wide margin, and the loop (which ignores interrupts) costs 3 s of waiting.
    rows, warnings = _grade(course, nb, "loop.ipynb", timeout_s=3)
    assert not rows["double"].passed
    assert rows["double"].reason == "answer 'double': timed out after 3 s", rows["double"]
    assert rows["square"].passed, rows["square"]
    assert any("restarted the kernel and replayed" in w for w in warnings), warnings


@pytest.mark.slow
def test_a_dead_kernel_is_reported_as_dead_at_once(course):
    """Case 6: os._exit in an answer. With a 10-minute limit per cell, a grader that waited
    for the timeout would say "timed out after 600 s"; it says the kernel died."""
    nb = copy.deepcopy(course["solution"])
    _replace_answer(nb, "double", "import os\nos._exit(3)")
    rows, warnings = _grade(course, nb, "exit.ipynb", timeout_s=600)
    assert not rows["double"].passed
    assert "the kernel died (exit code 3)" in rows["double"].reason, rows["double"]
    assert rows["square"].passed, rows["square"]  # a fresh kernel went on with the next task
    assert any("replayed" in w for w in warnings), warnings


@pytest.mark.slow
def test_cli_grade_reports_a_wrong_answer_and_exits_nonzero(course, monkeypatch, capsys):
    """Through the command line: one task right, one wrong; JSON rows carry the check's detail."""
    nb = copy.deepcopy(course["solution"])
    _replace_answer(nb, "square", answer_cell("square", "def square(x):\n    return x + x").source)
    path = write(nb, course["dir"] / "learner" / "half.ipynb")
    proc = run_cli("grade", str(path), "--reference", str(course["reference"]), "--json")
    assert proc.returncode == 1, proc.stderr
    rows = {r["check"]: r for r in json.loads(proc.stdout)}
    assert rows["double"]["passed"] is True
    assert rows["square"]["passed"] is False
    assert rows["square"]["reason"] == "FAIL square: square(4) = 8"

    # The table of the same grade: grading.main, which the command calls without --json, on the rows
    # the command just returned (a second kernel would grade the same notebook the same way; the
    # command's table path with a kernel runs in test_grading_attacks.py).
    graded = [grading.CheckRow(**r) for r in rows.values()]
    monkeypatch.setattr(grading, "grade_notebook", lambda *a, **kw: (graded, []))
    monkeypatch.setattr(grading, "_no_peeking", lambda: None)  # leaves this test process dumpable
    assert grading.main([str(path)], reference=str(course["reference"])) == 1
    table = capsys.readouterr().out
    assert re.search(r"square\s*\|\s*FAIL", table), table
    assert "1/2 checks pass" in table, table


def test_assemble_takes_only_answer_sources_and_added_cells(course):
    """No kernel needed: the assembled notebook is the reference plus the learner's answers and the
    cells they added; edited check cells are the reference's again, and the report says so."""
    learner = _check_cells_edited(course)
    _replace_answer(learner, "double", "def double(x):\n    return 2 * x")
    learner.cells.append(nbformat.v4.new_code_cell("print('PASS double')"))
    assembled, warnings = grading.assemble(learner, course["exercise"])
    ref_cells = course["exercise"].cells
    assert len(assembled.cells) == len(ref_cells) + 1
    *handed_out, added = assembled.cells
    assert added.source == "print('PASS double')" and added.metadata["nodecourse"]["answer"] == (
        f"added cell {len(learner.cells)}"
    )
    for got, ref in zip(handed_out, ref_cells):
        if got.metadata.get("nodecourse", {}).get("answer") == "double":
            assert got.source == "def double(x):\n    return 2 * x"
            assert got.outputs == []
        else:
            assert got.source == ref.source
            assert got.get("outputs") == ref.get("outputs")
    # the edited check cells run as handed out: said, once, naming them
    assert len(warnings) == 1 and warnings[0].startswith(grading.OUTSIDE_PREFIX), warnings
    assert "(check 'double')" in warnings[0] and "(check 'square')" in warnings[0], warnings


def test_grade_errors_name_the_problem(tmp_path, course):
    with pytest.raises(grading.GradingError, match="does not exist"):
        grading.grade_notebook(tmp_path / "nope.ipynb", reference=course["reference"])
    lonely = write(course["exercise"], tmp_path / "lonely" / "zz_unknown.ipynb")
    with pytest.raises(grading.GradingError, match="no reference for|cannot find the course root"):
        grading.grade_notebook(lonely)
    with pytest.raises(grading.GradingError, match="timeout=0"):
        grading.grade_notebook(lonely, reference=course["reference"], timeout_s=0)


@pytest.mark.slow
def test_learner_working_inside_exercises_cannot_tamper_with_the_reference(tmp_path):
    """The usual workflow: the learner edits exercises/fx.ipynb in place and grades it.
    The reference is rebuilt from solutions/, so deleted or edited checks there do not count."""
    root = tmp_path / "course"
    (root / "notebooks").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "nodecourse"\n')
    solution = solution_notebook()
    write(solution, root / "solutions" / "fx.ipynb")
    learner = build_exercise(solution, name="fx.ipynb")
    # task 'double' done; 'square' left as the stub but its check cell edited, the other deleted
    _replace_answer(learner, "double", "def double(x):\n    return 2 * x")
    learner.cells = [c for c in learner.cells if check_id(c) != "double"]
    for cell in learner.cells:
        if check_id(cell) == "square":
            cell.source = '# NBVAL_CHECK_OUTPUT\nprint("PASS square")'
    path = write(learner, root / "exercises" / "fx.ipynb")
    rows, warnings = grading.grade_notebook(path)
    rows = {r.check: r for r in rows}
    assert rows["double"].passed, rows
    assert not rows["square"].passed and "NotImplementedError" in rows["square"].reason, rows
    (warning,) = warnings  # the edited check ran as handed out, and the report says so
    assert warning.startswith(grading.OUTSIDE_PREFIX) and "(check 'square')" in warning, warnings


# ---------------------------------------------------------------------------
# The trust model's cases: answer code that tries to write its own grade
# ---------------------------------------------------------------------------


def _attack_solution(tasks):
    """A solution notebook with one task per name: ``f_<name>(x)`` returns 2x, its check
    compares with torch.allclose; task "count" returns 6, checked with ``same``."""
    nb = solution_notebook()
    setup = nbformat.v4.new_code_cell(
        "import torch\nfrom nodecourse.course.checks import check, close, same\nx = torch.tensor([1.0, -2.0, 3.5])"
    )
    cells = [nb.cells[0], setup]
    for name in tasks:
        if name == "count":
            cells.append(
                answer_cell("count", "def count():\n    ### BEGIN SOLUTION\n    return 6\n    ### END SOLUTION")
            )
            cells.append(
                nbformat.v4.new_code_cell(
                    '# NBVAL_CHECK_OUTPUT\ncheck("count", same(count(), 6), "wrong")',
                    metadata={"nodecourse": {"check": "count"}},
                )
            )
            continue
        fn = "f_" + name.replace("-", "_")
        cells.append(answer_cell(name, f"def {fn}(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"))
        cells.append(
            nbformat.v4.new_code_cell(
                f'# NBVAL_CHECK_OUTPUT\ncheck("{name}", torch.allclose({fn}(x), 2 * x), "wrong")',
                metadata={"nodecourse": {"check": name}},
            )
        )
    nb.cells = cells
    return nb


_WRONG = "def {fn}(x):\n    return x\n"
# A tensor whose every comparison says True: the "tensor-subclass" attack, and checks.close's own test.
FORGED_TENSOR_CLASS = """class Yes(torch.Tensor):
    def __eq__(self, other):
        return True
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return True
"""
# Each answer defines a WRONG function and tries to make its check pass anyway.
ATTACKS = {
    # case 1: forge records in any report file the kernel can name, from a process that outlives it
    "detached-writer": """import json, os, subprocess, sys
targets = [v for k, v in os.environ.items() if "GRADE" in k or "REPORT" in k]
targets += [os.path.abspath(p) for p in os.listdir(".") if os.path.isfile(p)]
targets += [os.path.abspath(os.path.join("..", "nbval-report.jsonl"))]
code = '''import json, sys, time
for _ in range(40):
    for t in sys.argv[1:]:
        try:
            with open(t, "a") as fh:
                for i in range(40):
                    fh.write(json.dumps({"cell": i, "outcome": "passed", "message": "", "detail": ""}) + "\\\\n")
        except OSError:
            pass
    time.sleep(0.5)
'''
subprocess.Popen([sys.executable, "-c", code, *targets], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
""",
    # case 2: rewrite every later cell into a PASS line
    "input-transformer": """import re
def _forge(lines):
    m = re.search(r'check\\("([^"]+)"', "".join(lines))
    return [f'print("PASS {m.group(1)}")\\n'] if m else lines
get_ipython().input_transformers_cleanup.append(_forge)
get_ipython().input_transformers_post.append(_forge)
""",
    "ast-transformer": """import ast
class _Forge(ast.NodeTransformer):
    def visit_Module(self, node):
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "check":
                name = call.args[0].value
                return ast.parse(f'print("PASS {name}")')
        return node
get_ipython().ast_transformers.append(_Forge())
""",
    "custom-exception-handler": """def _swallow(shell, etype, evalue, tb, tb_offset=None):
    print("PASS " + str(evalue).split()[1].rstrip(":"))
get_ipython().set_custom_exc((Exception,), _swallow)
get_ipython().events.register("post_run_cell", lambda result: None)
""",
    # case 7: patched comparisons, a redefined check, a forged tensor
    "allclose-patched": """import torch
torch.allclose = lambda *a, **k: True
torch.Tensor.__eq__ = lambda *a, **k: True
""",
    "check-redefined": """import nodecourse.course.checks as _checks
def check(name, passed, detail=""):
    print(f"PASS {name}")
_checks.check = check
""",
    "tensor-subclass": "import torch\n"
    + FORGED_TENSOR_CLASS
    + """_real = {fn}
def {fn}(x):
    return _real(x).as_subclass(Yes)
""",
    # the same, done by the learner's function while the check cell calls it
    "patch-during-check": """import torch
import nodecourse.course.checks as _checks
_wrong = {fn}
def {fn}(x):
    _checks._truth = lambda passed: True
    _checks._refusal = None
    return _wrong(x)
""",
    "subclass-made-during-check": """import torch
def {fn}(x):
    class Later(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return True
    return x.as_subclass(Later)
""",
    "torch-function-mode": """import torch
from torch.overrides import TorchFunctionMode
class _AlwaysTrue(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return True if func is torch.allclose else func(*args, **(kwargs or {}))
_AlwaysTrue().__enter__()
""",
}


def _attack_notebook(reference):
    nb = copy.deepcopy(reference)
    for name, attack in ATTACKS.items():
        fn = "f_" + name.replace("-", "_")
        _replace_answer(nb, name, _WRONG.format(fn=fn) + attack.replace("{fn}", fn))
    # case 3: a marker that only str.splitlines sees: the answer raises after defining a right f
    _replace_answer(
        nb,
        "nbval-marker-u2028",
        "def f_nbval_marker_u2028(x):\n    return 2 * x\n"
        "# \u2028# NBVAL_RAISES_EXCEPTION\nraise RuntimeError('this answer raises')",
    )
    # case 7: an object whose __eq__ always says True, from the standard library
    _replace_answer(nb, "count", "from unittest import mock\ndef count():\n    return mock.ANY")
    _replace_answer(nb, "honest", "def f_honest(x):\n    return x + x")
    return nb


# The attacks that define a forging class come last: from then on every check in the
# kernel is refused, so the honest task (which must pass) comes before them.
_CLASS_ATTACKS = ["subclass-made-during-check", "tensor-subclass", "torch-function-mode"]
ATTACK_TASKS = [
    *(a for a in ATTACKS if a not in _CLASS_ATTACKS),
    "nbval-marker-u2028",
    "honest",
    "count",
    *_CLASS_ATTACKS,
]


@pytest.mark.slow
def test_answer_code_cannot_write_its_own_grade(tmp_path):
    """Cases 1, 2, 3 and 7 in one kernel: every attacked check fails, the CLI exits 1, and the
    honest task after all the attacks still passes (the guards broke nothing)."""
    solution = _attack_solution(ATTACK_TASKS)
    reference = write(build_exercise(solution, name="attacks.ipynb"), tmp_path / "ref" / "attacks.ipynb")
    learner = write(_attack_notebook(nbformat.read(reference, as_version=4)), tmp_path / "learner" / "attacks.ipynb")
    proc = run_cli("grade", str(learner), "--reference", str(reference), "--json", "--timeout", "120")
    assert proc.returncode == 1, proc.stderr
    rows = {r["check"]: r for r in json.loads(proc.stdout)}
    assert rows["honest"]["passed"], rows["honest"]
    for name in [*ATTACKS, "nbval-marker-u2028", "count"]:
        assert not rows[name]["passed"], (name, rows[name])
    assert "this answer raises" in rows["nbval-marker-u2028"]["reason"], rows["nbval-marker-u2028"]
    assert "refuse" in rows["tensor-subclass"]["reason"], rows["tensor-subclass"]
    assert "changed what the check relies on" in rows["patch-during-check"]["reason"], rows["patch-during-check"]
    assert "Later" in rows["subclass-made-during-check"]["reason"], rows["subclass-made-during-check"]
    assert rows["allclose-patched"]["reason"] == "FAIL allclose-patched: wrong", rows["allclose-patched"]
    # the solution itself passes every check with the same guards
    sol = write(solution, tmp_path / "learner2" / "attacks.ipynb")
    good, _ = grading.grade_notebook(sol, reference=reference, timeout_s=120)
    assert all(r.passed for r in good), [r for r in good if not r.passed]


def test_kernel_environment_names_no_grader_file(monkeypatch, tmp_path):
    """Case 1: nothing in the kernel's environment points at where the grade is decided."""
    monkeypatch.setenv("NODECOURSE_GRADE_REPORT", str(tmp_path / "report.jsonl"))
    env = grading.kernel_environment()
    assert not any("GRADE" in k for k in env)
    assert str(tmp_path) not in "".join(env.values())
    assert env["NODECOURSE_QUICK"] == "1" and int(env["OMP_NUM_THREADS"]) >= 1


def test_kernels_use_the_course_thread_choice(monkeypatch):
    """Issue 14 item 4: the grader's kernels run with the course's thread count."""
    from nodecourse import config

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("NODECOURSE_THREADS", "3")
    assert config.course_threads() == 3
    assert grading.kernel_environment()["OMP_NUM_THREADS"] == "3"
    monkeypatch.setenv("NODECOURSE_THREADS", "many")
    with pytest.raises(grading.GradingError, match="NODECOURSE_THREADS='many'"):
        grading.kernel_environment()


def test_the_grader_does_not_advise_build_and_says_where_the_reference_comes_from(tmp_path):
    """Issue 14 item 1: grading a copy of a solved exercise gave 'run nodecourse build', which
    overwrites the learner's notebook; --help said the reference was exercises/<name>."""
    root = tmp_path / "course"
    (root / "notebooks").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "nodecourse"\n')
    write(solution_notebook(), root / "solutions" / "fx.ipynb")
    solved = write(solution_notebook(), root / "exercises" / "fx.ipynb")  # solved in place
    copy_path = write(solution_notebook(), root / "elsewhere" / "fx-Copy1.ipynb")
    for path in (solved, copy_path):
        _, name, warnings = grading.reference_for(path)
        assert name == "fx.ipynb" and not any("build" in w for w in warnings), warnings
    helptext = run_cli("grade", "--help").stdout
    assert "solutions/<same name>.ipynb" in " ".join(helptext.split()), helptext
    assert "exercises/<same name>" not in helptext


def test_answers_that_reach_into_the_interpreter_are_flagged_for_review(course):
    """Beyond the guards: an answer using the interpreter's machinery is named in a warning
    (decided from its source, in the grader's process); an ordinary answer is not."""
    for name, attack in ATTACKS.items():
        if name == "allclose-patched":
            continue  # plain library patching: the guards' job, nothing to flag by name
        assert grading.machinery_used(attack.replace("{fn}", "f")), name
    assert grading.machinery_used("import sys\nsys.modules['x'] = 1") == ["modules"]
    assert grading.machinery_used(DOUBLE_SOURCE) == []
    learner = copy.deepcopy(course["exercise"])
    _replace_answer(learner, "double", ATTACKS["input-transformer"])
    _, warnings = grading.assemble(learner, course["exercise"])
    assert any(w.startswith("review: answer 'double'") and "get_ipython" in w for w in warnings), warnings


def test_answer_markers_are_removed_as_nbval_splits_lines():
    """Case 3: nbval splits a cell with str.splitlines (\\u2028, \\x0c, \\x1c... break lines)."""
    for sep in ("\u2028", "\u2029", "\x0c", "\x1c", "\x85", "\r"):
        source = f"x = 1\n# {sep}# NBVAL_RAISES_EXCEPTION\nraise RuntimeError"
        cleaned = grading._neutralise_nbval_markers(source)
        assert not any("NBVAL" in line for line in cleaned.splitlines()), (repr(sep), cleaned)
        assert cleaned.endswith("raise RuntimeError") and cleaned.startswith("x = 1\n")


def _course_without_solution(tmp_path):
    root = tmp_path / "course"
    (root / "notebooks").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "nodecourse"\n')
    (root / "solutions").mkdir()
    exercise = build_exercise(solution_notebook(), name="fx.ipynb")
    for cell in exercise.cells:  # the learner edited the check cells of their own file
        if check_id(cell):
            cell.source = f'# NBVAL_CHECK_OUTPUT\nprint("PASS {check_id(cell)}")'
    return root, write(exercise, root / "exercises" / "fx.ipynb")


def test_no_reference_is_an_error_never_a_self_graded_pass(tmp_path):
    """Case 4: without solutions/<name>.ipynb the notebook is not graded against itself."""
    root, path = _course_without_solution(tmp_path)
    with pytest.raises(grading.GradingError, match="no reference for 'fx.ipynb'.*--reference"):
        grading.grade_notebook(path)
    proc = run_cli("grade", str(path), cwd=root)
    assert proc.returncode != 0
    assert "no reference for" in proc.stderr and "PASS" not in proc.stdout, (proc.stdout, proc.stderr)


def test_keep_never_writes_into_a_folder_with_files(tmp_path):
    """Case 5: --keep exercises (or .) would overwrite a notebook or leave a pytest.ini."""
    root, path = _course_without_solution(tmp_path)
    before = path.read_bytes()
    for keep in ("exercises", "."):
        proc = run_cli("grade", str(path), "--reference", str(path), "--keep", keep, cwd=root)
        assert proc.returncode == 2, proc.stderr
        assert "not empty" in proc.stderr, proc.stderr
    assert path.read_bytes() == before
    assert sorted(p.name for p in root.iterdir()) == ["exercises", "notebooks", "pyproject.toml", "solutions"]
    with pytest.raises(grading.GradingError, match="new or empty folder"):
        grading.grade_notebook(path, reference=path, keep_dir=root / "exercises")


def test_check_helpers_compare_plain_values_only():
    """Case 7 inside the checks: close/equal read tensors through the base class's C methods,
    so a subclass's overrides are not called; `same` never calls a learner object's __eq__;
    check() accepts only a real truth value."""
    from unittest import mock

    import numpy as np
    import torch

    from nodecourse.course import checks

    namespace = {"torch": torch}
    exec(FORGED_TENSOR_CLASS, namespace)  # the class the "tensor-subclass" attack defines
    forged = torch.zeros(3).as_subclass(namespace["Yes"])
    assert torch.allclose(forged, torch.ones(3))  # what a check using torch.allclose would see
    assert not checks.close(forged, torch.ones(3)) and checks.close(forged, torch.zeros(3))
    assert checks.close(torch.ones(2, requires_grad=True) * 2, np.array([2.0, 2.0]))
    assert not checks.close(torch.ones(2), torch.ones(3))  # shapes differ
    assert checks.equal([1, 2], (1.0, 2.0)) and not checks.equal([1, 2], [1, 3])
    assert checks.close(float("nan"), float("nan")) and not checks.close(float("nan"), 1.0)
    with pytest.raises(checks.CheckFailed, match="unittest.mock._ANY"):
        checks.close(mock.ANY, 3)
    assert not checks.same(mock.ANY, 3) and checks.same((1, "a", [2.0]), (1, "a", [2.0]))
    assert checks.same(3, 3.0) and not checks.same(True, 1.0)
    with pytest.raises(checks.CheckFailed, match="is a Yes, not a bool"):
        checks.check("x", forged)
    with pytest.raises(checks.CheckFailed, match="is a _ANY, not a bool"):
        checks.check("x", mock.ANY)
    checks.check("t", torch.tensor(True))
    checks.check("n", np.bool_(True))
    checks._refuse("a forging class exists")
    try:
        with pytest.raises(checks.CheckFailed, match="FAIL r: a forging class exists"):
            checks.check("r", True)
    finally:
        checks._refuse(None)
