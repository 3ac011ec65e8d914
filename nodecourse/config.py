"""Course-wide switches: quick mode, CPU threads and the devices a lesson may offer.

Every notebook reads one switch, the environment variable ``NODECOURSE_QUICK``
(``1`` = quick mode: small data, few epochs, short sweeps, so a lesson runs in
well under a minute on two CPU cores). Full mode reproduces the numbers at
the sizes each lesson states.

Every notebook's first code cell, the ``nodecourse`` command and the grader's
kernels call :func:`use_course_threads`, the one place that picks torch's CPU
thread count (see :func:`thread_choice` for the rule and why).
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, TypeVar

if TYPE_CHECKING:
    import torch

# torch is imported inside the functions that use it: the ``nodecourse`` command reads quick_mode
# while it builds its parser, and a usage error must not wait seconds for torch.

T = TypeVar("T")

QUICK_ENV = "NODECOURSE_QUICK"


def quick_mode() -> bool:
    """True when ``NODECOURSE_QUICK`` is set to a true value (1, true, yes, on)."""
    return os.environ.get(QUICK_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def pick(*, quick: T, full: T) -> T:
    """Return ``quick`` in quick mode and ``full`` otherwise.

    Lessons write sizes as ``n_epochs = pick(quick=3, full=40)`` so that both
    numbers stand side by side in the text.
    """
    return quick if quick_mode() else full


def mode_name() -> str:
    """'quick' or 'full', for labels and reports."""
    return "quick" if quick_mode() else "full"


def available_devices() -> list[str]:
    """Devices this machine can run torch on, CPU first: a subset of cpu, cuda, mps."""
    import torch

    devices = ["cpu"]
    if torch.cuda.is_available():
        devices.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    return devices


def default_device() -> torch.device:
    """The fastest available device (cuda, then mps, then cpu)."""
    import torch

    devices = available_devices()
    for name in ("cuda", "mps"):
        if name in devices:
            return torch.device(name)
    return torch.device("cpu")


def resolve_device(device: str | torch.device | None) -> torch.device:
    """Turn a user's device argument into a ``torch.device``, with a clear error.

    ``None`` or ``"auto"`` means :func:`default_device`.
    """
    import torch

    if device is None or (isinstance(device, str) and device == "auto"):
        return default_device()
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device={device!r} is not a device; use one of {available_devices()} or 'auto'") from exc
    if dev.type not in available_devices():
        raise ValueError(
            f"device={device!r} is not available on this machine; available: {available_devices()} (or 'auto')"
        )
    return dev


# ---------------------------------------------------------------------------
# CPU threads
# ---------------------------------------------------------------------------

THREADS_ENV = "NODECOURSE_THREADS"
# The course's models are small (MLP fields of width <= 128, batches of a few
# hundred): each torch op is a few microseconds of work, below what intra-op
# threads win back in synchronisation, and on a shared CPU every op waits for
# the slowest thread, so one descheduled thread stalls them all (measured:
# scripts/time_loaded.py). One thread is the course's default.
SMALL_MODEL_THREADS = 1
CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_SELF_CGROUP = Path("/proc/self/cgroup")


@dataclass(frozen=True)
class ThreadChoice:
    """What :func:`thread_choice` decided, and why.

    ``threads``: the count to use. ``source``: ``"NODECOURSE_THREADS"``,
    ``"OMP_NUM_THREADS"`` or ``"course default"``. ``cpus``: the CPUs this
    process may use (affinity and container quota); ``cpus_detail`` says how
    that was found.
    """

    threads: int
    source: str
    cpus: int
    cpus_detail: str

    def describe(self) -> str:
        """One line for ``nodecourse check``."""
        if self.source == "course default":
            why = f"the course default for its small models; {THREADS_ENV}=auto would use {self.cpus}"
        else:
            why = f"from {self.source}"
        return f"{self.threads} ({why}); usable CPUs: {self.cpus} ({self.cpus_detail})"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return None


def _cgroup_paths(proc_self_cgroup: Path) -> tuple[str | None, str | None]:
    """This process's cgroup path in the v2 hierarchy and in v1's cpu controller."""
    v2 = v1 = None
    text = _read(proc_self_cgroup) or ""
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            v2 = path
        elif "cpu" in controllers.split(","):
            v1 = path
    return v2, v1


def _dirs_up(base: Path, rel: str | None) -> list[Path]:
    """``base/rel`` and each of its parents up to ``base`` (a limit on any of them applies)."""
    rel_parts = [p for p in (rel or "").split("/") if p]
    return [base.joinpath(*rel_parts[:k]) for k in range(len(rel_parts), -1, -1)]


def cgroup_cpu_quota(
    cgroup_root: Path | str = CGROUP_ROOT, proc_self_cgroup: Path | str = PROC_SELF_CGROUP
) -> tuple[float | None, str]:
    """The container's CPU quota in CPUs (``2.5`` = 250 ms per 100 ms), or None when unlimited.

    Reads cgroup v2 ``cpu.max`` (``"<quota> <period>"`` or ``"max <period>"``)
    and cgroup v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (quota ``-1`` =
    unlimited), in this process's cgroup and every parent up to the root; the
    smallest limit wins. Returns ``(cpus or None, how it was found)``. Both
    paths can be pointed at a fake tree (tests).
    """
    root, proc = Path(cgroup_root), Path(proc_self_cgroup)
    v2_path, v1_path = _cgroup_paths(proc)
    limits: list[tuple[float, str]] = []
    for d in _dirs_up(root, v2_path):
        text = _read(d / "cpu.max")
        if text:
            quota, _, period = text.partition(" ")
            try:
                q, p = int(quota), int(period or 100000)  # "max": no limit here (ValueError)
            except ValueError:
                continue
            if q > 0 and p > 0:
                limits.append((q / p, "cgroup v2 cpu.max"))
    for controller in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
        base = root / controller
        if not base.is_dir():
            continue
        for d in _dirs_up(base, v1_path):
            quota, period = _read(d / "cpu.cfs_quota_us"), _read(d / "cpu.cfs_period_us")
            try:
                q, p = int(quota or ""), int(period or "")
            except ValueError:
                continue
            if q > 0 and p > 0:
                limits.append((q / p, "cgroup v1 cpu.cfs_quota_us"))
        break
    if not limits:
        return None, "no cgroup CPU quota"
    cpus, how = min(limits)
    return cpus, f"{how} {cpus:g} CPUs"


def usable_cpus(
    cgroup_root: Path | str = CGROUP_ROOT, proc_self_cgroup: Path | str = PROC_SELF_CGROUP
) -> tuple[int, str]:
    """How many CPUs this process may keep busy: its affinity, capped by the cgroup quota.

    torch's default thread count is the number of cores it *sees*; a container
    (Binder, CI) often sees many more than its quota lets it use. The quota is
    rounded up (1.5 CPUs -> 2). Returns ``(cpus >= 1, how it was found)``.
    """
    try:
        affinity = len(os.sched_getaffinity(0))
        detail = f"affinity {affinity}"
    except (AttributeError, OSError):  # not Linux
        affinity = os.cpu_count() or 1
        detail = f"{affinity} cores"
    quota, how = cgroup_cpu_quota(cgroup_root, proc_self_cgroup)
    cpus = affinity if quota is None else max(1, min(affinity, math.ceil(quota - 1e-9)))
    return cpus, f"{detail}, {how}"


def _positive_int(text: str) -> int | None:
    try:
        value = int(text.split(",")[0].strip())  # OMP_NUM_THREADS may list nested levels: "4,2"
    except ValueError:
        return None
    return value if value >= 1 else None


def thread_choice(
    *,
    environ: Mapping[str, str] | None = None,
    cgroup_root: Path | str = CGROUP_ROOT,
    proc_self_cgroup: Path | str = PROC_SELF_CGROUP,
) -> ThreadChoice:
    """Pick torch's CPU thread count for this machine.

    In order: ``NODECOURSE_THREADS`` (a positive count, or ``auto`` = every
    usable CPU); else ``OMP_NUM_THREADS``; else the course default,
    ``SMALL_MODEL_THREADS`` (one) capped by :func:`usable_cpus`. The usable
    CPUs come from the affinity mask and the container's cgroup CPU quota (v2
    ``cpu.max``, v1 ``cpu.cfs_quota_us``), never from the count of cores the
    machine has. ``environ`` defaults to ``os.environ``.
    """
    env = os.environ if environ is None else environ
    cpus, detail = usable_cpus(cgroup_root, proc_self_cgroup)
    explicit = env.get(THREADS_ENV, "").strip()
    if explicit:
        if explicit.lower() == "auto":
            return ThreadChoice(cpus, f"{THREADS_ENV}=auto", cpus, detail)
        value = _positive_int(explicit)
        if value is None or "," in explicit:
            raise ValueError(
                f"{THREADS_ENV}={explicit!r} is not a thread count; set it to a positive integer, "
                f"to 'auto' (every usable CPU, here {cpus}), or unset it for the course default"
            )
        return ThreadChoice(value, THREADS_ENV, cpus, detail)
    omp = env.get("OMP_NUM_THREADS", "").strip()
    if omp:
        value = _positive_int(omp)
        if value is not None:
            return ThreadChoice(value, f"OMP_NUM_THREADS={omp}", cpus, detail)
        warnings.warn(
            f"OMP_NUM_THREADS={omp!r} is not a positive integer; ignored (set it to e.g. 1, or unset it)", stacklevel=2
        )
    return ThreadChoice(min(SMALL_MODEL_THREADS, cpus), "course default", cpus, detail)


def course_threads(**kwargs) -> int:
    """The number of torch CPU threads the course uses here (see :func:`thread_choice`)."""
    return thread_choice(**kwargs).threads


def use_course_threads(**kwargs) -> int:
    """Apply :func:`course_threads`: ``torch.set_num_threads`` in this process, and
    ``OMP_NUM_THREADS`` (when unset) for the processes it starts (kernels, the
    grader's nbval run). Returns the count. Call it first in a notebook."""
    n = course_threads(**kwargs)  # a bad NODECOURSE_THREADS is refused before torch is imported
    import torch

    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    os.environ.setdefault("OMP_NUM_THREADS", str(n))
    return n


__all__ = [
    "QUICK_ENV",
    "SMALL_MODEL_THREADS",
    "THREADS_ENV",
    "ThreadChoice",
    "available_devices",
    "cgroup_cpu_quota",
    "course_threads",
    "default_device",
    "mode_name",
    "pick",
    "quick_mode",
    "resolve_device",
    "thread_choice",
    "use_course_threads",
    "usable_cpus",
]
