"""The learner's kernel, as the grader starts and drives it.

A kernel of the current environment, started inside the sandbox
(:mod:`nodecourse.course.sandbox`) and reached over Unix sockets in a folder
made for this one kernel (the sandbox has no network, so no TCP). Its stdout
goes nowhere and its stderr into a bounded buffer that only the grader reads
(shown escaped, :mod:`nodecourse.course.textsafe`). Without a sandbox the same
kernel runs as a plain process in an empty folder with a private home and
IPython folder; reports then say the grade is for self-study only.

The grader decides every outcome in its own process from the replies to its
own requests (:meth:`Kernel.execute`); a value the kernel returns is read as
text and decoded by the caller as plain data, never unpickled.

Why this module is long: it is a security boundary of the grader: its whole channel to the learner's process
(the start in the sandbox, the sockets, the memory and process watch, the bounded stderr, replies read as
plain data; :class:`Kernel` alone is about 250 lines) stays in one file, to be reviewed as one.
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from nodecourse.course import sandbox

KERNEL_START_TIMEOUT_S = 120
STDERR_KEEP_BYTES = 64 * 1024
# What the grader keeps of a cell's printed output: the head and the tail (a check cell's PASS line
# is the last thing it prints); the middle is cut and the cut is said.
STDOUT_KEEP_CHARS = 32 * 1024
# The largest message the grader accepts from the kernel (zmq drops a bigger one before it is read
# into memory): a task's reply is at most nodecourse.course.tasks.plain.MAX_TEXT characters.
MAX_MESSAGE_BYTES = 64 * 2**20
# Messages each of the grader's sockets may hold unread (zmq's receive high-water mark; with its
# default, 1,000, what the kernel printed faster than the grader read piled up in the grader). Past it
# zmq stops reading from the kernel, whose own send queue fills and then drops (a burst of small
# messages waits there): the grader holds at most this many messages of at most MAX_MESSAGE_BYTES each,
# whatever the kernel prints.
RECEIVE_QUEUE_MESSAGES = 2
# After the kernel's reply, how long the grader waits for the "idle" status with nothing arriving on
# the output channel (a flood can make the kernel drop output messages, that one included).
IDLE_GRACE_S = 2.0
LOST_OUTPUT = (
    "the grader did not receive the end of this cell's output: a message over its bound, or output dropped "
    "while the kernel printed faster than it could be read"
)
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


class KernelStartError(RuntimeError):
    """The grading kernel did not start."""


def course_thread_count() -> int:
    """Torch threads for the grader's kernels: the course's one choice,
    :func:`nodecourse.config.course_threads` (NODECOURSE_THREADS, OMP_NUM_THREADS, else one).
    A malformed NODECOURSE_THREADS raises ``ValueError`` naming it."""
    from nodecourse.config import course_threads

    return course_threads()


def package_parent() -> str:
    return str(Path(__file__).resolve().parent.parent.parent)


def kernel_environment(isolation: sandbox.Isolation | None = None) -> dict[str, str]:
    """The grading kernel's environment: quick mode, the course's thread count and this copy of
    nodecourse on the path; nothing that names a grader file. Inside the sandbox nothing else
    (the sandbox clears the rest); without one, the grader's environment minus ``NODECOURSE_GRADE*``."""
    threads = str(course_thread_count())
    env = {"NODECOURSE_QUICK": "1", "PYTHONPATH": package_parent()}
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = threads
    if isolation is not None and isolation.sandboxed:
        return env
    outside = {k: v for k, v in os.environ.items() if not k.startswith("NODECOURSE_GRADE")}
    if outside.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], outside["PYTHONPATH"]])
    return {**outside, **env}


@dataclass
class CellResult:
    """What the grader saw of one execute request."""

    status: str  # "ok", "error", "timeout", "dead"
    stdout: str = ""
    ename: str = ""
    evalue: str = ""
    # The reply's user_expressions as the kernel sent them: read with :meth:`Kernel.evaluate`, which
    # turns any shape that is not a dict of results into a named failure.
    user_expressions: object = field(default_factory=dict)
    exit_code: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _status_bytes(pid: int, key: str) -> int | None:
    """A ``kB`` field of ``/proc/<pid>/status``, in bytes (read by the grader, never by the kernel);
    None when the process has none (a zombie has no memory fields)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) * 1024
    return None


def _stat(pid: int) -> tuple[int, int, int, str]:
    """``(ppid, minor faults, minor faults of its reaped children, start time)`` from
    ``/proc/<pid>/stat`` (the command name, in parentheses, may hold spaces and parentheses)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    rest = text[text.rindex(")") + 2 :].split()
    return int(rest[1]), int(rest[7]), int(rest[8]), rest[19]


def sandbox_pids(root: int) -> list[int]:
    """``root`` and every process descending from it, found from every process's parent on this host
    (so a child of any thread, and a double fork re-parented to the sandbox's init, are found too)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                children.setdefault(_stat(int(entry.name))[0], []).append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue  # gone since listed
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        found.append(pid)
        frontier.extend(children.get(pid, ()))
    return found


@dataclass
class TreeMemory:
    """The memory of every process of a sandbox, as the grader reads it from outside.

    :meth:`mark` resets each process's peak resident set size (``/proc/<pid>/clear_refs``) and keeps
    what it holds; :meth:`growth` then adds, over the processes found at the end, each one's peak above
    its mark (a process started since: its whole peak) and the minor page faults of every child reaped
    since (a process that allocated and exited between the two readings; a zombie's own faults). A sum
    of per-process peaks is at least the peak of the sum: processes can only add to the figure, so a
    forked decoy cannot stand in for the kernel, and memory moved into a short-lived child still counts.
    """

    held: int  # bytes resident in all the processes at the mark
    before: dict  # pid -> (start time, resident bytes, minor faults, reaped children's minor faults)

    @classmethod
    def mark(cls, root: int) -> TreeMemory | None:
        """None when the root is gone or this machine does not let the grader reset a peak."""
        before, held = {}, 0
        for pid in sandbox_pids(root):
            try:
                _, minflt, cminflt, started = _stat(pid)
                Path(f"/proc/{pid}/clear_refs").write_text("5")
                rss = _status_bytes(pid, "VmRSS:") or 0
            except (OSError, ValueError, IndexError):
                if pid == root:
                    return None
                continue  # a process that exited while being read: its reaper's faults count it
            before[pid], held = (started, rss, minflt, cminflt), held + rss
        return cls(held, before) if before else None

    def growth(self, root: int) -> int:
        """Bytes the processes held above the mark at most, since the mark (see the class)."""
        total = 0
        for pid in sandbox_pids(root):
            try:
                _, minflt, cminflt, started = _stat(pid)
                peak = _status_bytes(pid, "VmHWM:")
            except (OSError, ValueError, IndexError):
                continue
            was = self.before.get(pid)
            if was is not None and was[0] != started:
                was = None  # the pid was reused by a new process
            if was is None:
                total += (peak if peak is not None else minflt * PAGE_BYTES) + cminflt * PAGE_BYTES
                continue
            _, rss, minflt0, cminflt0 = was
            total += max(0, peak - rss) if peak is not None else max(0, minflt - minflt0) * PAGE_BYTES
            total += max(0, cminflt - cminflt0) * PAGE_BYTES
        return total


class HeadTail:
    """Text kept within a bound: the first and the last ``keep`` characters, and how much was cut."""

    def __init__(self, keep: int = STDOUT_KEEP_CHARS):
        self.keep, self.head, self.tail, self.cut = keep, "", "", 0

    def add(self, text: str) -> None:
        if len(self.head) < self.keep:
            room = self.keep - len(self.head)
            self.head, text = self.head + text[:room], text[room:]
        if len(text) >= self.keep:  # a long message: keep its end, never a copy of all of it
            self.cut += len(self.tail) + len(text) - self.keep
            self.tail = text[-self.keep :]
        elif text:
            joined = self.tail + text
            self.cut += max(0, len(joined) - self.keep)
            self.tail = joined[-self.keep :]

    def text(self) -> str:
        if not self.cut:
            return self.head + self.tail
        return f"{self.head}\n[... {self.cut} characters of output cut by the grader ...]\n{self.tail}"


class _StderrTail:
    """Drains a pipe into a bounded buffer (the last ``STDERR_KEEP_BYTES``)."""

    def __init__(self, pipe):
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, args=(pipe,), daemon=True)
        self._thread.start()

    def _drain(self, pipe) -> None:
        try:
            for chunk in iter(lambda: pipe.read1(4096), b""):
                with self._lock:
                    self._buf += chunk
                    del self._buf[:-STDERR_KEEP_BYTES]
        except (OSError, ValueError):
            pass

    def text(self) -> str:
        with self._lock:
            return bytes(self._buf).decode("utf-8", errors="replace")


class Kernel:
    """One kernel, started (sandboxed when ``isolation`` allows) and driven by this process."""

    def __init__(
        self,
        isolation: sandbox.Isolation,
        start_timeout_s: float = KERNEL_START_TIMEOUT_S,
        limits: sandbox.Limits | None = None,
    ):
        import ipykernel.kernelspec
        from jupyter_client import KernelManager
        from jupyter_client.kernelspec import KernelSpec, KernelSpecManager

        self.isolation = isolation
        self.swept: list[str] = []  # what the kernel left in its connection folder, removed
        self._dir = Path(tempfile.mkdtemp(prefix="nodecourse-kernel-")).resolve()
        conn = self._dir / "conn"
        conn.mkdir()
        home = self._dir / "home"
        workdir = self._dir / "work"
        workdir.mkdir()
        command = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        argv, env = sandbox.wrap(
            isolation,
            command,
            kernel_environment(isolation),
            shared_dirs=[conn],
            home=home,
            hide_grader=True,
            limits=limits,
        )

        class _Spec(KernelSpecManager):
            def get_kernel_spec(self, kernel_name):
                spec = ipykernel.kernelspec.get_kernel_dict()
                spec["argv"] = argv
                return KernelSpec(resource_dir=ipykernel.kernelspec.RESOURCES, **spec)

        kwargs = {
            "kernel_name": "python3",
            "kernel_spec_manager": _Spec(),
            "connection_file": str(conn / "kernel.json"),
        }
        if isolation.sandboxed:
            kwargs["transport"] = "ipc"
        self.km = KernelManager(**kwargs)
        import zmq

        # Set on the manager's own context before any socket exists: every socket it makes, the
        # client's included, refuses a message over the bound instead of reading it into memory.
        self.km.context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        self.km.context.setsockopt(zmq.RCVHWM, RECEIVE_QUEUE_MESSAGES)
        self._conn = conn
        if isolation.sandboxed:
            self.km.ip = str(conn / "k")
        self._devnull = open(os.devnull, "wb")
        # stdout goes nowhere and stderr to a buffer only the grader reads: the kernel cannot
        # print into the grader's own output.
        self.km.start_kernel(
            env=env, stdout=self._devnull, stderr=subprocess.PIPE, **sandbox.popen_kwargs(isolation, workdir)
        )
        proc = self.km.provisioner.process
        self._stderr = _StderrTail(proc.stderr)
        self.kc = self.km.client(context=self.km.context)
        self.kc.start_channels()
        try:
            self.kc.wait_for_ready(timeout=start_timeout_s)
        except RuntimeError as exc:
            tail = self.stderr_tail()
            self.close()
            raise KernelStartError(
                f"the grading kernel did not start: {exc}" + (f"; its stderr ends: {tail[-300:]}" if tail else "")
            ) from exc

    def stderr_tail(self, n: int = 400) -> str:
        """The last ``n`` characters the kernel wrote on stderr (raw: escape before showing)."""
        return self._stderr.text().strip()[-n:]

    def exit_code(self) -> int | None:
        prov = getattr(self.km, "provisioner", None)
        return prov.process.poll() if prov is not None and getattr(prov, "process", None) else None

    def execute(
        self, code: str, timeout_s: float, user_expressions: dict | None = None, silent: bool = False
    ) -> CellResult:
        """Run ``code``; wait for its reply and idle state, at most ``timeout_s`` seconds.

        Every message is read defensively: one the grader cannot read (a replaced ``json.dumps`` in the
        kernel, a header without ``msg_id``, a content that is not a dict, a bad signature) ends this
        request as a failure named ``UnreadableMessage``, never as the grader's own exception."""
        msg_id = self.kc.execute(
            code,
            silent=silent,
            store_history=not silent,
            user_expressions=user_expressions or {},
            allow_stdin=False,
            stop_on_error=False,
        )
        deadline = time.monotonic() + timeout_s
        stdout = HeadTail()
        error: dict = {}
        reply = None
        idle = False
        heard = time.monotonic()  # the last time anything arrived on the output channel
        try:
            while not (idle and reply is not None):
                if reply is not None and time.monotonic() - heard > IDLE_GRACE_S:
                    # Replied, and the output channel is quiet: its "idle" was lost (a message over the
                    # bound, or dropped in a flood), and output may have been lost with it.
                    stdout.add(f"\n[{LOST_OUTPUT}]\n")
                    break
                if time.monotonic() > deadline:
                    self.sweep()
                    return CellResult("timeout", stdout.text())
                if not self.km.is_alive():
                    return CellResult("dead", stdout.text(), exit_code=self.exit_code())
                # Drain what is waiting (without blocking once something came), so that the bounded
                # receive queue empties as fast as the kernel fills it.
                for wait in (0.05, *([0.0] * 63)):
                    try:
                        msg = self.kc.get_iopub_msg(timeout=wait)
                    except queue.Empty:
                        break
                    heard = time.monotonic()
                    parent, kind, content = _parts(msg)
                    if parent != msg_id:
                        continue
                    if kind == "stream" and content.get("name") == "stdout":
                        stdout.add(_text(content.get("text", "")))
                    elif kind == "error":
                        error = content
                    elif kind == "status" and content.get("execution_state") == "idle":
                        idle = True
                        break
                if reply is None:
                    try:
                        shell = self.kc.get_shell_msg(timeout=0.01)
                    except queue.Empty:
                        shell = None
                    if shell is not None:
                        parent, _, content = _parts(shell)
                        if parent == msg_id:
                            reply, heard = content, time.monotonic()
        except _Unreadable as exc:
            self.sweep()
            return CellResult("error", stdout.text(), "UnreadableMessage", str(exc))
        except Exception as exc:  # noqa: BLE001 - the client failed to read a message: the kernel's doing
            self.sweep()
            return CellResult("error", stdout.text(), "UnreadableMessage", _unreadable(exc))
        self.sweep()
        status = reply.get("status", "error")
        if status != "ok":
            error = error or reply
        return CellResult(
            "ok" if status == "ok" and not error else "error",
            stdout.text(),
            _text(error.get("ename", ""), 200),
            _text(error.get("evalue", "")),
            reply.get("user_expressions", {}),
        )

    def root_pid(self) -> int | None:
        """The host's pid of the process the grader started (bubblewrap, or the kernel itself without
        a sandbox): every process of the submission descends from it."""
        prov = getattr(self.km, "provisioner", None)
        return getattr(getattr(prov, "process", None), "pid", None)

    def memory_mark(self) -> int | None:
        """Start a measurement of the whole sandbox's memory (:class:`TreeMemory`): every process's
        peak resident set size reset to what it holds now; returns the total held now (bytes), or
        None where this machine does not let the grader do it."""
        root = self.root_pid()
        self._memory = TreeMemory.mark(root) if root is not None else None
        return None if self._memory is None else self._memory.held

    def memory_peak(self) -> int | None:
        """What :meth:`memory_mark` returned plus the most the submission's processes can have held
        above it since (bytes), or None."""
        memory, root = getattr(self, "_memory", None), self.root_pid()
        if memory is None or root is None:
            return None
        return memory.held + memory.growth(root)

    def sweep(self) -> list[str]:
        """Remove from the connection folder whatever is not the kernel's sockets or its connection
        file (the folder is shared with the sandbox; files written there would stay on the host's
        disk); returns the names removed. Each file is also capped by the kernel's RLIMIT_FSIZE."""
        import stat

        removed = []
        for entry in os.scandir(self._conn):
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISSOCK(mode) or (entry.name == "kernel.json" and stat.S_ISREG(mode)):
                continue
            removed.append(entry.name)
            if stat.S_ISDIR(mode):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                try:
                    os.unlink(entry.path)
                except OSError:
                    pass
        self.swept.extend(removed)
        return removed

    def evaluate(self, expression: str, timeout_s: float) -> CellResult:
        """Evaluate one expression through ``user_expressions`` (no input transformer sees it);
        on success ``result.stdout`` is replaced by the expression's ``text/plain`` value. A reply of
        any other shape (user_expressions not a dict, a value without ``text/plain`` text) is a
        failure named ``UnreadableReply``."""
        res = self.execute("", timeout_s, user_expressions={"value": expression}, silent=True)
        if not res.ok:
            return res
        found = res.user_expressions
        value = found.get("value") if isinstance(found, dict) else None
        if not isinstance(value, dict):
            what = (
                f"user_expressions is {_shape(found)}"
                if not isinstance(found, dict)
                else f"its value is {_shape(value)}"
            )
            return _unreadable_reply(res, f"{what}, not a dict")
        if value.get("status") != "ok":
            res.status, res.ename, res.evalue = (
                "error",
                _text(value.get("ename", "?"), 200),
                _text(value.get("evalue", "")),
            )
            return res
        data = value.get("data")
        text = data.get("text/plain") if isinstance(data, dict) else None
        if not isinstance(text, str):
            return _unreadable_reply(res, f"its text/plain value is {_shape(text)}, not text")
        res.stdout = text
        return res

    def close(self) -> None:
        try:
            if getattr(self, "kc", None) is not None:
                self.kc.stop_channels()
        except Exception:
            pass
        try:
            self.km.shutdown_kernel(now=True)
        except Exception:
            pass
        try:
            self.km.cleanup_resources()
        except Exception:
            pass
        self._devnull.close()
        shutil.rmtree(self._dir, ignore_errors=True)


class _Unreadable(Exception):
    """A message from the kernel that is not the shape the messaging protocol gives it."""


LIKELY_CAUSE = (
    "likely cause: code in the notebook changed how the kernel sends its messages (json.dumps, "
    "the session, the sockets); put the answer cells back to plain code"
)


def _shape(value) -> str:
    """What a value is, in a few words (never its repr: it may be megabytes)."""
    name = type(value).__name__
    article = "an" if name[:1] in "aeiou" else "a"
    if isinstance(value, (list, tuple, dict, str, bytes)):
        return f"{article} {name} of length {len(value)}"
    return "None" if value is None else f"{article} {name}"


def _text(value, limit: int | None = None) -> str:
    """A field the kernel sent, as text (a non-string is named by its shape, not converted)."""
    text = value if isinstance(value, str) else _shape(value)
    return text if limit is None else text[:limit]


def _parts(msg) -> tuple[object, str, dict]:
    """``(parent msg_id, msg_type, content)`` of a message; :class:`_Unreadable` for any other shape."""
    if not isinstance(msg, dict):
        raise _Unreadable(f"the kernel sent a message that is {_shape(msg)}, not a dict; {LIKELY_CAUSE}")
    parent, kind, content = msg.get("parent_header"), msg.get("msg_type"), msg.get("content")
    if not isinstance(parent, dict) or not isinstance(kind, str) or not isinstance(content, dict):
        raise _Unreadable(
            f"the kernel sent a message whose parent_header is {_shape(parent)}, msg_type {_shape(kind)} and "
            f"content {_shape(content)}; {LIKELY_CAUSE}"
        )
    return parent.get("msg_id"), kind, content


def _unreadable(exc: Exception) -> str:
    first = (str(exc).strip().splitlines() or [""])[0][:160]
    return f"the grader could not read a message from the kernel ({type(exc).__name__}: {first}); {LIKELY_CAUSE}"


def _unreadable_reply(res: CellResult, what: str) -> CellResult:
    res.status, res.ename = "error", "UnreadableReply"
    res.evalue = f"the kernel's reply to the grader's request: {what}; {LIKELY_CAUSE}"
    return res
