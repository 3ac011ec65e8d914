"""Build exercise notebooks from their solutions (``nodecourse build``).

``solutions/*.ipynb`` is the single source. Each task in a solution notebook is

- an *answer cell* (metadata ``{"nodecourse": {"answer": "<task-id>"}}``) whose
  solution sits between a ``### BEGIN SOLUTION`` line and a
  ``### END SOLUTION`` line, and
- one or more *check cells* (metadata ``{"nodecourse": {"check": "<check-id>"}}``)
  whose first line is ``# NBVAL_CHECK_OUTPUT`` and which call
  ``check("<check-id>", passed, detail)`` once (:func:`nodecourse.course.checks.check`).

The builder replaces every solution region by one
``raise NotImplementedError(...)`` line at the marker's indentation, clears
every output (a learner never sees ``PASS`` under a task they have not done),
and writes the result byte-for-byte deterministically, so that a fresh build
of an unchanged solution equals the committed exercise (``nodecourse build
--check``). The grader builds the same notebook as its reference and
decides a check from the line the check prints on success (``PASS
<check-id>``), not from an output saved in the notebook.

A build never overwrites a learner's work: an exercise in which any cell was
changed (an answer, a setup cell, a markdown note) or added is left as it is,
and the report names those cells (:func:`learner_work`; each build records a
digest of every cell it writes, so an older, untouched build is told apart
from a learner's edits). Refusing,
rather than backing the file up and replacing it, keeps the learner's work in
the file they have open: JupyterLab holds an open notebook in memory, and
replacing the file under it invites the next autosave to undo one or the other.
"""

from __future__ import annotations

import copy
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import nbformat

BEGIN_MARKER = "### BEGIN SOLUTION"
END_MARKER = "### END SOLUTION"
CHECK_OUTPUT_MARKER = "# NBVAL_CHECK_OUTPUT"
METADATA_KEY = "nodecourse"
BUILT_KEY = "built"  # notebook metadata: the digest of each cell as built, by cell id

# Cell metadata that records how or when a cell last ran: volatile, so dropped.
_VOLATILE_CELL_METADATA = ("execution", "ExecuteTime", "scrolled", "collapsed")
# Notebook metadata that records saved widget state: volatile, so dropped.
_VOLATILE_NOTEBOOK_METADATA = ("widgets",)

_MARKER_LINE = re.compile(r"^(?P<indent>[ \t]*)(?P<marker>### (?:BEGIN|END) SOLUTION)\b.*$")


class ExerciseFormatError(ValueError):
    """A solution notebook does not follow the exercise conventions (see CONTRIBUTING.md)."""


# ---------------------------------------------------------------------------
# Cell roles, shared with the grader
# ---------------------------------------------------------------------------


def answer_id(cell) -> str | None:
    """The task id of an answer cell, or None for any other cell."""
    return _role_id(cell, "answer")


def check_id(cell) -> str | None:
    """The check id of a check cell, or None for any other cell."""
    return _role_id(cell, "check")


def _role_id(cell, role: str) -> str | None:
    meta = cell.get("metadata", {}).get(METADATA_KEY)
    if not isinstance(meta, dict):
        return None
    value = meta.get(role)
    return value if isinstance(value, str) and value else None


def stub_line(indent: str, task: str) -> str:
    """The line that replaces a solution region in the exercise."""
    return f'{indent}raise NotImplementedError("task {task!r}: replace this line with your code")'


# ---------------------------------------------------------------------------
# Building one notebook
# ---------------------------------------------------------------------------


def strip_solutions(source: str, *, task: str, where: str) -> str:
    """Replace each BEGIN/END SOLUTION region of ``source`` by a stub line.

    The stub takes the indentation of the ``### BEGIN SOLUTION`` line, so a
    region inside a function body stays inside it. Raises
    :class:`ExerciseFormatError` for unbalanced or nested markers.
    """
    out: list[str] = []
    open_line: int | None = None
    n_regions = 0
    for lineno, line in enumerate(source.split("\n"), start=1):
        match = _MARKER_LINE.match(line)
        if match is None:
            if open_line is None:
                out.append(line)
            continue
        if match["marker"] == BEGIN_MARKER:
            if open_line is not None:
                raise ExerciseFormatError(
                    f"{where}: '{BEGIN_MARKER}' on line {lineno} but the region opened on line "
                    f"{open_line} is not closed; add '{END_MARKER}' before opening another region"
                )
            open_line = lineno
            n_regions += 1
            out.append(stub_line(match["indent"], task))
        else:
            if open_line is None:
                raise ExerciseFormatError(
                    f"{where}: '{END_MARKER}' on line {lineno} without a matching "
                    f"'{BEGIN_MARKER}' above it; add the BEGIN line or remove this one"
                )
            open_line = None
    if open_line is not None:
        raise ExerciseFormatError(
            f"{where}: '{BEGIN_MARKER}' on line {open_line} is never closed; "
            f"add a '{END_MARKER}' line after the solution"
        )
    if n_regions == 0:
        raise ExerciseFormatError(
            f"{where}: answer cell {task!r} has no '{BEGIN_MARKER}' ... '{END_MARKER}' region, "
            "so the exercise would ship the solution; mark the part the learner writes"
        )
    return "\n".join(out)


def _has_marker(source: str) -> bool:
    return any(_MARKER_LINE.match(line) for line in source.split("\n"))


def expected_check_output(cid: str) -> list:
    """The output of check cell ``cid`` on success: the line ``check(cid, ...)`` prints."""
    return [nbformat.v4.new_output("stream", name="stdout", text=f"PASS {cid}\n")]


def _validate_check_cell(cell, *, where: str, cid: str) -> None:
    """Check a check cell against the conventions the grader relies on.

    The grader passes a check when its cell prints ``PASS <id>``
    (:func:`expected_check_output`), so a check cell makes exactly one
    ``check(...)`` call, named after its id. Building does not require running
    the solution first; when the solution was saved with outputs, they must
    agree (no error, nothing else on stdout).
    """
    calls_check = re.search(rf"""\bcheck\(\s*(["']){re.escape(cid)}\1""", cell.source)
    calls_task = re.search(rf"""\bself_check\(\s*(["'])\d\d\1\s*,\s*(["']){re.escape(cid)}\2""", cell.source)
    if not (calls_check or calls_task):
        raise ExerciseFormatError(
            f'{where}: check cell {cid!r} must call check({cid!r}, ...) or self_check("NN", {cid!r}, globals()): '
            "the check's name is the cell's check id, so that its expected output is 'PASS <id>'"
        )
    expected = expected_check_output(cid)
    saved = cell.get("outputs", [])
    if saved:
        for out in saved:
            if out.get("output_type") == "error":
                raise ExerciseFormatError(
                    f"{where}: check cell {cid!r} failed when the solution was run "
                    f"({out.get('ename')}: {out.get('evalue')}); fix the solution or the check"
                )
        stdout = "".join(
            o.get("text", "") for o in saved if o.get("output_type") == "stream" and o.get("name") == "stdout"
        )
        if stdout != expected[0]["text"]:
            raise ExerciseFormatError(
                f"{where}: check cell {cid!r} printed {stdout!r} when the solution was run, but the "
                f"grader expects exactly 'PASS {cid}' on stdout; a check cell prints nothing else"
            )


def build_exercise(solution, *, name: str = "<notebook>"):
    """Return the exercise notebook built from a solution notebook (not modified).

    ``solution``: an ``nbformat`` v4 notebook. ``name`` is used in error messages.
    The exercise has no outputs at all: a learner never sees ``PASS`` under a
    task they have not done.
    """
    nb = copy.deepcopy(solution)
    for key in _VOLATILE_NOTEBOOK_METADATA:
        nb.metadata.pop(key, None)
    seen_answers: dict[str, int] = {}
    seen_checks: dict[str, int] = {}
    n_code = 0
    for index, cell in enumerate(nb.cells):
        where = f"{name} cell {index}"
        for key in _VOLATILE_CELL_METADATA:
            cell.metadata.pop(key, None)
        task, cid = answer_id(cell), check_id(cell)
        if task and cid:
            raise ExerciseFormatError(
                f"{where}: metadata marks the cell as both answer {task!r} and check {cid!r}; "
                "split it into an answer cell and a check cell"
            )
        if cell.cell_type != "code":
            if task or cid:
                raise ExerciseFormatError(
                    f"{where}: a {cell.cell_type} cell carries answer/check metadata; "
                    "only code cells can be answer or check cells"
                )
            if _has_marker(cell.source):
                raise ExerciseFormatError(
                    f"{where}: a {cell.cell_type} cell contains a solution marker; "
                    "markers belong in answer (code) cells only"
                )
            continue
        n_code += 1
        if task:
            if task in seen_answers:
                raise ExerciseFormatError(
                    f"{where}: answer id {task!r} is already used by cell {seen_answers[task]}; "
                    "each answer cell needs its own id"
                )
            seen_answers[task] = index
            cell.source = strip_solutions(cell.source, task=task, where=where)
            cell.outputs, cell.execution_count = [], None
        elif cid:
            if cid in seen_checks:
                raise ExerciseFormatError(
                    f"{where}: check id {cid!r} is already used by cell {seen_checks[cid]}; "
                    "each check cell needs its own id"
                )
            if not seen_answers:
                raise ExerciseFormatError(
                    f"{where}: check cell {cid!r} comes before any answer cell, so it would "
                    "pass without any work; move it after the answer cell it checks"
                )
            if cell.source.split("\n", 1)[0].strip() != CHECK_OUTPUT_MARKER:
                raise ExerciseFormatError(
                    f"{where}: check cell {cid!r} must start with the line "
                    f"'{CHECK_OUTPUT_MARKER}' so that its output is compared"
                )
            seen_checks[cid] = index
            _validate_check_cell(cell, where=where, cid=cid)
            cell.outputs, cell.execution_count = [], None
        else:
            if _has_marker(cell.source):
                raise ExerciseFormatError(
                    f"{where}: the cell contains '{BEGIN_MARKER}'/'{END_MARKER}' but no answer id; "
                    f'add cell metadata {{"{METADATA_KEY}": {{"answer": "<task-id>"}}}}'
                )
            cell.outputs, cell.execution_count = [], None
    if not seen_answers:
        raise ExerciseFormatError(
            f'{name}: no answer cells (metadata {{"{METADATA_KEY}": {{"answer": ...}}}}); '
            "an exercise needs at least one task"
        )
    if not seen_checks:
        raise ExerciseFormatError(
            f'{name}: no check cells (metadata {{"{METADATA_KEY}": {{"check": ...}}}}); every task needs a check'
        )
    _record_build(nb)
    return nb


def notebook_text(nb) -> str:
    """Serialise a notebook deterministically (sorted keys, one-space indent, final newline)."""
    text = nbformat.writes(nb, version=4)
    return text if text.endswith("\n") else text + "\n"


def build_text(solution_path: Path) -> str:
    """Read a solution notebook and return the exercise's file contents."""
    solution_path = Path(solution_path)
    solution = nbformat.read(solution_path, as_version=4)
    return notebook_text(build_exercise(solution, name=str(solution_path)))


# ---------------------------------------------------------------------------
# A learner's work in an exercise
# ---------------------------------------------------------------------------


def cell_digest(cell) -> str:
    """A short digest of a cell's kind and source: what a build records of each cell it writes."""
    text = f"{cell.cell_type}\0{cell.source}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _record_build(nb) -> None:
    """Record in the notebook's metadata the digest of every cell as built (by cell id), so a later
    build can tell a cell the learner changed from a cell of an older build."""
    nb.metadata.setdefault(METADATA_KEY, {})[BUILT_KEY] = {
        c.get("id", str(i)): cell_digest(c) for i, c in enumerate(nb.cells)
    }


def _cell_name(index: int, cell) -> str:
    task, cid = answer_id(cell), check_id(cell)
    if task:
        return f"answer {task!r}"
    if cid:
        return f"check cell {cid!r} edited"
    kind = "markdown" if cell.cell_type == "markdown" else "setup" if cell.cell_type == "code" else cell.cell_type
    return f"{kind} cell {index} edited"


def learner_work(current, fresh) -> list[str]:
    """What ``current`` (an exercise on disk) holds that a build would lose, as names.

    ``fresh``: the exercise a build would write. Any change to a cell's source
    is the learner's: an answer (``answer '<task>'``), a setup or check cell or a
    markdown note (``markdown cell N edited``...), and every non-empty cell the
    build did not make (``added cell N``). A cell is unchanged when its source is
    the one the build that wrote the file recorded (:func:`_record_build`), so an
    older build whose solution has changed since reads as stale, not as work, or
    the one the fresh build has (overwriting it loses nothing). A
    file without that record (an older format) is compared with ``fresh``: any
    difference counts as work. A build writes no outputs, so executed outputs are the
    learner's too (``the outputs of N executed cell(s)``): a notebook that was run is never
    overwritten, edited or not. Metadata never counts. Empty: nothing would be lost.
    """
    built = (
        current.metadata.get(METADATA_KEY, {}).get(BUILT_KEY)
        if isinstance(current.metadata.get(METADATA_KEY), dict)
        else None
    )
    fresh_digests = {c.get("id", str(i)): cell_digest(c) for i, c in enumerate(fresh.cells)}
    if not isinstance(built, dict):
        built = fresh_digests
    found = []
    for index, cell in enumerate(current.cells):
        key = cell.get("id", str(index))
        if key in built or key in fresh_digests:
            digest = cell_digest(cell)
            if digest != built.get(key) and digest != fresh_digests.get(key):  # a build would change it
                found.append(_cell_name(index, cell))
        elif cell.source.strip():
            found.append(f"answer {answer_id(cell)!r}" if answer_id(cell) else f"added cell {index}")
    ran = [i for i, c in enumerate(current.cells) if c.cell_type == "code" and c.get("outputs")]
    if ran:
        found.append(
            f"the outputs of {len(ran)} executed cell(s): {', '.join(str(i) for i in ran[:10])}"
            + (", ..." if len(ran) > 10 else "")
        )
    return found


def _learner_work_in(dest: Path, fresh_text: str) -> list[str] | None:
    """:func:`learner_work` of the file ``dest``; None when it cannot be read as a
    notebook (then it is not overwritten either: it may be the learner's)."""
    try:
        current = nbformat.reads(dest.read_text(encoding="utf-8"), as_version=4)
    except Exception:  # nbformat raises several types for a broken file
        return None
    return learner_work(current, nbformat.reads(fresh_text, as_version=4))


# ---------------------------------------------------------------------------
# Building a directory
# ---------------------------------------------------------------------------

_LEARNER_COPY = re.compile(r"^(?P<stem>.+)-Copy\d+$")  # JupyterLab's "Duplicate": X-Copy1.ipynb


@dataclass
class BuildReport:
    """What a build did (or, with ``check=True``, would do).

    ``kept``: exercises not written because they hold a learner's work, each
    with the names of the cells that differ (:func:`learner_work`).
    """

    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    stale: list[Path] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)
    orphans: list[Path] = field(default_factory=list)
    kept: dict[Path, list[str]] = field(default_factory=dict)
    checked: bool = False

    @property
    def up_to_date(self) -> bool:
        return not (self.stale or self.missing or self.orphans or self.kept)

    def lines(self) -> list[str]:
        out = [f"wrote      {p}" for p in self.written]
        out += [f"up to date {p}" for p in self.unchanged]
        out += [
            f"STALE      {p} (an older build, never run, no answers or other changes in it; run `nodecourse build`)"
            for p in self.stale
        ]
        out += [f"MISSING    {p} (no exercise built yet; run `nodecourse build`)" for p in self.missing]
        for p, work in self.kept.items():
            what = ", ".join(work) if work else "it cannot be read as a notebook"
            copy_name = p.with_name(f"{p.stem}-Copy1{p.suffix}")
            verb = "build will not overwrite it" if self.checked else "NOT overwritten"
            out.append(
                f"ANSWERS    {p} has a learner's work ({what}); {verb}. To get a fresh exercise, "
                f"move it aside first, e.g. `mv {p} {copy_name}` (the grader grades {copy_name.name} "
                f"against {p.name}), then run `nodecourse build` again. (Authors: an older build whose "
                f"stubs changed in the solution reads as answers too; delete it and build again.)"
            )
        out += [f"ORPHAN     {p} (no solution of that name; delete it or add the solution)" for p in self.orphans]
        return out


def build(
    solutions_dir: Path | str,
    exercises_dir: Path | str,
    *,
    check: bool = False,
    names: Iterable[str] | None = None,
) -> BuildReport:
    """Build ``exercises_dir/X.ipynb`` from every ``solutions_dir/X.ipynb``.

    An existing exercise that holds a learner's work (answer cells that differ
    from the stubs, cells of their own: :func:`learner_work`) is never
    overwritten; it is reported in ``kept``. With ``check=True`` nothing is
    written; the report lists stale (an older build, no answers), kept (a
    learner's answers), missing and orphaned exercises. ``names`` restricts
    the build to those file names.
    """
    solutions_dir, exercises_dir = Path(solutions_dir), Path(exercises_dir)
    if not solutions_dir.is_dir():
        raise FileNotFoundError(
            f"solutions_dir={str(solutions_dir)!r} is not a directory; run from the course root or pass --solutions"
        )
    report = BuildReport(checked=check)
    sources = sorted(solutions_dir.glob("*.ipynb"))
    if names is not None:
        wanted = set(names)
        unknown = wanted - {p.name for p in sources}
        if unknown:
            raise FileNotFoundError(
                f"no solution notebook named {sorted(unknown)} in {solutions_dir}; "
                f"available: {[p.name for p in sources]}"
            )
        sources = [p for p in sources if p.name in wanted]
    for src in sources:
        text = build_text(src)
        dest = exercises_dir / src.name
        current = dest.read_text(encoding="utf-8") if dest.is_file() else None
        if current == text:
            report.unchanged.append(dest)
            continue
        if current is not None:
            work = _learner_work_in(dest, text)
            if work is None or work:
                report.kept[dest] = work or []
                continue
        if check:
            (report.stale if current is not None else report.missing).append(dest)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text, encoding="utf-8", newline="\n")
            report.written.append(dest)
    if names is None and exercises_dir.is_dir():
        source_stems = {p.stem for p in sources}

        def is_orphan(path: Path) -> bool:
            copy_of = _LEARNER_COPY.match(path.stem)
            return path.stem not in source_stems and not (copy_of and copy_of["stem"] in source_stems)

        report.orphans = sorted(p for p in exercises_dir.glob("*.ipynb") if is_orphan(p))
    return report
