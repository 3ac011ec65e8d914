"""Peak memory of a forward + backward pass, and how it grows with the number of solver steps.

- CUDA: ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats`` (bytes held by
  tensors at the worst moment, above what was allocated before).
- CPU, ``cpu_method="profiler"`` (the default): torch's profiler with ``profile_memory=True``
  records every allocation and free of the CPU allocator with the running total; the figure is
  the highest total minus the total before the pass: bytes held by tensors at the peak, exact and
  independent of what the process did before (the CPU analogue of the CUDA figure).
- CPU, ``cpu_method="rss"`` (Linux): the process's peak resident set size. The kernel's
  high-water mark (``VmHWM``) is reset through ``/proc/self/clear_refs`` before the pass, glibc
  serves every block above 64 KiB by ``mmap`` (``mallopt``) and free heap pages are handed back
  (``malloc_trim``) first. It includes allocator and interpreter overhead, so it is about 1 MiB
  noisier; :func:`memory_sweep` can run it in a fresh subprocess (``isolated=True``).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from typing import Callable

import torch
from torch import nn

from nodecourse.models import MLPField

__all__ = [
    "GRADIENT_MODES",
    "ALL_MODES",
    "saved_tensor_bytes",
    "saved_activation_bytes",
    "cpu_peak_supported",
    "measure_peak",
    "MemoryConfig",
    "MemorySweep",
    "forward_backward",
    "run_sweep",
    "memory_sweep",
]

_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3  # glibc mallopt parameters
GRADIENT_MODES = ("backprop", "checkpoint", "adjoint")
#: Every route a sweep may measure: the default modes and "reversible" (with method="reversible_heun").
ALL_MODES = GRADIENT_MODES + ("reversible",)


def saved_tensor_bytes(fn: Callable[[], object], exclude: tuple[torch.Tensor, ...] = ()) -> int:
    """Bytes of the tensors autograd saves for backward while ``fn()`` runs (each storage once).

    Counted with :func:`torch.autograd.graph.saved_tensors_hooks`, so it works on CPU, CUDA and
    MPS alike; tensors in ``exclude`` (e.g. parameters, which live anyway) are not counted. This
    is the memory the graph keeps between forward and backward, the part that grows with the
    depth of an unrolled computation.
    """
    skip = {t.untyped_storage().data_ptr() for t in exclude}
    seen: set[tuple[int, int]] = set()
    total = 0

    def pack(t: torch.Tensor):
        nonlocal total
        if t.layout == torch.strided:
            key = (t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
            if key[0] not in skip and key not in seen:
                seen.add(key)
                total += key[1]
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    return total


def saved_activation_bytes(module: nn.Module, *inputs: torch.Tensor) -> int:
    """Bytes autograd keeps for the backward pass of ``module(*inputs).sum()``
    (:func:`saved_tensor_bytes` without the module's parameters, which live anyway)."""
    return saved_tensor_bytes(lambda: module(*inputs).sum(), exclude=tuple(module.parameters()))


def _status_bytes(key: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{key} not found in /proc/self/status")


def cpu_peak_supported() -> bool:
    """True where the ``cpu_method="rss"`` measurement works (Linux with a resettable high-water mark)."""
    return sys.platform.startswith("linux") and os.access("/proc/self/clear_refs", os.W_OK)


_MALLOC_SET = False


def _prepare_malloc() -> None:
    global _MALLOC_SET
    if not _MALLOC_SET:
        try:
            libc = ctypes.CDLL("libc.so.6")
            libc.mallopt(_M_MMAP_THRESHOLD, 64 * 1024)
            # Give freed memory at the top of the heap back at once, and grow it by no more than asked.
            libc.mallopt(_M_TRIM_THRESHOLD, 0)
            libc.mallopt(_M_TOP_PAD, 0)
        except OSError:  # not glibc: measurements may under-count reuse of freed memory
            pass
        _MALLOC_SET = True


def _release_free_memory() -> None:
    """Hand free heap pages back to the kernel (``malloc_trim``): memory freed by an earlier pass
    must not be resident when the next one reuses it, or the reuse would not show in the peak."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


@contextlib.contextmanager
def _native_stderr_silenced():
    """Send the process's file descriptor 2 to /dev/null: the profiler's C++ layer logs a line at
    every start and stop. Python exceptions and warnings are not affected (they are not written
    by C++ code to fd 2 while the pass runs; an exception propagates as usual)."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 (some embedded interpreters): nothing to silence
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _profiler_peak(fn: Callable[[], object]) -> int:
    """Peak of the CPU allocator's running total during ``fn()``, above its level before (bytes)."""
    import tempfile

    from torch.profiler import ProfilerActivity, profile

    with _native_stderr_silenced(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as fh:
            events = json.load(fh)["traceEvents"]
    totals = [
        (e["args"]["Total Allocated"], e["args"]["Bytes"])
        for e in events
        if e.get("name") == "[memory]" and e.get("args", {}).get("Device Type", 0) == 0
    ]
    if not totals:
        return 0
    before = totals[0][0] - totals[0][1]  # the running total just before the first event
    return max(0, max(total for total, _ in totals) - before)


def measure_peak(fn: Callable[[], object], device: str | torch.device = "cpu", cpu_method: str = "profiler") -> int:
    """Run ``fn()`` once and return the extra memory, in bytes, it held at its peak on ``device``
    (``cpu_method``: ``"profiler"`` or ``"rss"``, see the module docstring)."""
    device = torch.device(device)
    if cpu_method not in ("profiler", "rss"):
        raise ValueError(f"cpu_method={cpu_method!r} must be 'profiler' or 'rss'")
    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        fn()
        torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device) - before)
    if device.type != "cpu":
        raise ValueError(f"device={str(device)!r}: peak memory is measured on 'cpu' and 'cuda' only")
    if cpu_method == "profiler":
        return _profiler_peak(fn)
    if not cpu_peak_supported():
        raise RuntimeError("CPU peak memory needs Linux (/proc/self/clear_refs); run on Linux or on CUDA")
    _prepare_malloc()
    _release_free_memory()
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # reset the peak RSS to the current RSS
    before = _status_bytes("VmRSS:")
    fn()
    return max(0, _status_bytes("VmHWM:") - before)


@dataclass
class MemoryConfig:
    """One memory study: an MLP field, a batch, ``method`` with ``n`` equal steps on [0, 1]."""

    steps: tuple[int, ...] = (20, 50, 100, 200, 400)
    modes: tuple[str, ...] = GRADIENT_MODES
    batch: int = 256
    dims: tuple[int, int, int] = (64, 256, 64)
    method: str = "rk4"
    device: str = "cpu"
    dtype: str = "float32"
    seed: int = 0
    repeats: int = 1
    cpu_method: str = "profiler"


@dataclass
class MemorySweep:
    """Peak bytes of forward + backward per (mode, steps). ``rows``: dicts with ``mode``,
    ``steps``, ``peak_bytes``, ``nfe``, ``nfe_backward``."""

    config: MemoryConfig
    rows: list[dict] = field(default_factory=list)

    def peaks(self, mode: str) -> list[int]:
        return [r["peak_bytes"] for r in self.rows if r["mode"] == mode]

    def growth(self, mode: str) -> float:
        """Peak at the most steps divided by peak at the fewest."""
        p = self.peaks(mode)
        return p[-1] / max(p[0], 1)

    def table(self) -> list[dict]:
        """One dict per step count: ``steps`` and the peak MiB of each mode."""
        out = []
        for n in self.config.steps:
            row = {"steps": n}
            for r in self.rows:
                if r["steps"] == n:
                    row[f"{r['mode']} MiB"] = round(r["peak_bytes"] / 2**20, 1)
            out.append(row)
        return out


def forward_backward(func, y0, n_steps: int, mode: str, method: str = "rk4", adjoint_step=None) -> dict:
    """One forward solve on [0, 1] in ``n_steps`` equal steps plus one backward pass; returns the stats."""
    from nodecourse.solvers import odeint

    t = torch.tensor([0.0, 1.0], dtype=y0.dtype, device=y0.device)
    sol = odeint(func, y0, t, method=method, step_size=1.0 / n_steps, gradient=mode, max_steps=10 * n_steps)
    sol.ys[-1].pow(2).mean().backward()
    return dict(sol.stats)


def run_sweep(config: MemoryConfig, progress: bool = False) -> MemorySweep:
    """Measure in this process (see :func:`memory_sweep`)."""
    _prepare_malloc()  # before the warm-up, so no large block is served from memory kept earlier
    torch.manual_seed(config.seed)
    dtype = getattr(torch, config.dtype)
    d, hidden, d_out = config.dims
    if d != d_out:
        raise ValueError(f"dims={config.dims!r}: a vector field maps the state to its own size; use (d, hidden, d)")
    func = MLPField(d, hidden=(hidden,), activation="tanh").to(device=config.device, dtype=dtype)
    y0 = torch.randn(config.batch, config.dims[0], device=config.device, dtype=dtype, requires_grad=True)
    sweep = MemorySweep(config)
    points = [(m, n) for m in config.modes for n in config.steps]
    if progress:
        from tqdm.auto import tqdm

        points = tqdm(points, desc="peak memory", leave=False)
    for mode in config.modes:  # warm-up: lazy initialisation must not count as the first point's memory
        forward_backward(func, y0, config.steps[0], mode, config.method)
    for mode, n in points:
        stats = {}

        def once():
            stats.update(forward_backward(func, y0, n, mode, config.method))

        # The least of a few repeats: a stray allocation elsewhere in the process only ever adds.
        peak = min(measure_peak(once, config.device, config.cpu_method) for _ in range(config.repeats))
        func.zero_grad(set_to_none=True)
        y0.grad = None
        sweep.rows.append(
            {
                "mode": mode,
                "steps": n,
                "peak_bytes": peak,
                "nfe": stats.get("nfe"),
                "nfe_backward": stats.get("nfe_backward"),
            }
        )
    return sweep


def memory_sweep(
    config: MemoryConfig | None = None, *, isolated: bool = False, progress: bool = False, **overrides
) -> MemorySweep:
    """Peak memory of forward + backward against the number of steps, for each gradient mode.

    Args:
        config: the study (defaults: batch 256, 64-256-64 MLP, rk4, 20..400 steps); keyword
            ``overrides`` replace its fields (``steps=(10, 40)``...).
        isolated: CPU only: measure in a fresh Python subprocess (a few seconds to start); worth it
            with ``cpu_method="rss"``, where memory held by the calling process can disturb the figures.
    Returns:
        :class:`MemorySweep`.
    """
    config = MemoryConfig(**{**asdict(config or MemoryConfig()), **overrides})
    config.steps, config.modes, config.dims = tuple(config.steps), tuple(config.modes), tuple(config.dims)
    if config.cpu_method not in ("profiler", "rss"):
        raise ValueError(f"cpu_method={config.cpu_method!r} must be 'profiler' or 'rss'")
    unknown = [m for m in config.modes if m not in ALL_MODES]
    if unknown:
        raise ValueError(f"modes={unknown} are not gradient modes; valid: {list(ALL_MODES)}")
    if not isolated or torch.device(config.device).type != "cpu":
        return run_sweep(config, progress=progress)
    # glibc reads MALLOC_MMAP_THRESHOLD_ at start: every block above 64 KiB is mmapped and returned on free.
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), MALLOC_MMAP_THRESHOLD_="65536")
    done = subprocess.run(
        [sys.executable, "-m", "nodecourse.measure._memory", json.dumps(asdict(config))],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the memory subprocess failed (exit {done.returncode}): {done.stderr[-2000:]}")
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    return MemorySweep(config, rows)


def main(argv: list[str]) -> None:
    _prepare_malloc()
    spec = json.loads(argv[0])
    config = MemoryConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in spec.items()})
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    print(json.dumps(run_sweep(config).rows))


if __name__ == "__main__":
    main(sys.argv[1:])
