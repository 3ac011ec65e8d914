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
    user_expressions: dict = field(default_factory=dict)
    exit_code: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _status_bytes(pid: int, key: str) -> int:
    """A ``kB`` field of ``/proc/<pid>/status``, in bytes (read by the grader, never by the kernel)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) * 1024
    raise ValueError(f"{key} not in /proc/{pid}/status")


class HeadTail:
    """Text kept within a bound: the first and the last ``keep`` characters, and how much was cut."""

    def __init__(self, keep: int = STDOUT_KEEP_CHARS):
        self.keep, self.head, self.tail, self.cut = keep, "", "", 0

    def add(self, text: str) -> None:
        if len(self.head) < self.keep:
            room = self.keep - len(self.head)
            self.head, text = self.head + text[:room], text[room:]
        if text:
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
        """Run ``code``; wait for its reply and idle state, at most ``timeout_s`` seconds."""
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
        while not (idle and reply is not None):
            if time.monotonic() > deadline:
                self.sweep()
                return CellResult("timeout", stdout.text())
            if not self.km.is_alive():
                return CellResult("dead", stdout.text(), exit_code=self.exit_code())
            try:
                msg = self.kc.get_iopub_msg(timeout=0.1)
            except queue.Empty:
                msg = None
            if msg is not None and msg.get("parent_header", {}).get("msg_id") == msg_id:
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream" and content.get("name") == "stdout":
                    stdout.add(str(content.get("text", "")))
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
        self.sweep()
        status = reply.get("status", "error")
        if status != "ok":
            error = error or reply
        return CellResult(
            "ok" if status == "ok" and not error else "error",
            stdout.text(),
            str(error.get("ename", "")),
            str(error.get("evalue", "")),
            reply.get("user_expressions", {}),
        )

    def kernel_pid(self) -> int | None:
        """The host's pid of the Python process that runs the learner's code (inside bubblewrap, the
        descendant of the sandbox whose command line runs ``ipykernel_launcher``)."""
        prov = getattr(self.km, "provisioner", None)
        root = getattr(getattr(prov, "process", None), "pid", None)
        if root is None:
            return None
        found, frontier = None, [root]
        while frontier:
            pid = frontier.pop()
            try:
                if b"ipykernel_launcher" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found = pid
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            except OSError:
                continue
            frontier.extend(int(c) for c in children)
        return found

    def memory_mark(self) -> int | None:
        """Reset the kernel process's peak resident set size (``/proc/<pid>/clear_refs``) to what it
        holds now, and return that (bytes); None where this cannot be done here."""
        pid = self.kernel_pid()
        if pid is None:
            return None
        try:
            Path(f"/proc/{pid}/clear_refs").write_text("5")
            return _status_bytes(pid, "VmRSS:")
        except (OSError, ValueError):
            return None

    def memory_peak(self) -> int | None:
        """The kernel process's peak resident set size since :meth:`memory_mark` (bytes), or None."""
        pid = self.kernel_pid()
        try:
            return None if pid is None else _status_bytes(pid, "VmHWM:")
        except (OSError, ValueError):
            return None

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
        on success ``result.stdout`` is replaced by the expression's ``text/plain`` value."""
        res = self.execute("", timeout_s, user_expressions={"value": expression}, silent=True)
        if res.ok:
            value = res.user_expressions.get("value", {})
            if not isinstance(value, dict) or value.get("status") != "ok":
                value = value if isinstance(value, dict) else {}
                res.status, res.ename, res.evalue = "error", str(value.get("ename", "?")), str(value.get("evalue", ""))
            else:
                data = value.get("data", {})
                res.stdout = data.get("text/plain", "") if isinstance(data, dict) else ""
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
