"""Running an assembled exercise in the learner's kernel: cells, task requests, restarts.

The grader runs the code cells of the assembled notebook in order in one
sandboxed kernel (:class:`~nodecourse.course.grading_kernel.Kernel`):

- setup and answer cells run as they are;
- a check cell converted to a task spec (``self_check("NN", "<id>", ...)``) is
  *not* run: the grader builds the task's inputs from its seed in its own
  process and sends the kernel one call, the learner's function on those inputs
  (:mod:`nodecourse.course.tasks.kernel_side`); it keeps the reply as text, to
  be judged later in the grader's process. A task whose
  answer cells failed or timed out is not asked at all: its outcome says which
  answer it needed and what happened to it;
- any other check cell runs in the kernel as before, with the kernel guard
  (:mod:`nodecourse.course.kernel_guard`) around it.

After a cell or a task times out or the kernel dies, a fresh kernel replays the
cells that had passed, in order; a cell that times out or dies on replay is
dropped from the replay (it counts as failed from then on, and tasks that need
it say so), and the replay starts again in another fresh kernel.
"""

from __future__ import annotations

import ast
import re
import time

from nodecourse.course import tasks
from nodecourse.course.exercise_builder import answer_id, check_id
from nodecourse.course.feedback import LIMITS_NOTE, shorten
from nodecourse.course.grading_kernel import MAX_MESSAGE_BYTES, CellResult, Kernel, KernelStartError
from nodecourse.course.sandbox import Isolation, Limits
from nodecourse.course.submission_limits import limit_of_exit
from nodecourse.course.tasks import kernel_side, plain
from nodecourse.course.tasks.spec import make_inputs
from nodecourse.course.textsafe import escape

_GUARD = "__import__('sys').modules['nodecourse.course.kernel_guard']"
_INSTALL = "__import__('nodecourse.course.kernel_guard', fromlist=['install']).install(get_ipython())"
# Lines that would change how nbval treats a cell (skip it, accept an error): matched per line
# as nbval splits them (str.splitlines, which also breaks at \u2028, \x0c, \x1c...).
NBVAL_MARKER = re.compile(r"^\s*#.*\b(NBVAL_\w+|PYTEST_VALIDATE_\w+)")
SKIP_MARKER = re.compile(r"^\s*#\s*NBVAL_SKIP\b")
RAISES_MARKER = re.compile(r"^\s*#\s*NBVAL_RAISES_EXCEPTION\b")
_NAME_ERROR = re.compile(r"^NameError: name '([A-Za-z_][A-Za-z0-9_]*)' is not defined")


class RunError(RuntimeError):
    """The grader could not run the notebook (the kernel would not start, the guard would not install)."""


def has_marker(source: str, marker: re.Pattern) -> bool:
    return any(marker.match(line) for line in source.splitlines())


def defined_names(source: str) -> set[str]:
    """Top-level names a cell defines (functions, classes, assignments, imports)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # the kernel will say what is wrong
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


class Runner:
    """Runs one assembled notebook; :meth:`run` returns outcomes by code-cell number, and notes."""

    def __init__(
        self,
        cells,
        specs: dict[int, tuple[str, str]],
        *,
        timeout_s: float,
        isolation: Isolation,
        seed: int,
        guard: bool,
        needs: dict[int, tuple[str, ...]],
        observed: frozenset[int] = frozenset(),
        notebook_timeout_s: float | None = None,
        limits: Limits | None = None,
    ):
        self.cells, self.specs, self.needs, self.observed = cells, specs, needs, observed
        self.timeout_s, self.isolation, self.seed, self.guard = timeout_s, isolation, seed, guard
        self.cell_timeout_s, self.limits = timeout_s, limits
        # The whole notebook's wall-clock limit: each cell then gets at most what is left of it.
        self.notebook_timeout_s = notebook_timeout_s
        self._deadline = None if notebook_timeout_s is None else time.monotonic() + notebook_timeout_s
        self.hung: list[tuple[int, frozenset[str]]] = []  # tasks that timed out, and the answers they called
        self.outcomes: dict[int, dict] = {}
        self.live: dict[int, str] = {}  # cell number -> "" when its effects are in the kernel, else why not
        self.notes: list[str] = []
        self.last_words: list[str] = []
        self.hits: list[str] = []  # limits on the whole submission it went over (submission_limits.EXIT_CODES keys)

    # --- kernels ---------------------------------------------------------------------------------

    def _start(self) -> Kernel:
        try:
            kernel = Kernel(self.isolation, limits=self.limits)
        except KernelStartError as exc:
            raise RunError(str(exc)) from exc
        if self.guard:
            res = kernel.evaluate(_INSTALL, max(self.timeout_s, 120))
            if not res.ok:
                kernel.close()
                raise RunError(
                    f"the grading kernel could not set up its guard: {res.status} {res.ename} "
                    f"{escape(res.evalue, 200)}".rstrip()
                )
        return kernel

    def _lose(self, kernel: Kernel, what: str) -> None:
        words = kernel.stderr_tail()
        if words and "died" in what:
            self.last_words.append(words)
        kernel.close()

    # --- one cell, one task ----------------------------------------------------------------------

    def _label(self, num: int) -> str:
        cell = self.cells[num]
        task, cid = answer_id(cell), check_id(cell)
        if task and task.startswith("added cell "):
            return task
        return f"answer {task!r}" if task else f"check {cid!r}" if cid else "setup"

    def _run_cell(self, kernel: Kernel, num: int) -> dict:
        cell = self.cells[num]
        task, cid = answer_id(cell), check_id(cell)
        refused = ""
        if cid is not None and self.guard:
            guard = kernel.evaluate(f"{_GUARD}.before_check({cid!r})", self._t())
            if not guard.ok:
                return self._outcome(guard, prefix="the grader's guard before this check: ")
            refused = _literal(guard.stdout)
        res = kernel.execute(cell.source, self._t())
        outcome = self._outcome(res)
        if (
            task is None
            and outcome["outcome"] == "failed"
            and res.status == "error"
            and has_marker(cell.source, RAISES_MARKER)
        ):
            outcome = {"outcome": "passed", "reason": "", "stdout": res.stdout}  # an error was expected
        if self.guard and task is None and cid is None and res.status in ("ok", "error"):
            after = kernel.evaluate(f"{_GUARD}.after_reference_cell()", self._t())
            if after.status in ("timeout", "dead"):
                return self._outcome(after)
        if cid is not None and self.guard and res.status in ("ok", "error"):
            after = kernel.evaluate(f"{_GUARD}.after_check({cid!r})", self._t())
            if after.status in ("timeout", "dead"):
                return self._outcome(after, prefix="the grader's guard after this check: ")
            tampered = _literal(after.stdout) if after.ok else f"{after.ename}: {after.evalue}"
            if tampered and outcome["outcome"] == "passed":
                outcome = {
                    "outcome": "failed",
                    "stdout": res.stdout,
                    "reason": f"answer code changed what the check relies on while it ran ({tampered})",
                }
        if cid is not None and outcome["outcome"] == "passed" and f"PASS {cid}" not in outcome["stdout"].splitlines():
            outcome = {"outcome": "failed", "reason": f"did not print 'PASS {cid}'", "stdout": res.stdout}
        if cid is not None and outcome["outcome"] == "failed" and not outcome.get("lost_kernel"):
            outcome["reason"] = self._explain_name_error(num, outcome["reason"])
        outcome["guard"] = refused
        return outcome

    def _explain_name_error(self, num: int, reason: str) -> str:
        """A NameError for a name an earlier answer defines, when that answer failed: say so."""
        match = _NAME_ERROR.match(reason)
        if not match:
            return reason
        for earlier in range(num - 1, -1, -1):
            task = answer_id(self.cells[earlier])
            if task and self.live.get(earlier) and match[1] in defined_names(self.cells[earlier].source):
                return f"not run: needs answer {task!r} (it defines {match[1]}), whose cell {self.live[earlier]}"
        return reason

    def _missing_needs(self, num: int) -> str:
        for need in self.needs.get(num, ()):
            cells = [n for n in range(num) if answer_id(self.cells[n]) == need]
            if not cells:
                return f"not run: needs answer {need!r}, which is not in the notebook"
            why = self.live.get(cells[-1], "was not run")
            if why:
                return f"not run: needs answer {need!r}, whose cell {why}"
        return ""

    def _t(self) -> float:
        """The limit of the next request to the kernel: the per-cell one, or what is left of the
        notebook's when that is less (replays, guards and measurements included)."""
        self._time_left()
        return self.timeout_s

    def _limit_text(self) -> str:
        """The limit just applied, in words (for a timed-out outcome)."""
        if self.timeout_s < self.cell_timeout_s:
            return f"{self.timeout_s:.3g} s (what was left of the notebook's {self.notebook_timeout_s:g} s time limit)"
        return f"{self.timeout_s:g} s"

    def _outcome(self, res: CellResult, prefix: str = "", what: str = "this cell") -> dict:
        """An outcome from a kernel's result; a kernel the limits' watcher ended says which limit."""
        outcome = _outcome_of(res, self._limit_text(), prefix=prefix, what=what)
        limit = limit_of_exit(res.exit_code) if res.status == "dead" else None
        if limit is not None:
            if limit not in self.hits:
                self.hits.append(limit)
            outcome["reason"] = (
                f"{prefix}the submission went over its limit on {(self.limits or Limits()).describe(limit)}, "
                f"seen while {what} ran: every process it ran was ended"
            )
            outcome["limit"] = limit
        return outcome

    def _time_left(self) -> bool:
        """Set this cell's limit to what the notebook's limit leaves (at most the per-cell one);
        False when nothing is left."""
        if self._deadline is None:
            return True
        left = self._deadline - time.monotonic()
        self.timeout_s = max(0.0, min(self.cell_timeout_s, left))
        return left > 0

    def _out_of_time(self) -> dict:
        return {
            "outcome": "failed",
            "stdout": "",
            "reason": f"not run: the notebook's time limit ({self.notebook_timeout_s:g} s) was reached",
        }

    def _hung_before(self, num: int) -> str:
        """A task timed out calling answers that this task calls too: it would hang the same way."""
        mine = frozenset(self.needs.get(num, ()))
        for earlier, theirs in self.hung:
            if theirs and theirs <= mine:
                return (
                    f"not run: check {self.specs[earlier][1]!r} timed out calling the same answers "
                    f"({', '.join(sorted(theirs))}); a hanging answer costs one timeout, not one per check"
                )
        return ""

    def _ask(self, kernel: Kernel, num: int) -> dict:
        missing = self._missing_needs(num) or self._hung_before(num)
        if missing:
            return {"outcome": "failed", "reason": missing, "stdout": ""}
        if num in self.observed:
            return self._ask_fresh(num)
        return self._request(kernel, num)

    def _ask_fresh(self, num: int) -> dict:
        """A task that watches the learner's process runs alone, in a fresh kernel where the cells
        that passed so far ran again and no other task ran; the main kernel is left as it is."""
        kernel = self._start()
        try:
            for earlier in range(num):
                if not self._replayable(earlier):
                    continue
                if not self._time_left():
                    return self._out_of_time()
                res = self._run_cell(kernel, earlier)
                if res["outcome"] != "passed":
                    return {
                        "outcome": "failed",
                        "stdout": "",
                        "reason": f"not run: preparing a fresh process for it, cell {earlier} "
                        f"({self._label(earlier)}) {_why(res)}",
                    }
            return self._request(kernel, num)
        finally:
            kernel.close()

    def _measure(self, kernel: Kernel, task, inputs) -> tuple[list | None, dict | None]:
        """An observed task's measurements, read by the grader from outside the kernel: for each key,
        the kernel process's peak resident memory above its level at the start. ``(None, None)``
        where the memory of the kernel cannot be read here; ``(None, outcome)`` when a run failed."""
        measured = []
        for key in task.measure_keys(inputs):
            settle = kernel.evaluate(kernel_side.request(task, inputs, kernel_side.settle), self._t())
            start = kernel.memory_mark()
            if start is None:
                return None, None
            res = kernel.evaluate(
                kernel_side.request(task, inputs, kernel_side.measuring(task.measure, key)), self._t()
            )
            peak = kernel.memory_peak()
            for r in (settle, res):
                if r.status in ("timeout", "dead"):
                    return None, self._outcome(r, what="the task")
            reply = plain.decode(_literal(res.stdout, "")) if res.ok else {"ok": False, "type": res.ename}
            if not isinstance(reply, dict) or reply.get("ok") is not True or peak is None:
                why = f"{reply.get('type', '?')}: {reply.get('message', '')}" if isinstance(reply, dict) else "?"
                return None, {
                    "outcome": "failed",
                    "stdout": "",
                    "reason": f"the grader's measurement {key} failed in the kernel ({why})",
                }
            measured.append({"key": key, "bytes": max(0, peak - start)})
        return measured, None

    def _request(self, kernel: Kernel, num: int) -> dict:
        task = tasks.get_task(*self.specs[num])
        inputs = make_inputs(task, self.seed)
        measured = None
        if task.measure is not None:
            try:
                measured, failed = self._measure(kernel, task, inputs)
            except plain.NotPlain as exc:
                failed = {"outcome": "failed", "stdout": "", "reason": f"the kernel's reply is not plain data: {exc}"}
            if failed is not None:
                return failed
            if measured is None:
                self.notes.append(
                    f"check {task.check!r}: this machine does not let the grader read the kernel's "
                    "memory from outside; it was measured inside the kernel (the weaker way)"
                )
        res = kernel.evaluate(kernel_side.request(task, inputs), self._t())
        if res.status in ("timeout", "dead"):
            outcome = self._outcome(res, what="the task")
            if res.status == "timeout":
                bound_mib = MAX_MESSAGE_BYTES // 2**20
                outcome["reason"] = (
                    f"the task timed out after {self._limit_text()} (the learner's code did not "
                    f"return, or returned a value over the grader's {bound_mib} MiB bound)"
                )
            return outcome
        if not res.ok:
            return {
                "outcome": "failed",
                "stdout": "",
                "reason": f"the kernel did not answer the task: {res.ename}: {res.evalue}",
            }
        text = _literal(res.stdout, None)
        if not isinstance(text, str):
            return {"outcome": "failed", "reason": "the kernel's reply to the task is not text", "stdout": ""}
        return {"outcome": "answered", "answer": text, "reason": "", "stdout": "", "measured": measured}

    # --- the notebook ----------------------------------------------------------------------------

    def run(self) -> tuple[dict[int, dict], list[str]]:
        kernel = self._start()
        try:
            for num, cell in enumerate(self.cells):
                task = answer_id(cell)
                if not self._time_left():
                    outcome = self._out_of_time()
                elif num in self.specs:
                    outcome = self._ask(kernel, num)
                    if outcome["reason"].startswith("the task timed out"):
                        self.hung.append((num, frozenset(self.needs.get(num, ()))))
                elif task is None and has_marker(cell.source, SKIP_MARKER):
                    outcome = {"outcome": "skipped", "reason": "NBVAL_SKIP", "stdout": ""}
                else:
                    outcome = self._run_cell(kernel, num)
                self.outcomes[num] = outcome
                self.live[num] = "" if outcome["outcome"] in ("passed", "skipped") else _why(outcome)
                if outcome.get("lost_kernel") and num not in self.observed:
                    self._lose(kernel, outcome["reason"])
                    if self._time_left():  # else every later cell is "not run" and needs no kernel
                        kernel = self._replay(num)
        finally:
            kernel.close()
        if self.hits:
            limits = self.limits or Limits()
            self.notes.append(LIMITS_NOTE + "; ".join(limits.describe(hit) for hit in self.hits))
        return self.outcomes, self.notes

    def _replayable(self, num: int) -> bool:
        """A cell (not a task) that ran and passed, and whose effects a fresh kernel still needs."""
        return num not in self.specs and self.live.get(num) == "" and self.outcomes[num]["outcome"] == "passed"

    def _replay(self, lost_at: int) -> Kernel:
        """A fresh kernel with every cell before ``lost_at`` that is still live run again."""
        failed: list[str] = []
        while True:
            kernel = self._start()
            replayed = 0
            for num in range(lost_at):
                if not self._replayable(num):
                    continue
                if not self._time_left():
                    self.live[num] = "was not replayed: the notebook's time limit was reached"
                    failed.append(f"cell {num} (the notebook's time limit was reached)")
                    continue
                res = self._run_cell(kernel, num)
                replayed += 1
                if res["outcome"] == "passed":
                    continue
                self.live[num] = f"passed, then {_why(res)} when replayed after a restart"
                failed.append(f"cell {num} ({escape(res['reason'], 160)})")
                if res.get("lost_kernel"):
                    self._lose(kernel, res["reason"])
                    break
            else:
                note = (
                    f"cell {lost_at} ({self._label(lost_at)}) {escape(self.outcomes[lost_at]['reason'], 160)}: "
                    f"restarted the kernel and replayed the {replayed} cell(s) that had passed, so the tasks "
                    "after it are still graded"
                )
                if failed:
                    note += f"; on replay these failed: {', '.join(failed)}"
                self.notes.append(note)
                return kernel


def _why(outcome: dict) -> str:
    reason = outcome.get("reason", "") or "failed"
    if reason.startswith("timed out") or reason.startswith("the kernel died"):
        return f"{reason} (its code did not finish)"
    return f"failed: {reason}"


def _literal(text: str, default=""):
    """A Python literal the kernel sent as text/plain (a repr), read without evaluating code."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return default if default is not None else None


def _outcome_of(res: CellResult, timeout_s: float | str, prefix: str = "", what: str = "this cell") -> dict:
    """An outcome from a kernel's result; ``timeout_s``, the limit it ran under (seconds, or in words)."""
    limit = timeout_s if isinstance(timeout_s, str) else f"{timeout_s:g} s"
    if res.status == "ok":
        return {"outcome": "passed", "reason": "", "stdout": res.stdout}
    if res.status == "timeout":
        return {
            "outcome": "failed",
            "reason": prefix + f"timed out after {limit}",
            "stdout": res.stdout,
            "lost_kernel": True,
        }
    if res.status == "dead":
        code = f" (exit code {res.exit_code})" if res.exit_code is not None else ""
        return {
            "outcome": "failed",
            "reason": prefix + f"the kernel died{code} while {what} ran",
            "stdout": res.stdout,
            "lost_kernel": True,
        }
    return {"outcome": "failed", "reason": prefix + error_reason(res.ename, res.evalue), "stdout": res.stdout}


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
REASON_LIMIT = 2000
"""Characters a reason may keep: far above any the course writes (a judge's message with its inputs
and likely cause, a learner's error's first line, at most 500), so the table shows reasons whole and
wraps them; only a runaway message (a learner's check text of megabytes) is cut, at a word, with "…"."""


def error_reason(ename: str, evalue: str) -> str:
    """One line for an error the kernel reported (colour codes removed; the rest escaped when shown)."""
    if ename == "NotImplementedError":
        return "NotImplementedError: task not done"
    text = (
        _ANSI.sub("", evalue).strip()
        if ename == "CheckFailed"
        else f"{ename}: {_ANSI.sub('', evalue).strip()}".rstrip(": ")
    )
    text = text.splitlines()[0] if text else (ename or "failed")
    return shorten(text, REASON_LIMIT)  # a runaway message is cut between words, never inside one
