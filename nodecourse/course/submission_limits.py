"""Limits on a submission as a whole: memory of all its processes, bytes written, processes, CPU time.

The per-process limits of :class:`nodecourse.course.sandbox.Limits` (RLIMIT_DATA, RLIMIT_FSIZE,
size-limited in-memory folders) bound one process and one file; a submission can fork children,
each with its own allowance, and write many files. This module bounds the sum, for every process
that runs the learner's code.

How (and why this way): a small *watcher* process runs outside the sandbox, between the grader and
bubblewrap (``python submission_limits.py --total-memory-mb ... -- bwrap ...``, put in front of the
command by :func:`nodecourse.course.sandbox.sandbox_argv`). It starts the command, marks itself a
child subreaper (so an orphan re-parents to it, or to the sandbox's init inside a PID namespace:
every process of the submission stays its descendant), and every :data:`TICK_S` reads ``/proc``:

- **processes**: the number of its live descendants (bubblewrap's own two included);
- **memory**: the sum of their proportional set sizes (``Pss`` of ``/proc/<pid>/smaps_rollup``:
  a page shared by forked children counts once in total, so a decoy child's copy-on-write pages
  are neither double-counted nor free), read only when the sum of their resident set sizes (an
  upper bound, a hundred times cheaper to read) is over the limit;
- **CPU time**: the sum of user and system time of every live descendant and of its reaped
  children (``/proc/<pid>/stat``), plus what it reaped itself (``wait4``);
- **bytes written**: the space used in the sandbox's in-memory folders (``statvfs`` of
  ``/proc/<pid>/root/<folder>`` of a process inside) plus the disk space of the files in the host
  folders it shares (the kernel's connection folder), and those host folders alone, which are on
  the host's disk and need to hold sockets, not files, at most :data:`SHARED_MB`.

When one goes over, it kills every descendant (SIGKILL; in a PID namespace the kill of its init
ends all of them), writes one line on stderr and exits with that limit's code
(:data:`EXIT_CODES`): the grader reads which limit from the exit status, which the learner's code
cannot set (an exit status of the command that equals one of these codes is passed on as 1).

Why not the alternatives: cgroups would be exact, but ``/sys/fs/cgroup`` is seldom delegated to the
user in CI and on course machines; RLIMIT_NPROC counts every process of the user id on the host
(the grader's own, other submissions', and it does not apply to root at all), and RLIMIT_CPU is per
process (a submission forks around it). A watcher needs only ``/proc``. Its price: it polls, so a
limit can be overshot by what the submission does in one tick (tens of milliseconds: a few forks,
tens of megabytes); each file is still capped by RLIMIT_FSIZE and each in-memory folder by its size.

The grader also refuses a notebook file over :data:`MAX_NOTEBOOK_BYTES` before reading it.

This file runs as a script with only the standard library (``python -I -S``): it starts in
milliseconds and imports nothing of the course.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

TICK_S = 0.04  # seconds between two readings of /proc (a reading costs about a millisecond of CPU)
MAX_NOTEBOOK_BYTES = 64 * 2**20  # a notebook file larger than this is refused before it is parsed

# Exit codes of the watcher when it ended the submission, by limit (unused by Python, bash and bwrap).
EXIT_CODES = {"memory": 91, "written": 92, "processes": 93, "cpu": 94, "shared": 95}
SHARED_MB = 16  # what the folders shared with the host may hold: the connection folder needs sockets, not files
WHAT = {
    "memory": "memory of all its processes",
    "written": "bytes written",
    "shared": "bytes written in the folder it shares with the grader",
    "processes": "processes",
    "cpu": "CPU time",
}
UNITS = {"memory": "MB", "written": "MB", "processes": "", "cpu": "s", "shared": "MB"}
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_BLOCK = 4096  # what a file or folder entry costs at least, whatever its size
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class Hit:
    """A limit the watcher enforced: which one (a key of :data:`EXIT_CODES`), its value and what was seen."""

    limit: str
    allowed: float
    seen: float

    def describe(self) -> str:
        unit = UNITS[self.limit]
        return (
            f"the submission went over its limit on {WHAT[self.limit]} "
            f"({_num(self.seen)}{unit and ' ' + unit} > {_num(self.allowed)}{unit and ' ' + unit}); "
            "every process it ran was ended"
        )


def _num(x: float) -> str:
    return f"{x:.0f}" if x >= 10 or x == int(x) else f"{x:.2f}"


def size_text(n: int) -> str:
    """A size in words: MiB from one MiB up, else bytes."""
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n} bytes"


def limit_of_exit(code: int | None) -> str | None:
    """The limit a watcher's exit code stands for (a key of :data:`EXIT_CODES`), or None."""
    for name, value in EXIT_CODES.items():
        if code == value:
            return name
    return None


# --- reading /proc -----------------------------------------------------------------------------------


def descendants(root: int) -> list[int]:
    """``root`` and every live process below it, parents first (children of every thread)."""
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop(0)
        found.append(pid)
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as fh:
                    frontier.extend(int(c) for c in fh.read().split())
            except (OSError, ValueError):
                pass
    return found


def rss_bytes(pid: int) -> int:
    """A process's resident set size (bytes; 0 if gone): cheap to read, and never below its PSS."""
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def pss_bytes(pid: int) -> int:
    """A process's proportional set size (bytes); its resident set size where smaps_rollup is missing; 0 if gone."""
    for path, key in ((f"/proc/{pid}/smaps_rollup", "Pss:"), (f"/proc/{pid}/status", "VmRSS:")):
        try:
            with open(path) as fh:
                for line in fh:
                    if line.startswith(key):
                        return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            continue
    return 0


def cpu_seconds(pid: int) -> float:
    """User and system time of a process and of its reaped children (seconds; 0 if gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rpartition(")")[2].split()
        return sum(int(f) for f in fields[11:15]) / _CLOCK_TICKS  # utime stime cutime cstime
    except (OSError, ValueError, IndexError):
        return 0.0


def folder_bytes(path: str, stop_at: float = float("inf")) -> int:
    """Disk space of what is under ``path`` (each entry at least one block; stops counting past ``stop_at``)."""
    total, stack = 0, [path]
    while stack and total <= stop_at:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += max(_BLOCK, st.st_blocks * 512)
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
    return total


def used_bytes(path: str) -> int:
    """Space used on the file system mounted at ``path`` (0 if it cannot be read)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return 0
    return (st.f_blocks - st.f_bfree) * st.f_frsize


# --- the watcher ---------------------------------------------------------------------------------------


class Watcher:
    """Runs ``command`` and ends it when the submission goes over one of its limits (None: no limit)."""

    def __init__(
        self,
        command: list[str],
        *,
        memory_mb: float | None = None,
        written_mb: float | None = None,
        processes: int | None = None,
        cpu_s: float | None = None,
        shared_mb: float | None = None,
        inside: tuple[str, ...] = (),
        host: tuple[str, ...] = (),
    ):
        self.command, self.inside, self.host = command, inside, host
        self.limits = {
            "memory": memory_mb,
            "shared": shared_mb,
            "written": written_mb,
            "processes": processes,
            "cpu": cpu_s,
        }
        self.reaped_cpu = 0.0  # CPU time of processes this watcher reaped itself (orphans re-parented to it)
        self._own_ns = _ns("self")
        self._own_root = os.stat("/")

    def _root_inside(self, tree: list[int]) -> str | None:
        """``/proc/<pid>/root`` of a process in the sandbox, or None. Inside means another mount
        namespace *and* another root: while bubblewrap sets up, its child is in a new namespace
        that still has the host's root (whose /tmp is not the sandbox's)."""
        for pid in tree:
            ns = _ns(str(pid))
            if not ns or ns == self._own_ns:
                continue
            try:
                root = os.stat(f"/proc/{pid}/root")
            except OSError:
                continue
            if (root.st_dev, root.st_ino) != (self._own_root.st_dev, self._own_root.st_ino):
                return f"/proc/{pid}/root"
        return None

    def _written(self, tree: list[int], stop_at: float) -> tuple[int, int]:
        """Bytes in the sandbox's in-memory folders and in the host folders, (both, host's alone)."""
        shared = 0
        for folder in self.host:
            shared += folder_bytes(folder, stop_at - shared)
        root = self._root_inside(tree) if self.inside else None
        inside = sum(used_bytes(root + folder) for folder in self.inside) if root is not None else 0
        return inside + shared, shared

    def reading(self) -> dict[str, float]:
        """One reading of every limited quantity (memory and written in MB, CPU in seconds)."""
        tree = descendants(os.getpid())[1:]
        seen: dict[str, float] = {"processes": len(tree)}
        if self.limits["cpu"] is not None:
            seen["cpu"] = self.reaped_cpu + sum(cpu_seconds(p) for p in tree)
        if self.limits["written"] is not None or self.limits["shared"] is not None:
            stop_at = max(self.limits["written"] or 0, self.limits["shared"] or 0) * 2**20
            both, shared = self._written(tree, stop_at)
            seen["written"], seen["shared"] = both / 2**20, shared / 2**20
        if self.limits["memory"] is not None:
            # The resident sizes summed bound the proportional ones from above and cost a hundredth of
            # them to read (smaps_rollup walks every mapping: ~10 ms for a kernel that imported torch).
            seen["memory"] = sum(rss_bytes(p) for p in tree) / 2**20
            if seen["memory"] > self.limits["memory"]:
                seen["memory"] = sum(pss_bytes(p) for p in tree) / 2**20
        return seen

    def over(self, seen: dict[str, float]) -> Hit | None:
        for name, allowed in self.limits.items():
            if allowed is not None and name in seen and seen[name] > allowed:
                return Hit(name, allowed, seen[name])
        return None

    def run(self) -> int:
        """Run the command to its end (its exit code) or to a limit (that limit's code)."""
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        proc = subprocess.Popen(self.command, preexec_fn=_die_with_parent)
        child = proc.pid
        stop = {"signal": 0}

        def on_signal(signum, frame):
            stop["signal"] = signum

        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, on_signal)
        status = None
        while status is None:
            status = self._reap(child)
            if status is not None:
                break
            if stop["signal"]:
                self._kill(child)
                proc.returncode = 128 + stop["signal"]
                return 128 + stop["signal"]
            hit = self.over(self.reading())
            if hit is not None:
                self._kill(child)
                proc.returncode = EXIT_CODES[hit.limit]
                sys.stderr.write(f"\nnodecourse: {hit.describe()}\n")
                sys.stderr.flush()
                return EXIT_CODES[hit.limit]
            time.sleep(TICK_S)
        proc.returncode = status
        self._kill(child)  # what it left behind (re-parented to this watcher)
        return 1 if status in EXIT_CODES.values() else status

    def _reap(self, child: int) -> int | None:
        """Reap every finished process re-parented here; the command's exit code once it has finished."""
        status = None
        while True:
            try:
                pid, wstatus, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return status if status is not None else 1
            if pid == 0:
                return status
            self.reaped_cpu += usage.ru_utime + usage.ru_stime
            if pid == child:
                status = os.waitstatus_to_exitcode(wstatus)
                status = 128 - status if status < 0 else status

    def _kill(self, child: int) -> None:
        """SIGKILL every descendant, until none is left (a fork in flight is caught by the next round)."""
        for _ in range(50):
            alive = [p for p in descendants(os.getpid())[1:] if _alive(p)]
            if not alive:
                break
            for pid in alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.01)
            self._reap(child)
        while True:  # reap what is left
            try:
                pid, _, _ = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                time.sleep(0.01)
                if not any(_alive(p) for p in descendants(os.getpid())[1:]):
                    return


def _alive(pid: int) -> bool:
    """Running (not a zombie waiting to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _ns(pid: str) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return ""


def _prctl(option: int, arg: int) -> None:
    """Linux prctl (no-op where it cannot be called: the watcher still polls)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(option, arg, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _die_with_parent() -> None:
    """In the command's process before it starts: killed when the watcher dies."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def watcher_argv(
    *,
    memory_mb: float | None,
    written_mb: float | None,
    processes: int | None,
    cpu_s: float | None,
    shared_mb: float | None = None,
    inside: tuple[str, ...] = (),
    host: tuple[str, ...] = (),
) -> list[str]:
    """The prefix that runs a command under the watcher (this file, as a script of the standard library)."""
    argv = [sys.executable, "-I", "-S", os.path.abspath(__file__)]
    for flag, value in (
        ("--memory-mb", memory_mb),
        ("--written-mb", written_mb),
        ("--processes", processes),
        ("--cpu-s", cpu_s),
        ("--shared-mb", shared_mb),
    ):
        if value is not None:
            argv += [flag, str(value)]
    for folder in inside:
        argv += ["--inside", folder]
    for folder in host:
        argv += ["--host", str(folder)]
    return argv + ["--"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="run a command; end it when it goes over a limit")
    parser.add_argument("--memory-mb", type=float)
    parser.add_argument("--written-mb", type=float)
    parser.add_argument("--processes", type=int)
    parser.add_argument("--cpu-s", type=float)
    parser.add_argument("--shared-mb", type=float)
    parser.add_argument("--inside", action="append", default=[], help="a folder inside the sandbox it can write")
    parser.add_argument("--host", action="append", default=[], help="a host folder it can write")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    _die_with_parent()  # the grader gone, this watcher goes, and the command with it
    return Watcher(
        command,
        memory_mb=args.memory_mb,
        written_mb=args.written_mb,
        processes=args.processes,
        cpu_s=args.cpu_s,
        shared_mb=args.shared_mb,
        inside=tuple(args.inside),
        host=tuple(args.host),
    ).run()


if __name__ == "__main__":
    sys.exit(main())
