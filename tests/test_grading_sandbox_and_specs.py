"""The learner's code runs in a sandbox and the verdict is computed outside it.

- the sandbox (bubblewrap): what a process inside sees and keeps, and the fallback
  when no sandbox can be made (every report then says "self-study only");
- task specs: the notebook's self-check and the grader judge the same spec; the
  solution passes every task for many seeds, the unsolved exercise fails every one,
  and a typical mistake gets a message that names the likely cause;
- the grader on exercise 1: the kernel returns plain data, the reference comes
  from a separate process, the comparison runs in the grader.

The attack routes of the issue are in test_grading_attacks.py. Tests that start
kernels are marked slow.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import nbformat
import pytest

from conftest import subprocess_timeout
from nodecourse.course import grading, sandbox, tasks
from nodecourse.course.exercise_builder import answer_id, build_exercise, check_id
from nodecourse.course.tasks import plain
from notebook_fixtures import REPO, SUBPROCESS_ENV, run_cli, write

EX01 = REPO / "solutions" / "01_resnet_as_euler_exercises.ipynb"
EX01_CHECKS = ["euler-step", "residual-block", "euler-integrate-matches", "euler-order"]
NEEDS_BWRAP = pytest.mark.skipif(
    not sandbox.probe().sandboxed, reason=f"no sandbox on this machine: {sandbox.probe().reason}"
)


# ---------------------------------------------------------------------------
# The sandbox
# ---------------------------------------------------------------------------

_INSIDE = r"""
import json, os, socket, sys, sysconfig
facts = {"home": os.environ.get("HOME"), "cwd": os.getcwd(), "pid": os.getpid(),
         "env": sorted(os.environ), "procs": sorted(p for p in os.listdir("/proc") if p.isdigit())}
root = sys.argv[1]
facts["root_listing"] = sorted(os.listdir(root)) if os.path.isdir(root) else None
facts["solutions_exists"] = os.path.exists(os.path.join(root, "solutions"))
facts["home_listing"] = sorted(os.listdir(facts["home"]))
def try_write(path):
    try:
        with open(path, "w") as fh:
            fh.write("x")
        return "written"
    except OSError as exc:
        return type(exc).__name__ + ":" + str(exc.errno)
facts["write_package"] = try_write(os.path.join(sys.argv[2], "planted.py"))
facts["write_site"] = try_write(os.path.join(sysconfig.get_paths()["purelib"], "zz_planted.pth"))
facts["write_home"] = try_write(os.path.join(facts["home"], "kept.txt"))
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2).close()
    facts["network"] = "connected"
except OSError as exc:
    facts["network"] = type(exc).__name__
try:
    open("/dev/tty", "w").close()
    facts["tty"] = "opened"
except OSError as exc:
    facts["tty"] = type(exc).__name__
print(json.dumps(facts))
"""


def _inside(isolation) -> dict:
    package = os.path.dirname(os.path.abspath(grading.__file__)).rsplit(os.sep, 1)[0]
    argv, env = sandbox.wrap(isolation, [sys.executable, "-c", _INSIDE, str(REPO), package], {"NODECOURSE_QUICK": "1"})
    proc = subprocess.run(
        argv, env={**env, "NODECOURSE_GRADE_SECRET": "x"}, capture_output=True, text=True, timeout=subprocess_timeout()
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@NEEDS_BWRAP
def test_sandbox_hides_the_course_keeps_nothing_and_has_no_network():
    """Issue 20, isolation: private home, read-only course and environment, no solutions/,
    no network, own PID namespace, no terminal, a cleared environment, nothing kept."""
    isolation = sandbox.probe()
    first = _inside(isolation)
    assert first["home"] == sandbox.HOME and first["cwd"] == sandbox.WORKDIR
    assert first["home_listing"] == [".ipython", "work"]  # empty, private
    assert not first["solutions_exists"]
    assert set(first["root_listing"]) <= {"nodecourse", ".venv"}, first["root_listing"]
    assert first["write_package"] == "OSError:30" and first["write_site"] == "OSError:30", first  # EROFS
    assert first["write_home"] == "written"
    assert first["network"] != "connected"
    assert first["tty"] != "opened"
    assert first["pid"] <= 3 and len(first["procs"]) <= 3, first["procs"]  # the grader's processes are not there
    assert not any("GRADE" in k for k in first["env"]), first["env"]
    second = _inside(isolation)
    assert second["home_listing"] == [".ipython", "work"]  # kept.txt did not survive
    assert not (REPO / "nodecourse" / "planted.py").exists()


def test_without_a_sandbox_every_report_says_self_study(monkeypatch):
    """Where bubblewrap fails (some Binder hosts), grading still runs and says so plainly."""
    monkeypatch.setenv(sandbox.BWRAP_ENV, "/bin/false")
    isolation = sandbox.probe()
    assert not isolation.sandboxed and "/bin/false" in isolation.reason
    assert isolation.label == "none (self-study only)"
    assert "self-study only" in isolation.describe() and "not for marks" in isolation.describe()
    monkeypatch.setenv(sandbox.BWRAP_ENV, "/nonexistent/bwrap")
    assert "could not run" in sandbox.probe().reason
    check = subprocess.run(
        [sys.executable, "-m", "nodecourse.course.cli", "check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**SUBPROCESS_ENV, sandbox.BWRAP_ENV: "/bin/false"},
        timeout=subprocess_timeout(),
    )
    line = next(x for x in check.stdout.splitlines() if "grading isolation" in x)
    assert line.startswith("[warn]") and "self-study only" in line, line


@NEEDS_BWRAP
def test_nodecourse_check_shows_the_isolation_in_force():
    check = run_cli("check")
    line = next(x for x in check.stdout.splitlines() if "grading isolation" in x)
    assert line.startswith("[ok  ]") and "bubblewrap" in line and "no network" in line, line


# ---------------------------------------------------------------------------
# Task specs, without a kernel
# ---------------------------------------------------------------------------


def _namespace(nb) -> dict:
    """The namespace a notebook's code cells (not its check cells) make, run here."""
    ns: dict = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and not check_id(cell):
            exec(compile(cell.source, f"<cell {cell.get('id')}>", "exec"), ns)
    return ns


def _verdict(exercise, check, seed, ns):
    task = tasks.get_task(exercise, check)
    reference = plain.decode(tasks.reference_text(exercise, [check], seed))[check]
    return tasks.judge_texts(task, tasks.answer_text(exercise, check, seed, ns), reference)


# Exercises whose one seed per task takes seconds in process (a peak-memory measure, tight solves, trained models).
COSTLY_EXERCISES = ("03", "04", "09")


@pytest.mark.parametrize(
    "exercise", [pytest.param(ex, marks=pytest.mark.slow) if ex in COSTLY_EXERCISES else ex for ex in tasks.CONVERTED]
)
def test_the_notebooks_checks_are_the_specs_the_solution_passes_and_the_stub_fails(exercise, torch_defaults):
    """The solution notebook's check cells name exactly its exercise's specs; the solution passes each on
    one seed and the handed-out stub fails each. Many seeds per check are test_grading_calibration's
    (the same in-process route, on every calibration seed)."""
    path = next((REPO / "solutions").glob(f"{exercise}_*.ipynb"))
    solution = nbformat.read(path, as_version=4)
    solved, unsolved = _namespace(solution), _namespace(build_exercise(solution))
    specs = tasks.tasks_for(exercise)
    assert sorted(specs) == sorted(check_id(c) for c in solution.cells if check_id(c))
    for check in specs:
        verdict = _verdict(exercise, check, 7, solved)
        assert verdict.passed, (check, verdict)
        verdict = _verdict(exercise, check, 5, unsolved)
        assert not verdict.passed and verdict.detail == "NotImplementedError: task not done", (check, verdict)


def test_inputs_are_the_same_in_every_process_state():
    """The kernel (float64 default, its own random state) and the reference process
    (torch's defaults) must draw the same inputs from a seed."""
    import torch

    task = tasks.get_task("01", "residual-block")
    first = plain.dumps(list(tasks.spec.make_inputs(task, 9)["stack"].state_dict().values()))
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        torch.manual_seed(123)
        second = plain.dumps(list(tasks.spec.make_inputs(task, 9)["stack"].state_dict().values()))
    finally:
        torch.set_default_dtype(before)
    assert first == second
    assert plain.dumps(tasks.spec.make_inputs(task, 10)["z"]) != plain.dumps(tasks.spec.make_inputs(task, 9)["z"])


def test_a_typical_mistake_is_named(torch_defaults):
    solution = nbformat.read(EX01, as_version=4)
    ns = _namespace(solution)
    exec("def euler_step(f, t, y, h):\n    return y - h * f(t, y)\n", ns)
    verdict = _verdict("01", "euler-step", 3, ns)
    assert not verdict.passed and "wrong sign" in verdict.detail, verdict
    exec(
        "def euler_integrate(f, y0, t0, t1, n_steps):\n    h = (t1 - t0) / n_steps\n    y, t = y0, t0\n"
        "    for _ in range(n_steps - 1):\n        y, t = euler_step(f, t, y, h), t + h\n    return y\n",
        ns,
    )
    exec("def euler_step(f, t, y, h):\n    return y + h * f(t, y)\n", ns)
    verdict = _verdict("01", "euler-integrate-matches", 3, ns)
    assert not verdict.passed and "one step too few" in verdict.detail, verdict


def test_plain_data_is_decoded_safely_and_objects_are_refused():
    from unittest import mock

    import torch

    value = plain.decode(plain.dumps({"y": torch.ones(2, 3, dtype=torch.float64), "n": 3, "s": ["a", None]}))
    assert value["y"].shape == (2, 3) and value["y"].dtype == "torch.float64" and value["n"] == 3
    with pytest.raises(plain.NotPlain, match="unittest.mock.MagicMock"):
        plain.encode(mock.MagicMock())
    for text in (
        '{"__array__": [1, 2], "shape": [3], "dtype": "x", "requires_grad": false}',
        "[" * 100 + "]" * 100,
        b"{}",
        "cos(1)",
        "x" * (plain.MAX_TEXT + 1),
    ):
        with pytest.raises(plain.NotPlain):
            plain.decode(text)
    assert plain.decode("[NaN, Infinity]")[1] == float("inf")


def test_self_check_prints_pass_or_raises_with_the_judges_message(capsys, torch_defaults):
    from nodecourse.course.checks import CheckFailed

    ns = _namespace(nbformat.read(EX01, as_version=4))
    tasks.self_check("01", "euler-order", ns)
    assert capsys.readouterr().out == "PASS euler-order\n"
    exec("def euler_step(f, t, y, h):\n    return y\n", ns)
    with pytest.raises(CheckFailed, match="FAIL euler-step: .*no step taken"):
        tasks.self_check("01", "euler-step", ns)


# ---------------------------------------------------------------------------
# The grader on exercise 1
# ---------------------------------------------------------------------------


def _replace(nb, task, source):
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if answer_id(cell) == task:
            cell.source = source
    return nb


@pytest.mark.slow
def test_exercise1_solution_passes_and_a_wrong_answer_fails_with_the_verdict_computed_outside(tmp_path):
    solution = nbformat.read(EX01, as_version=4)
    half = _replace(solution, "euler-integrate", "def euler_integrate(f, y0, t0, t1, n_steps):\n    return y0\n")
    path = write(half, tmp_path / "01_resnet_as_euler_exercises.ipynb")
    keep = tmp_path / "kept"
    rows, warnings = grading.grade_notebook(path, seed=4, keep_dir=keep)
    rows = {r.check: r for r in rows}
    assert sorted(rows) == sorted(EX01_CHECKS)
    assert rows["euler-step"].passed and rows["residual-block"].passed, rows
    for check in ("euler-integrate-matches", "euler-order"):
        assert not rows[check].passed and rows[check].seed == 4, rows[check]
    assert "differs from odeint(method='euler')" in rows["euler-integrate-matches"].reason
    assert all(r.isolation == sandbox.probe().label for r in rows.values())
    outcomes = json.loads((keep / "outcomes.json").read_text())
    # the kernel's part of a task is plain data (its reply), never a verdict
    replies = [c["answer"] for c in outcomes["cells"].values() if c.get("outcome") == "answered"]
    assert len(replies) == 4 and all(json.loads(r)["ok"] in (True, False) for r in replies)
    assert outcomes["seed"] == 4 and outcomes["isolation"]["label"] == sandbox.probe().label


@pytest.mark.slow
def test_exercise1_through_the_cli_states_the_isolation_in_text_and_json(tmp_path):
    exercise = REPO / "exercises" / "01_resnet_as_euler_exercises.ipynb"
    proc = run_cli("grade", str(exercise), "--json", "--seed", "11")
    assert proc.returncode == 1, proc.stderr
    rows = json.loads(proc.stdout)
    assert [r["check"] for r in rows] == EX01_CHECKS
    assert all(not r["passed"] and r["reason"] == "NotImplementedError: task not done" for r in rows), rows
    assert all(r["isolation"] == sandbox.probe().label and r["seed"] == 11 for r in rows)
    assert "isolation:" in proc.stderr
    table = run_cli("grade", str(EX01), "--seed", "11")
    assert table.returncode == 0, table.stdout + table.stderr
    assert "4/4 checks pass" in table.stdout and table.stdout.rstrip().splitlines()[-1].startswith("isolation: ")


# ---------------------------------------------------------------------------
# Checks that dishonest numbers fail, and checks that point at the mistake
# ---------------------------------------------------------------------------


def _answer_source(path, task):
    nb = nbformat.read(path, as_version=4)
    return next(c.source for c in nb.cells if answer_id(c) == task)


def _solved(exercise):
    return _namespace(nbformat.read(next((REPO / "solutions").glob(f"{exercise}_*.ipynb")), as_version=4))


DISHONEST = {
    # a memory figure made up from the step count
    (
        "04",
        "flat-memory",
        "def peak_bytes(use_adjoint, n_steps):\n    return 1000 * n_steps * (0 if use_adjoint else 1) + 2 ** 20\n",
    ): "one forward + backward measured by the grader",
    # backward() left out: the old check passed it
    ("04", "flat-memory", None): "backward() is left out",
    # Picard iteration reporting 1 iteration
    (
        "06",
        "anderson",
        "def anderson(f, z0, m=6, tol=1e-8, max_iter=1000):\n    z = z0\n    for _ in range(max_iter):\n"
        "        fz = f(z)\n        if (fz - z).norm() <= tol * fz.norm():\n            return z, 1\n        z = fz\n"
        "    return z, 1\n",
    ): "reported 1 evaluations but called f",
    # the exact value times noise, differentiable, with the right mean
    (
        "06",
        "hutchinson",
        "def hutchinson(f_out, z, n_samples=1):\n    import torch\n"
        "    from nodecourse.deq import exact_jacobian_frobenius\n    e = exact_jacobian_frobenius(f_out, z)\n"
        "    return e * (1 + 0.3 * torch.randn_like(e)) + 0 * f_out.sum(1)\n",
    ): "on the grader's probes",
    # step counts made up
    (
        "02",
        "adaptive-loop",
        "def integrate_adaptive(f, y0, t0, t1, rtol, atol, h0=0.01, max_steps=100_000):\n"
        "    from nodecourse import odeint\n    import torch\n"
        "    y = odeint(f, y0, torch.tensor([t0, t1]), rtol=rtol, atol=atol).ys[-1]\n"
        "    return y, int(1 / rtol ** 0.3), 1\n",
    ): "the counts do not match the work done",
}


@pytest.mark.parametrize("case", list(DISHONEST), ids=lambda c: f"{c[0]}-{c[1]}")
def test_dishonest_numbers_fail(case, torch_defaults):
    exercise, check, source = case
    ns = _solved(exercise)
    if source is None:  # the solution's own peak_bytes, without its backward pass
        path = next((REPO / "solutions").glob(f"{exercise}_*.ipynb"))
        source = _answer_source(path, "flat-memory").replace("z1.pow(2).sum().backward()", "z1.pow(2).sum()")
    exec(source, ns)
    verdict = _verdict(exercise, check, 2, ns)
    assert not verdict.passed and DISHONEST[case] in verdict.detail, verdict


MISTAKES = {
    ("04", "adjoint-dynamics", "adjoint-dynamics", ("da = -vjps[0]", "da = vjps[0]")): "likely cause: the sign",
    ("04", "adjoint-dynamics", "adjoint-dynamics", ("with torch.enable_grad():", "if True:")): "no torch.enable_grad()",
    ("06", "hutchinson", "hutchinson", ("create_graph=True", "create_graph=False")): "create_graph=True is missing",
    ("06", "mixing-weights", "mixing-weights", ("lam * s *", "lam *")): "not scaled by s",
    ("08", "hutchinson", "hutchinson", ("create_graph=True", "create_graph=False")): "create_graph=True is missing",
    ("08", "dynamics", "dynamics", ("with torch.enable_grad():", "if True:")): "no torch.enable_grad()",
    ("01", "euler-integrate-matches", "euler-integrate", ("range(n_steps)", "range(n_steps + 1)")): "one step too many",
}


@pytest.mark.parametrize("case", list(MISTAKES), ids=lambda c: f"{c[0]}-{c[1]}-{c[3][1][:12]}")
def test_a_typical_mistake_gets_its_likely_cause(case, torch_defaults):
    exercise, check, task, (old, new) = case
    ns = _solved(exercise)
    path = next((REPO / "solutions").glob(f"{exercise}_*.ipynb"))
    source = _answer_source(path, task)
    assert old in source, (task, old)
    exec(source.replace(old, new), ns)
    verdict = _verdict(exercise, check, 1, ns)
    assert not verdict.passed and MISTAKES[case] in verdict.detail, verdict


@pytest.mark.parametrize("exercise, check", [("04", "adjoint-dynamics"), ("08", "dynamics")])
def test_the_self_check_names_a_missing_enable_grad_as_the_grader_does(exercise, check, torch_defaults):
    """In the notebook a missing torch.enable_grad() fails the check with a FAIL line that adds the
    course's hint to PyTorch's message; PyTorch's error is chained as the cause (the traceback on request)."""
    from nodecourse.course.checks import CheckFailed

    ns = _solved(exercise)
    path = next((REPO / "solutions").glob(f"{exercise}_*.ipynb"))
    exec(_answer_source(path, check).replace("with torch.enable_grad():", "if True:"), ns)
    with pytest.raises(CheckFailed) as failed:
        tasks.self_check(exercise, check, ns)
    line = str(failed.value)
    assert line.startswith(f"FAIL {check}: RuntimeError: ") and "does not require grad" in line, line
    assert "likely cause: no torch.enable_grad()" in line, line
    assert isinstance(failed.value.__cause__, RuntimeError), failed.value.__cause__
    assert line == f"FAIL {check}: " + _verdict(exercise, check, tasks.SELF_CHECK_SEED, ns).detail


@pytest.mark.slow
def test_the_notebooks_self_check_under_nbval_passes_solved_and_fails_unsolved():
    """The learner's self-check (README): `pytest --nbval exercises/NN_….ipynb` runs the same specs."""

    def nbval(path):
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "--nbval",
                "--nbval-current-env",
                str(path),
            ],
            cwd=REPO,
            env=SUBPROCESS_ENV,
            capture_output=True,
            text=True,
            timeout=300,
        )

    solved = nbval(EX01)  # saved outputs: each check cell's "PASS <id>", compared by nbval
    assert solved.returncode == 0, solved.stdout[-2000:]
    unsolved = nbval(REPO / "exercises" / EX01.name)
    assert unsolved.returncode == 1 and "4 failed" in unsolved.stdout, unsolved.stdout[-2000:]


@pytest.mark.slow
def test_grading_without_a_sandbox_still_grades_and_says_self_study_only():
    env = {**SUBPROCESS_ENV, sandbox.BWRAP_ENV: "/bin/false"}
    proc = subprocess.run(
        [sys.executable, "-m", "nodecourse.course.cli", "grade", str(EX01), "--seed", "2"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4/4 checks pass" in proc.stdout
    last = proc.stdout.rstrip().splitlines()[-1]
    assert last.startswith("isolation: NONE") and "self-study only" in last, last
    proc = subprocess.run(
        [sys.executable, "-m", "nodecourse.course.cli", "grade", str(EX01), "--json", "--seed", "3"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert {r["isolation"] for r in json.loads(proc.stdout)} == {"none (self-study only)"}
