"""The grader's sandbox: every process that runs a learner's code starts under bubblewrap.

Inside the sandbox (:func:`sandbox_argv`):

- a private, empty temporary home (``HOME``), IPython folder (``IPYTHONDIR``),
  working folder and ``/tmp``, all in memory and gone when the process ends;
- the system (``/usr``, a few files of ``/etc``), the Python installation, the
  course's environment and the ``nodecourse`` package mounted read-only; the
  rest of the course folder (``solutions/``, ``exercises/``, ``.git``, other
  learners' submissions) is not there at all;
- no network (``--unshare-net``), its own PID namespace (``--unshare-pid``: the
  grader's processes and their ``/proc`` entries do not exist in it), a new
  session (no controlling terminal to write into), no capabilities, its own user
  namespace with the learner's code running as the unprivileged :data:`KERNEL_UID` (not
  root, even when the grader runs as root), and every process in it killed when the
  grader goes (``--die-with-parent``);
- a cleared environment: only the variables the grader sets;
- for the learner's kernel (``hide_grader``), a ``nodecourse/course/`` holding only
  :data:`KERNEL_VISIBLE_COURSE`: no task specs, references, judges or grader modules;
- resource limits (:class:`Limits`): per process, memory (RLIMIT_DATA), the size of the
  in-memory ``/tmp``, ``/dev/shm`` and home, and of any file written (RLIMIT_FSIZE); for the
  submission as a whole, the memory of all its processes, the bytes written anywhere it can
  write (the connection folder included), the number of processes and the CPU time, kept by a
  watcher outside the sandbox (:mod:`nodecourse.course.submission_limits`), which ends every
  process of the submission when one is exceeded and says which.

Where bubblewrap is missing or cannot create namespaces (some Binder hosts,
containers without user namespaces), :func:`probe` says why, grading still
runs without it, and every report says the grade is for self-study only.
``NODECOURSE_BWRAP`` names another bubblewrap program (tests use it to see the
fallback).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

BWRAP_ENV = "NODECOURSE_BWRAP"
HOME = "/home/learner"
WORKDIR = HOME + "/work"
IPYTHONDIR = HOME + "/.ipython"
# What of /etc a Python process needs (the dynamic loader's cache, user names, fonts).
_ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "passwd",
    "group",
    "nsswitch.conf",
    "alternatives",
    "fonts",
    "mime.types",
)
_TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# What of nodecourse/course/ a learner's kernel sees (a setup cell imports ``checks``; a check cell not
# converted to a task spec runs under ``kernel_guard``). The task specs, references, judges and the
# grader's own modules are not there: nothing in the kernel can compute or carry a verdict.
KERNEL_VISIBLE_COURSE = ("__init__.py", "checks.py", "kernel_guard.py")
DEFAULT_MEMORY_MB = 4096  # per sandboxed process (RLIMIT_DATA: heap and anonymous mappings)
DEFAULT_TMP_MB = 512  # each of the sandbox's in-memory folders (/tmp, the home)
DEFAULT_PROCESSES = 64  # live processes of one submission at once (bubblewrap's own two included)
DEFAULT_CPU_S = 3600  # CPU seconds of one sandbox, all its processes together (twice the notebook's default time)
KERNEL_UID = 1000  # the user and group id of the learner's code inside the sandbox (any id but 0)
IN_FORCE = (
    "private temporary home, IPython folder and working folder; the course's code and Python "
    "environment read-only; the task specs, references and grader modules not visible to the "
    "learner's kernel; solutions/ and the rest of the course folder not visible; no network; "
    "its own PID namespace; an unprivileged user id; a memory limit and size-limited /tmp and home; limits on "
    "the submission as a whole (memory of all its processes, bytes written, processes, CPU time); nothing it "
    "writes is kept"
)


@dataclass(frozen=True)
class Limits:
    """Resource limits of a sandboxed submission (defaults: :data:`DEFAULT_MEMORY_MB`, :data:`DEFAULT_TMP_MB`,
    :data:`DEFAULT_PROCESSES`, :data:`DEFAULT_CPU_S`).

    Per process: ``memory_mb`` is applied as RLIMIT_DATA (heap and anonymous mappings: an allocation
    beyond it fails with a MemoryError in the kernel); ``tmp_mb`` sizes each in-memory folder (/tmp,
    /dev/shm, the home) and caps every file the process writes (RLIMIT_FSIZE), the kernel's
    connection folder included.

    For all the processes of the submission together (:mod:`nodecourse.course.submission_limits`
    ends them all when one is exceeded, and the grade names it): ``total_memory_mb`` (proportional
    set sizes summed; None: ``memory_mb``), ``written_mb`` (bytes in its in-memory folders and the
    connection folder; None: twice ``tmp_mb``, so that filling one folder is the ordinary "no space
    left" error the learner sees, and filling several ends the run), ``processes`` (live at once)
    and ``cpu_s`` (user and system seconds)."""

    memory_mb: int = DEFAULT_MEMORY_MB
    tmp_mb: int = DEFAULT_TMP_MB
    total_memory_mb: int | None = None
    written_mb: int | None = None
    processes: int = DEFAULT_PROCESSES
    cpu_s: float = DEFAULT_CPU_S

    def __post_init__(self):
        for name in ("memory_mb", "tmp_mb", "total_memory_mb", "written_mb"):
            value = getattr(self, name)
            if value is None and name in ("total_memory_mb", "written_mb"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 16:
                raise ValueError(f"{name}={value!r}: give a whole number of megabytes, at least 16")
        if isinstance(self.processes, bool) or not isinstance(self.processes, int) or self.processes < 4:
            raise ValueError(
                f"processes={self.processes!r}: give a whole number of processes, at least 4 "
                "(the sandbox itself runs two, the kernel one)"
            )
        if isinstance(self.cpu_s, bool) or not isinstance(self.cpu_s, (int, float)) or not self.cpu_s > 0:
            raise ValueError(f"cpu_s={self.cpu_s!r}: give a positive number of CPU seconds")

    @property
    def total_written_mb(self) -> int:
        """The limit on bytes written, all folders together (megabytes)."""
        return self.written_mb or 2 * self.tmp_mb

    def watcher(self, inside: Sequence[str] = (), host: Sequence[Path] = ()) -> list[str]:
        """The prefix that runs a command under the watcher of the submission's whole limits:
        ``inside``, the sandbox's writable in-memory folders; ``host``, host folders it can write."""
        from nodecourse.course.submission_limits import SHARED_MB, watcher_argv

        return watcher_argv(
            memory_mb=self.total_memory_mb or self.memory_mb,
            written_mb=self.total_written_mb,
            processes=self.processes,
            cpu_s=self.cpu_s,
            shared_mb=SHARED_MB if host else None,
            inside=tuple(inside),
            host=tuple(str(h) for h in host),
        )

    def describe(self, limit: str) -> str:
        """A limit of the whole submission by name (a key of ``submission_limits.EXIT_CODES``), with its value."""
        from nodecourse.course.submission_limits import SHARED_MB, WHAT

        value = {
            "memory": f"{self.total_memory_mb or self.memory_mb} MB",
            "written": f"{self.total_written_mb} MB",
            "processes": f"{self.processes} at once",
            "cpu": f"{self.cpu_s:g} s",
            "shared": f"{SHARED_MB} MB: the connection folder holds sockets, not files",
        }[limit]
        return f"{WHAT[limit]} ({value})"

    def prlimit(self) -> list[str]:
        """The ``prlimit`` prefix that applies them to a command (util-linux; none where it is missing,
        and :meth:`Isolation.describe` does not claim them then)."""
        if shutil.which("prlimit") is None:
            return []
        return ["prlimit", f"--data={self.memory_mb * 2**20}", f"--fsize={self.tmp_mb * 2**20}", "--"]


@dataclass(frozen=True)
class Isolation:
    """The isolation a grading run can give the learner's code."""

    sandboxed: bool
    program: str  # the bubblewrap program, or "" when there is none
    version: str  # e.g. "bubblewrap 0.8.0"; "" when there is none
    reason: str  # why there is no sandbox ("" when there is one)
    unprivileged: bool = True  # the learner's code runs as KERNEL_UID in its own user namespace

    @property
    def label(self) -> str:
        """Short, for a table column: ``bubblewrap`` or ``none (self-study only)``."""
        return "bubblewrap" if self.sandboxed else "none (self-study only)"

    def describe(self) -> str:
        """One sentence for a report."""
        if self.sandboxed:
            return f"isolation: {self.version or 'bubblewrap'} ({self._in_force()})"
        return (
            f"isolation: NONE ({self.reason}). The learner's code ran with this user's rights and could "
            "reach the grader, so this grade is for self-study only, not for marks"
        )

    def summary(self) -> str:
        """One line for ``nodecourse check``: what a grading run here would have."""
        if self.sandboxed:
            return f"{self.version or 'bubblewrap'} ({self._in_force()})"
        return f"NONE ({self.reason}); grades made here are for self-study only, not for marks"

    def _in_force(self) -> str:
        if self.unprivileged:
            return IN_FORCE
        return IN_FORCE.replace("an unprivileged user id", "the host user's id (no user namespace here)")

    def as_dict(self) -> dict:
        return {"sandboxed": self.sandboxed, "label": self.label, "detail": self.describe()}


def _package_dir() -> Path:
    import nodecourse

    return Path(nodecourse.__file__).resolve().parent


def _python_dirs() -> list[Path]:
    """The Python installation and the environment: read-only inside the sandbox."""
    dirs = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(sys.executable).resolve().parent}
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            dirs.add(Path(paths[key]).resolve())
    # Keep the outermost of nested folders (binding a folder binds what is under it).
    ordered = sorted(dirs, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for d in ordered:
        if d.is_dir() and not any(d == k or k in d.parents for k in kept):
            kept.append(d)
    return kept


def sandbox_argv(
    command: Sequence[str],
    env: Mapping[str, str],
    *,
    shared_dirs: Sequence[Path] = (),
    program: str = "bwrap",
    hide_grader: bool = False,
    limits: Limits | None = None,
    unprivileged: bool = True,
) -> list[str]:
    """``command`` wrapped in bubblewrap as the module docstring describes.

    ``env``: the whole environment inside (``HOME``, ``IPYTHONDIR``, ``TMPDIR``
    and ``PWD`` are set here). ``shared_dirs``: host folders bound read-write at
    the same path (the kernel's connection folder; nothing else). ``hide_grader``: the
    learner's kernel sees only :data:`KERNEL_VISIBLE_COURSE` of ``nodecourse/course/``.
    ``limits``: memory and in-memory folder sizes (:class:`Limits`; default: the defaults).
    ``unprivileged``: run ``command`` as :data:`KERNEL_UID` in a user namespace of its own.
    """
    limits = limits or Limits()
    size = ["--size", str(limits.tmp_mb * 2**20)]
    args = [
        program,
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--cap-drop",
        "ALL",
    ]
    if unprivileged:
        args += ["--unshare-user", "--uid", str(KERNEL_UID), "--gid", str(KERNEL_UID)]
    for name in _TOP_LEVEL:
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    args += ["--ro-bind", "/usr", "/usr"]
    for name in _ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    args += ["--dev", "/dev", *size, "--tmpfs", "/dev/shm", "--proc", "/proc", *size, "--tmpfs", "/tmp"]
    for d in _python_dirs():
        args += ["--ro-bind", str(d), str(d)]
    package = _package_dir()
    args += ["--ro-bind", str(package), str(package)]
    if hide_grader:
        course = package / "course"
        args += ["--tmpfs", str(course)]
        for name in KERNEL_VISIBLE_COURSE:
            args += ["--ro-bind", str(course / name), str(course / name)]
        args += ["--remount-ro", str(course)]
    for d in shared_dirs:
        args += ["--bind", str(d), str(d)]
    args += [*size, "--tmpfs", HOME, "--dir", WORKDIR, "--dir", IPYTHONDIR, "--chdir", WORKDIR, "--clearenv"]
    inside = dict(env)
    inside.update({"HOME": HOME, "IPYTHONDIR": IPYTHONDIR, "TMPDIR": "/tmp", "PWD": WORKDIR})
    for key, value in sorted(inside.items()):
        args += ["--setenv", key, value]
    watcher = limits.watcher(inside=("/tmp", "/dev/shm", HOME), host=shared_dirs)
    return [*watcher, *args, "--", *limits.prlimit(), *command]


def base_environment() -> dict[str, str]:
    """What every sandboxed process gets, before the caller adds its own variables."""
    path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"])
    return {
        "PATH": path,
        "LANG": "C.UTF-8",
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
        "PYTHONIOENCODING": "utf-8",
    }


def _bwrap_program() -> str | None:
    named = os.environ.get(BWRAP_ENV, "").strip()
    if named:
        return named
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=8)
def _probe(program: str | None) -> Isolation:
    """A trial sandbox with a user namespace of its own; where bubblewrap cannot make one, a trial without."""
    first = _trial(program, unprivileged=True)
    if first.sandboxed or program is None:
        return first
    second = _trial(program, unprivileged=False)
    return second if second.sandboxed else first


def _trial(program: str | None, unprivileged: bool) -> Isolation:
    if program is None:
        return Isolation(
            False, "", "", "bubblewrap (bwrap) is not installed; on Debian or Ubuntu: apt-get install bubblewrap"
        )
    try:
        version = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=30)
        ver = version.stdout.strip() or version.stderr.strip()
        trial = subprocess.run(
            sandbox_argv(
                [sys.executable, "-c", "import os; print(os.getcwd(), os.getpid())"],
                base_environment(),
                program=program,
                unprivileged=unprivileged,
            ),
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return Isolation(False, "", "", f"{program} could not run: {exc}")
    if trial.returncode != 0:
        why = (trial.stderr.strip() or trial.stdout.strip() or f"exit code {trial.returncode}").splitlines()[-1]
        return Isolation(False, "", "", f"{program} cannot create the sandbox here: {why[:200]}")
    cwd, _, pid = trial.stdout.strip().partition(" ")
    if cwd != WORKDIR or pid not in ("1", "2"):  # pid 2 under bwrap's own init in a new PID namespace
        return Isolation(False, "", "", f"{program} ran, but not in the expected sandbox (cwd {cwd!r}, pid {pid!r})")
    version = ver if ver.lower().startswith("bubblewrap") else f"bubblewrap {ver}"
    return Isolation(True, program, version, "", unprivileged)


def probe() -> Isolation:
    """The isolation available here (run once per program and process: a trial sandbox of the real shape)."""
    return _probe(_bwrap_program())


def popen_kwargs(isolation: Isolation, workdir: Path) -> dict:
    """Extra ``Popen`` arguments for a process that would be sandboxed: without a sandbox,
    at least a new session and an empty working folder of its own."""
    if isolation.sandboxed:
        return {"start_new_session": True}
    return {"start_new_session": True, "cwd": str(workdir)}


def wrap(
    isolation: Isolation,
    command: Sequence[str],
    env: Mapping[str, str],
    *,
    shared_dirs: Sequence[Path] = (),
    home: Path | None = None,
    hide_grader: bool = False,
    limits: Limits | None = None,
) -> tuple[list[str], dict[str, str]]:
    """(argv, env) to start ``command``: inside bubblewrap when ``isolation`` has it, else as it is
    with ``HOME``/``IPYTHONDIR`` moved to ``home`` (a fresh folder) and the memory limit applied,
    the most that can be done (nothing is hidden then: grades are for self-study only)."""
    full = {**base_environment(), **env}
    if isolation.sandboxed:
        argv = sandbox_argv(
            command,
            full,
            shared_dirs=shared_dirs,
            program=isolation.program,
            hide_grader=hide_grader,
            limits=limits,
            unprivileged=isolation.unprivileged,
        )
        return argv, full
    limits = limits or Limits()
    if home is not None:
        (home / "ipython").mkdir(parents=True, exist_ok=True)
        full.update({"HOME": str(home), "IPYTHONDIR": str(home / "ipython")})
    # Without a sandbox the watcher still bounds memory, processes and CPU time, and the bytes in
    # the connection folder (the kernel can write elsewhere too: self-study only).
    return [*limits.watcher(host=shared_dirs), *limits.prlimit(), *command], full
