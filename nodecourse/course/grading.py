"""The grader behind ``nodecourse grade NOTEBOOK...``.

The learner's notebook is never run as it is. The grader takes only its
*answer cells* (matched by the ``{"nodecourse": {"answer": id}}`` metadata)
and puts their source into a clean reference copy of the exercise: a fresh
build of ``solutions/<same name>.ipynb`` (learners edit ``exercises/`` in place,
so that folder is never trusted), or ``--reference``. With neither, grading
stops with an error: a notebook is never graded against itself. Every other
cell, the check cells and their expected outputs included, comes from the
reference. So saved outputs, a forged ``PASS`` line, a deleted or an edited
check cell cannot turn into a pass; a missing answer cell keeps its stub and fails.

The grader runs the assembled notebook itself, cell by cell, in a fresh
kernel of the current environment (``NODECOURSE_QUICK=1``, the course's thread
count, a per-cell timeout), in an empty temporary folder. It decides every
outcome in its own process from the kernel's replies to its own requests: no
file, no environment variable and nothing in the kernel's folder carries a
result, so nothing the kernel (or a process it starts) writes can add a pass.

Before every check cell it has the kernel run
:func:`nodecourse.course.kernel_guard.before_check` (through a channel that
input transformers do not see), which removes input/AST transformers, custom
exception handlers and event hooks, puts back ``check``, the library's
functions and classes and the shell's methods from copies taken before any
answer ran, and refuses the check when answer code defined a class that can
forge a comparison; after the check cell,
:func:`~nodecourse.course.kernel_guard.after_check` fails it if the learner's
functions changed any of that while the check called them. An answer whose
source uses the interpreter's machinery (``get_ipython``, ``sys.modules``,
``ctypes``...) is named in a "review:" warning, decided here from its source.

A kernel that dies is reported as dead at once; after a timeout or a death
the grader restarts the kernel, replays the cells that had passed, and goes
on, so one stuck task does not hide the feedback on the others (a note says so).

A check passes when its cell runs without error and prints ``PASS <id>``
(extra output such as a warning on stderr is tolerated) *and* the answer cell
before it ran without error.

What this guarantees and what it does not (answer code shares the kernel's
process with the checks) is the trust model in CONTRIBUTING.md.
"""
from __future__ import annotations

import ast
import json
import os
import queue
import re
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import nbformat

from nodecourse.course.paths import find_course_root
from nodecourse.course.exercise_builder import (
    ExerciseFormatError,
    answer_id,
    build_exercise,
    check_id,
)

DEFAULT_CELL_TIMEOUT_S = 120
KERNEL_START_TIMEOUT_S = 120
# Lines that would change how nbval treats a cell (skip it, accept an error):
# never honoured in a learner's answer. Matched per line as nbval splits them
# (str.splitlines, which also breaks at \u2028, \x0c, \x1c...).
_NBVAL_MARKER = re.compile(r"^\s*#.*\b(NBVAL_\w+|PYTEST_VALIDATE_\w+)")
_SKIP_MARKER = re.compile(r"^\s*#\s*NBVAL_SKIP\b")
_RAISES_MARKER = re.compile(r"^\s*#\s*NBVAL_RAISES_EXCEPTION\b")
# Copies that JupyterLab makes ("X-Copy1.ipynb") grade against X.ipynb.
_COPY_SUFFIX = re.compile(r"-Copy\d+$")
_GUARD = "__import__('sys').modules['nodecourse.course.kernel_guard']"


class GradingError(RuntimeError):
    """The grader could not grade a notebook (no reference, unreadable file...)."""


@dataclass
class CheckRow:
    """One line of the grade table."""

    notebook: str  # the learner's notebook, as given
    exercise: str  # the reference exercise's file name
    check: str  # check id, or "cell N" for a failing cell that is not a check
    passed: bool
    reason: str  # short: why it failed ("" when passed)
    check_cell_passed: bool  # the check cell's own outcome, before linking to its answer

    def as_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------
# Assembling the notebook that is actually run
# ---------------------------------------------------------------------------

def reference_for(notebook: Path, course_root: Path | None = None) -> tuple[object, str, list[str]]:
    """The clean exercise that ``notebook`` is graded against: ``(notebook, file name, warnings)``.

    Always a fresh build of ``solutions/<same name>.ipynb``: a learner works
    *in* ``exercises/``, so nothing there is trusted. Without that solution
    there is no reference, and :class:`GradingError` says so (pass
    ``--reference`` to grade against an exercise you trust).
    """
    root = course_root or find_course_root(notebook.parent) or find_course_root()
    if root is None:
        raise GradingError(
            f"cannot find the course root (a folder with notebooks/ and solutions/) from "
            f"{notebook.parent} or the current directory; run from the course folder or "
            "pass --reference PATH (a clean exercise notebook)"
        )
    name = _COPY_SUFFIX.sub("", notebook.stem) + ".ipynb"
    solution = root / "solutions" / name
    if not solution.is_file():
        available = sorted(p.name for p in (root / "solutions").glob("*.ipynb"))
        raise GradingError(
            f"no reference for {notebook.name!r}: the grader builds it from {solution}, which does not "
            f"exist (solutions: {available}); keep the exercise's file name, or pass --reference PATH to "
            "a clean exercise notebook. A notebook is never graded against its own check cells."
        )
    try:
        built = build_exercise(nbformat.read(solution, as_version=4), name=str(solution))
    except ExerciseFormatError as exc:
        raise GradingError(f"cannot build the reference from {solution}: {exc}") from exc
    return built, name, []


def _neutralise_nbval_markers(source: str) -> str:
    """Blank every marker line, split exactly as nbval splits (``str.splitlines``),
    keeping the other lines and their line ends byte for byte."""
    out = []
    for line in source.splitlines(keepends=True):
        body = line.rstrip("\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029")
        if _NBVAL_MARKER.match(body):
            out.append("# (nbval marker removed by the grader)" + line[len(body):])
        else:
            out.append(line)
    return "".join(out)


def _has_marker(source: str, marker: re.Pattern) -> bool:
    return any(marker.match(line) for line in source.splitlines())


# Names an exercise answer has no need for, and that reach the machinery a check
# relies on: a grade with them is flagged for a person to read (see machinery_used).
MACHINERY_NAMES = frozenset((
    "get_ipython", "kernel_guard", "ctypes", "gc", "builtins", "__builtins__", "__code__", "__globals__",
    "__closure__", "__kwdefaults__", "__defaults__", "__torch_function__", "__torch_dispatch__",
    "__array_ufunc__", "__array_function__", "TorchFunctionMode", "TorchDispatchMode", "set_custom_exc",
    "input_transformers_cleanup", "input_transformers_post", "ast_transformers", "exec", "eval", "compile",
    "__import__", "importlib", "subprocess", "modules", "settrace", "setprofile", "__subclasses__",
    "_refuse", "_refusal", "_truth", "inspect",
))


def machinery_used(source: str) -> list[str]:
    """The names from :data:`MACHINERY_NAMES` that ``source`` uses (as a name, an attribute,
    an import or a string), sorted; ``nodecourse.course`` imports count too."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and
                                                      node.module else [])
            names = [part for m in modules for part in m.split(".")]
            if any(m.startswith("nodecourse.course") for m in modules):
                found.add("nodecourse.course")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", node.value)
        found.update(n for n in names if n in MACHINERY_NAMES)
    return sorted(found)


def assemble(learner, reference) -> tuple[object, list[str]]:
    """Put the learner's answer cells into a copy of the reference notebook.

    Returns ``(notebook, warnings)``. Only answer-cell *sources* are taken
    from ``learner``; outputs everywhere except check cells are cleared.
    """
    warnings: list[str] = []
    answers: dict[str, str] = {}
    for cell in learner.cells:
        task = answer_id(cell)
        if task is None or cell.cell_type != "code":
            continue
        if task in answers:
            warnings.append(f"answer {task!r} appears more than once; grading the last one")
        answers[task] = cell.source
    nb = nbformat.from_dict(json.loads(json.dumps(reference)))  # a deep, independent copy
    reference_tasks = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        task = answer_id(cell)
        if task is not None:
            reference_tasks.add(task)
            if task in answers:
                cell.source = _neutralise_nbval_markers(answers[task])
                reached = machinery_used(answers[task])
                if reached:
                    warnings.append(
                        f"review: answer {task!r} reaches into the interpreter ({', '.join(reached)}); the "
                        "grader's guards stop the tampering its trust model lists, they are not a sandbox: "
                        "read this answer before giving marks")
            else:
                warnings.append(f"answer {task!r} not found in the notebook; its stub is graded")
        if check_id(cell) is None:
            cell.outputs, cell.execution_count = [], None
    unknown = sorted(set(answers) - reference_tasks)
    if unknown:
        warnings.append(f"answer cells {unknown} are not in the reference exercise and were ignored")
    return nb, warnings


# ---------------------------------------------------------------------------
# Running it: one kernel, driven by this process
# ---------------------------------------------------------------------------

def _package_parent() -> str:
    return str(Path(__file__).resolve().parent.parent)


def course_thread_count() -> int:
    """Torch threads for the grader's kernels: the course's one choice,
    :func:`nodecourse.config.course_threads` (NODECOURSE_THREADS, OMP_NUM_THREADS, else one)."""
    from nodecourse.config import course_threads

    try:
        return course_threads()
    except ValueError as exc:  # a malformed NODECOURSE_THREADS: say so, do not guess
        raise GradingError(str(exc)) from exc


def kernel_environment() -> dict[str, str]:
    """The grading kernel's environment: the grader's, minus anything that names a grader file,
    plus quick mode, the course's thread count and this copy of nodecourse on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NODECOURSE_GRADE")}
    env["NODECOURSE_QUICK"] = "1"
    threads = str(course_thread_count())
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = threads
    env["PYTHONPATH"] = os.pathsep.join(
        [_package_parent()] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


@dataclass
class CellResult:
    """What the grader saw of one execute request."""

    status: str  # "ok", "error", "timeout", "dead"
    stdout: str = ""
    ename: str = ""
    evalue: str = ""
    user_expressions: dict = field(default_factory=dict)
    exit_code: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class _Kernel:
    """A kernel of the current environment, started and driven by this process."""

    def __init__(self, cwd: Path, log: Path):
        from jupyter_client import KernelManager
        from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
        import ipykernel.kernelspec

        class _CurrentEnv(KernelSpecManager):
            def get_kernel_spec(self, kernel_name):
                return KernelSpec(resource_dir=ipykernel.kernelspec.RESOURCES,
                                  **ipykernel.kernelspec.get_kernel_dict())

        self.km = KernelManager(kernel_name="python3", kernel_spec_manager=_CurrentEnv())
        self._log = open(log, "ab")
        self._devnull = open(os.devnull, "wb")
        # The kernel's stdout goes nowhere, its stderr to a log only the grader reads:
        # it cannot print into the grader's own output.
        self.km.start_kernel(cwd=str(cwd), env=kernel_environment(),
                             stdout=self._devnull, stderr=self._log)
        self.kc = self.km.client()
        self.kc.start_channels()
        try:
            self.kc.wait_for_ready(timeout=KERNEL_START_TIMEOUT_S)
        except RuntimeError as exc:
            self.close()
            raise GradingError(f"the grading kernel did not start: {exc}") from exc

    def exit_code(self) -> int | None:
        prov = getattr(self.km, "provisioner", None)
        return prov.process.poll() if prov is not None and getattr(prov, "process", None) else None

    def execute(self, code: str, timeout_s: float, user_expressions: dict | None = None,
                silent: bool = False) -> CellResult:
        msg_id = self.kc.execute(code, silent=silent, store_history=not silent,
                                 user_expressions=user_expressions or {}, allow_stdin=False,
                                 stop_on_error=False)
        deadline = time.monotonic() + timeout_s
        stdout: list[str] = []
        error: dict = {}
        reply = None
        idle = False
        while not (idle and reply is not None):
            if time.monotonic() > deadline:
                return CellResult("timeout", "".join(stdout))
            if not self.km.is_alive():
                return CellResult("dead", "".join(stdout), exit_code=self.exit_code())
            try:
                msg = self.kc.get_iopub_msg(timeout=0.1)
            except queue.Empty:
                msg = None
            if msg is not None and msg.get("parent_header", {}).get("msg_id") == msg_id:
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream" and content.get("name") == "stdout":
                    stdout.append(content.get("text", ""))
                elif kind == "error":
                    error = content
                elif kind == "status" and content.get("execution_state") == "idle":
                    idle = True
            if reply is None:
                try:
                    shell = self.kc.get_shell_msg(timeout=0.01)
                except queue.Empty:
                    shell = None
                if shell is not None and shell.get("parent_header", {}).get("msg_id") == msg_id:
                    reply = shell["content"]
        status = reply.get("status", "error")
        if status != "ok":
            error = error or reply
        return CellResult("ok" if status == "ok" and not error else "error", "".join(stdout),
                          error.get("ename", ""), error.get("evalue", ""),
                          reply.get("user_expressions", {}))

    def guard(self, call: str, timeout_s: float) -> CellResult:
        """Call the kernel guard through user_expressions (evaluated without any transformer)."""
        res = self.execute("", timeout_s, user_expressions={"guard": f"{_GUARD}.{call}"}, silent=True)
        if res.ok:
            value = res.user_expressions.get("guard", {})
            if value.get("status") != "ok":
                res.status, res.ename, res.evalue = "error", value.get("ename", "?"), value.get("evalue", "")
        return res

    def close(self) -> None:
        try:
            self.kc.stop_channels()
        finally:
            try:
                self.km.shutdown_kernel(now=True)
            except Exception:
                pass
            self._log.close()
            self._devnull.close()


def _start_kernel(workdir: Path, log: Path, timeout_s: float) -> _Kernel:
    kernel = _Kernel(workdir, log)
    res = kernel.execute("", max(timeout_s, KERNEL_START_TIMEOUT_S), silent=True, user_expressions={
        "guard": "__import__('nodecourse.course.kernel_guard', fromlist=['install']).install(get_ipython())"})
    value = res.user_expressions.get("guard", {})
    if not res.ok or value.get("status") != "ok":
        kernel.close()
        raise GradingError(f"the grading kernel could not set up its guard: {res.status} "
                           f"{value.get('ename', res.ename)} {value.get('evalue', res.evalue)}".rstrip())
    return kernel


def _log_tail(log: Path, n: int = 400) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""
    return text[-n:]


def run_cells(nb, *, timeout_s: float, workdir: Path, log: Path) -> tuple[dict[int, dict], list[str]]:
    """Run the code cells of ``nb`` in a guarded kernel; return (outcomes by code-cell number, notes).

    Each outcome: ``{"outcome": "passed"|"failed"|"skipped", "reason": str, "stdout": str}``.
    After a cell times out or the kernel dies, a fresh kernel replays the cells that had
    passed (in order) and grading goes on with the next cell.
    """
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    outcomes: dict[int, dict] = {}
    notes: list[str] = []
    kernel = _start_kernel(workdir, log, timeout_s)
    try:
        for num, cell in enumerate(code_cells):
            task, cid = answer_id(cell), check_id(cell)
            if task is None and _has_marker(cell.source, _SKIP_MARKER):
                outcomes[num] = {"outcome": "skipped", "reason": "NBVAL_SKIP", "stdout": ""}
                continue
            outcome = _run_one(kernel, cell, task, cid, timeout_s)
            outcomes[num] = outcome
            if outcome.get("lost_kernel"):
                what = outcome["reason"]
                kernel.close()
                kernel = _start_kernel(workdir, log, timeout_s)
                replayed, failed = _replay(kernel, code_cells[:num], outcomes, timeout_s)
                note = (f"cell {num} ({_cell_label(task, cid)}) {what}: restarted the kernel and replayed "
                        f"the {replayed} cell(s) that had passed, so the tasks after it are still graded")
                if failed:
                    note += f"; on replay these failed: {', '.join(failed)}"
                notes.append(note)
    finally:
        kernel.close()
    return outcomes, notes


def _cell_label(task: str | None, cid: str | None) -> str:
    return f"answer {task!r}" if task else f"check {cid!r}" if cid else "setup"


def _run_one(kernel: _Kernel, cell, task: str | None, cid: str | None, timeout_s: float) -> dict:
    refused = ""
    if cid is not None:
        guard = kernel.guard(f"before_check({cid!r})", timeout_s)
        if not guard.ok:
            return _outcome_of(guard, timeout_s, prefix="the grader's guard before this check: ")
        refused = _guard_value(guard)
    res = kernel.execute(cell.source, timeout_s)
    outcome = _outcome_of(res, timeout_s)
    if task is None and outcome["outcome"] == "failed" and res.status == "error" \
            and _has_marker(cell.source, _RAISES_MARKER):
        outcome = {"outcome": "passed", "reason": "", "stdout": res.stdout}  # an error was expected
    if task is None and res.status in ("ok", "error"):
        after = kernel.guard("after_reference_cell()", timeout_s)
        if after.status in ("timeout", "dead"):
            return _outcome_of(after, timeout_s)
    if cid is not None and res.status in ("ok", "error"):
        after = kernel.guard(f"after_check({cid!r})", timeout_s)
        if after.status in ("timeout", "dead"):
            return _outcome_of(after, timeout_s, prefix="the grader's guard after this check: ")
        tampered = _guard_value(after) if after.ok else f"{after.ename}: {after.evalue}"
        if tampered and outcome["outcome"] == "passed":
            outcome = {"outcome": "failed", "stdout": res.stdout,
                       "reason": f"answer code changed what the check relies on while it ran ({tampered})"[:300]}
    if cid is not None and outcome["outcome"] == "passed" \
            and f"PASS {cid}" not in outcome["stdout"].splitlines():
        outcome = {"outcome": "failed", "reason": f"did not print 'PASS {cid}'", "stdout": res.stdout}
    outcome["guard"] = refused
    return outcome


def _guard_value(res: CellResult) -> str:
    """The string a guard call returned (its repr comes back as text/plain)."""
    text = res.user_expressions.get("guard", {}).get("data", {}).get("text/plain", "")
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return value if isinstance(value, str) else text


def _outcome_of(res: CellResult, timeout_s: float, prefix: str = "") -> dict:
    if res.status == "ok":
        return {"outcome": "passed", "reason": "", "stdout": res.stdout}
    if res.status == "timeout":
        return {"outcome": "failed", "reason": prefix + f"timed out after {timeout_s:g} s",
                "stdout": res.stdout, "lost_kernel": True}
    if res.status == "dead":
        code = f" (exit code {res.exit_code})" if res.exit_code is not None else ""
        return {"outcome": "failed", "reason": prefix + f"the kernel died{code} while this cell ran",
                "stdout": res.stdout, "lost_kernel": True}
    return {"outcome": "failed", "reason": prefix + _error_reason(res.ename, res.evalue), "stdout": res.stdout}


def _error_reason(ename: str, evalue: str) -> str:
    if ename == "NotImplementedError":
        return "NotImplementedError: task not done"
    text = _ANSI.sub("", evalue).strip() if ename == "CheckFailed" else \
        f"{ename}: {_ANSI.sub('', evalue).strip()}".rstrip(": ")
    text = text.splitlines()[0] if text else (ename or "failed")
    return text if len(text) <= 160 else text[:157] + "..."


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _replay(kernel: _Kernel, cells, outcomes: dict[int, dict], timeout_s: float) -> tuple[int, list[str]]:
    """Run again, in a fresh kernel, the cells among ``cells`` that passed; return (count, failures)."""
    n, failed = 0, []
    for num, cell in enumerate(cells):
        if outcomes.get(num, {}).get("outcome") != "passed":
            continue
        task, cid = answer_id(cell), check_id(cell)
        res = _run_one(kernel, cell, task, cid, timeout_s)
        n += 1
        if res["outcome"] != "passed":
            failed.append(f"cell {num} ({res['reason']})")
            if res.get("lost_kernel"):
                break
    return n, failed


def _check_keep_dir(keep_dir: Path) -> Path:
    """``--keep DIR`` writes only into a new or an empty folder."""
    if keep_dir.exists() and (not keep_dir.is_dir() or any(keep_dir.iterdir())):
        raise GradingError(
            f"--keep {keep_dir}: the folder is not empty (or not a folder); give a new or empty "
            "folder, so that nothing there (a notebook, a pytest.ini) is overwritten")
    return keep_dir


def grade_notebook(
    notebook: Path | str,
    *,
    reference: Path | str | None = None,
    timeout_s: float = DEFAULT_CELL_TIMEOUT_S,
    keep_dir: Path | str | None = None,
) -> tuple[list[CheckRow], list[str]]:
    """Grade one learner notebook; return its table rows and warnings (notes included).

    ``reference``: the exercise to grade against (default: see
    :func:`reference_for`). ``timeout_s``: per-cell limit.
    ``keep_dir``: a new or empty folder where the assembled notebook and the
    outcomes are written after grading (default: nothing kept).
    """
    notebook = Path(notebook)
    if not notebook.is_file():
        raise GradingError(f"notebook={str(notebook)!r} does not exist; give the path of your exercise notebook")
    if not timeout_s > 0:
        raise GradingError(f"timeout={timeout_s!r}: give a positive number of seconds per cell")
    keep = _check_keep_dir(Path(keep_dir)) if keep_dir is not None else None
    try:
        learner = nbformat.read(notebook, as_version=4)
    except Exception as exc:  # nbformat raises several types for a broken file
        raise GradingError(f"cannot read {notebook} as a notebook: {exc}") from exc
    if reference is not None:
        ref_path = Path(reference)
        if not ref_path.is_file():
            raise GradingError(f"reference={str(reference)!r} does not exist; give a built exercise notebook")
        try:
            ref_nb = nbformat.read(ref_path, as_version=4)
        except Exception as exc:
            raise GradingError(f"cannot read the reference {ref_path} as a notebook: {exc}") from exc
        ref_name, ref_warnings = ref_path.name, []
    else:
        ref_nb, ref_name, ref_warnings = reference_for(notebook)
    assembled, warnings = assemble(learner, ref_nb)
    warnings = ref_warnings + warnings
    with tempfile.TemporaryDirectory(prefix="nodecourse-grade-") as tmp:
        # The kernel works in an empty folder of its own; the log of its stderr is beside it.
        workdir = Path(tmp) / "kernel"
        workdir.mkdir()
        log = Path(tmp) / "kernel-stderr.log"
        outcomes, notes = run_cells(assembled, timeout_s=timeout_s, workdir=workdir, log=log)
        rows = _rows(notebook, ref_name, assembled, outcomes)
        if any("kernel died" in o.get("reason", "") for o in outcomes.values()):
            tail = _log_tail(log)
            if tail:
                notes.append(f"the kernel's last words on stderr: {tail}")
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        nbformat.write(assembled, keep / ref_name)
        (keep / "outcomes.json").write_text(json.dumps(
            {"rows": [r.as_dict() for r in rows], "cells": outcomes, "notes": notes}, indent=1),
            encoding="utf-8")
    return rows, warnings + [f"note: {n}" for n in notes]


def _rows(notebook: Path, exercise: str, nb, outcomes: dict[int, dict]) -> list[CheckRow]:
    rows: list[CheckRow] = []
    last_answer: tuple[str, dict] | None = None  # (task, outcome) of the latest answer cell
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    for num, cell in enumerate(code_cells):
        outcome = outcomes.get(num, {"outcome": "failed", "reason": "cell was not run"})
        ok = outcome["outcome"] in ("passed", "skipped")
        task, cid = answer_id(cell), check_id(cell)
        if task is not None:
            last_answer = (task, outcome)
            continue
        if cid is not None:
            passed, reason = ok, outcome.get("reason", "")
            if last_answer is not None and last_answer[1]["outcome"] != "passed":
                passed = False
                reason = f"answer {last_answer[0]!r}: {last_answer[1].get('reason', 'failed')}"
            rows.append(CheckRow(str(notebook), exercise, cid, passed, "" if passed else reason, ok))
        elif not ok:
            rows.append(CheckRow(str(notebook), exercise, f"cell {num}", False, outcome.get("reason", ""), False))
    # An answer cell with no check after it still has to run.
    if last_answer is not None and last_answer[1]["outcome"] != "passed":
        trailing = code_cells.index(next(c for c in code_cells if answer_id(c) == last_answer[0]))
        if not any(check_id(c) for c in code_cells[trailing:]):
            rows.append(CheckRow(str(notebook), exercise, f"answer {last_answer[0]}", False,
                                 last_answer[1].get("reason", "failed"), False))
    if not any(check_id(c) for c in code_cells):
        rows.append(CheckRow(str(notebook), exercise, "(no checks)", False,
                             "the reference exercise has no check cells", False))
    return rows


# ---------------------------------------------------------------------------
# Table and command line
# ---------------------------------------------------------------------------

def format_table(rows: Sequence[CheckRow]) -> str:
    """A plain-text table: exercise, check, result, reason."""
    headers = ["exercise", "check", "result", "reason"]
    cells = [[r.exercise, r.check, "pass" if r.passed else "FAIL", r.reason] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]
    widths[-1] = min(widths[-1], 100)

    def fmt(row):
        return " | ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip()

    lines = [fmt(headers), "-+-".join("-" * w for w in widths)] + [fmt(c) for c in cells]
    n_pass = sum(r.passed for r in rows)
    lines.append(f"{n_pass}/{len(rows)} checks pass")
    return "\n".join(lines)


def _no_peeking() -> None:
    """Make this process non-dumpable (Linux): another process of the same user, such as
    the kernel or a process it started, can then neither trace it nor open its files
    and memory through /proc/<pid>/. Elsewhere, nothing to do."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


def main(
    notebooks: Sequence[str],
    *,
    reference: str | None = None,
    timeout_s: float = DEFAULT_CELL_TIMEOUT_S,
    as_json: bool = False,
    keep_dir: str | None = None,
) -> int:
    """Grade ``notebooks``; print the table (or JSON); return the exit code (0 = all pass)."""
    if reference is not None and len(notebooks) != 1:
        print(f"error: --reference applies to one notebook, got {len(notebooks)}; grade them one by one",
              file=sys.stderr)
        return 2
    if keep_dir is not None:
        try:
            _check_keep_dir(Path(keep_dir))
        except GradingError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    _no_peeking()
    all_rows: list[CheckRow] = []
    failed_to_grade = False
    for i, nb in enumerate(notebooks):
        if not as_json:
            print(f"grading {nb} (each cell may take up to {timeout_s:g} s) ...", file=sys.stderr, flush=True)
        keep = None
        if keep_dir is not None:
            keep = Path(keep_dir) if len(notebooks) == 1 else Path(keep_dir) / f"{i + 1:02d}-{Path(nb).stem}"
        try:
            rows, warnings = grade_notebook(nb, reference=reference, timeout_s=timeout_s, keep_dir=keep)
        except GradingError as exc:
            print(f"error: {nb}: {exc}", file=sys.stderr)
            failed_to_grade = True
            continue
        notes = [w[len("note: "):] for w in warnings if w.startswith("note: ")]
        for w in warnings:
            if not w.startswith("note: "):
                print(f"warning: {nb}: {w}", file=sys.stderr)
        all_rows.extend(rows)
        if as_json:
            for n in notes:
                print(f"note: {nb}: {n}", file=sys.stderr)
        else:
            if len(notebooks) > 1:
                print(f"\n{nb}")
            print(format_table(rows))
            for n in notes:
                print(f"note: {n}")
    if as_json:
        print(json.dumps([r.as_dict() for r in all_rows], indent=1))
    elif len(notebooks) > 1:
        n_pass = sum(r.passed for r in all_rows)
        print(f"\ntotal: {n_pass}/{len(all_rows)} checks pass in {len(notebooks)} notebooks")
    ok = bool(all_rows) and all(r.passed for r in all_rows) and not failed_to_grade
    return 0 if ok else 1
