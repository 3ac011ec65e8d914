"""Checks on the field ``func(t, y)`` that catch silent wrong answers: an update of ``y`` in place,
a field that mixes the batch rows in per-sample mode, and parameters in another dtype or on
another device than the state.

They run where they are cheap: the in-place test is a comparison of ``y``'s version counter
around every call (two attribute reads); the batch probe and the dtype/device diagnosis run
on the first call only (:class:`~nodecourse.solvers._rk.CheckedFunc` calls them).
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn


class InPlaceFieldError(ValueError):
    """``func(t, y)`` changed ``y`` in place (the solver's state tensor)."""


class BatchMixingError(ValueError):
    """``per_sample=True`` with a field whose output for one row depends on the other rows."""


class PerSampleTimeError(ValueError, RuntimeError):
    """``per_sample=True`` passes ``t`` of shape ``(B,)`` (one time per row) and ``func`` failed on it
    where it works with a 0-d ``t``. A ``RuntimeError`` too: that is what ``func`` raised."""


class FieldMismatchError(TypeError, RuntimeError):
    """``func``'s tensors (a module's parameters, a tensor it closes over) are in another dtype or
    on another device than ``y0``. A ``RuntimeError`` too: that is what the operation inside
    ``func`` raised before this check named it."""


def versions_tracked() -> bool:
    """Whether tensors made now carry a version counter (not under ``torch.inference_mode``)."""
    return not torch.is_inference_mode_enabled()


def inplace_error(before: int | None = None, after: int | None = None) -> InPlaceFieldError:
    counter = f" (y's version counter went from {before} to {after} during the call)" if before is not None else ""
    return InPlaceFieldError(
        f"func(t, y) changed y in place{counter}. The solver passes its own state tensors to func, so an "
        f"in-place update (y.mul_(2), y += ..., y[...] = ..., nn.ReLU(inplace=True) applied to y) corrupts "
        f"the solve. Return a new tensor instead, e.g. `return 2 * y` rather than `y.mul_(2); return y`. "
        f"(The caller's y0 was not changed: the solver works on a copy of it.)"
    )


# ---------------------------------------------------------------------------------------------
# dtype / device of the field's tensors


def field_tensors(func) -> list[tuple[str, str, torch.Tensor]]:
    """``(owner, what, tensor)`` for the floating tensors ``func`` carries: an ``nn.Module``'s parameters
    and buffers (also of a bound method's module), and tensors or modules a function closes over."""
    found: list[tuple[str, str, torch.Tensor]] = []
    wrapped = getattr(func, "__wrapped__", None)  # a wrapper (e.g. the tuple-state adapter): look inside
    if wrapped is not None:
        return field_tensors(wrapped)
    owners = [("func", func)]
    owner_of_method = getattr(func, "__self__", None)
    if owner_of_method is not None:
        owners.append(("func.__self__", owner_of_method))
    code = getattr(func, "__code__", None)
    for name, cell in zip(getattr(code, "co_freevars", ()), getattr(func, "__closure__", None) or ()):
        try:
            owners.append((name, cell.cell_contents))
        except ValueError:  # an empty cell
            continue
    module_globals = getattr(func, "__globals__", {})
    owners += [(name, module_globals[name]) for name in getattr(code, "co_names", ()) if name in module_globals]
    for label, owner in owners:
        if isinstance(owner, nn.Module):
            found += [(label, f"parameter {n!r}", p) for n, p in owner.named_parameters()]
            found += [(label, f"buffer {n!r}", b) for n, b in owner.named_buffers()]
        elif isinstance(owner, torch.Tensor):
            found.append((label, "tensor", owner))
    return [entry for entry in found if torch.is_floating_point(entry[2])]


_CAST = {torch.float16: "half()", torch.bfloat16: "bfloat16()", torch.float32: "float()", torch.float64: "double()"}


def _cast(dtype: torch.dtype) -> str:
    return _CAST.get(dtype, f"to({dtype})")


def mismatch_error(func, y: torch.Tensor, cause: BaseException | None = None) -> FieldMismatchError | None:
    """A named error when a tensor of ``func`` has another dtype or device than ``y``, else None."""
    for owner, what, x in field_tensors(func):
        if x.dtype == y.dtype and x.device == y.device:
            continue
        if x.dtype != y.dtype:
            fix = f"give both one dtype: y0.{_cast(x.dtype)} or {owner}.{_cast(y.dtype)}"
        else:
            fix = f"put both on one device: {owner}.to({str(y.device)!r}) or y0.to({str(x.device)!r})"
        raised = f" func raised {type(cause).__name__}: {cause}." if cause is not None else ""
        return FieldMismatchError(
            f"the field's {owner} ({what}) has dtype {x.dtype} on {x.device}, but y0 has "
            f"dtype {y.dtype} on {y.device}.{raised} Fix: {fix}"
        )
    return None


def per_sample_time_error(func, t: torch.Tensor, y: torch.Tensor, cause: BaseException) -> PerSampleTimeError | None:
    """A named error when ``func(t, y)`` raised with ``t`` of shape ``(B,)`` but runs with one 0-d time
    (tried once, on this error path only); None when the time's shape is not the cause."""
    try:
        func(t[0], y)
    except Exception:  # noqa: BLE001 (any failure: t's shape is not the only cause, keep the original error)
        return None
    return PerSampleTimeError(
        f"per_sample=True gives func one time per batch row: t has shape {tuple(t.shape)} for y of shape "
        f"{tuple(y.shape)}, and func raised {type(cause).__name__}: {cause}. It works with a 0-d t, so broadcast "
        f"t over the row's other dimensions, e.g. t[:, None] * y for y of shape (B, D) "
        f"(t.reshape(-1, *[1] * (y.dim() - 1)) in general)"
    )


# ---------------------------------------------------------------------------------------------
# per_sample: rows must not see each other


def _probe_state(y: torch.Tensor) -> torch.Tensor:
    """``y`` (shape ``(B, ...)``) with row 0 replaced by the row that differs most from it (a state
    the field already accepts, so no domain trouble); identical rows get a relative nudge."""
    rows = y.detach().reshape(y.shape[0], -1)
    gap = (rows[1:] - rows[0]).abs().amax(dim=1)
    donor = int(gap.argmax()) + 1
    probe = y.detach().clone()
    if float(gap[donor - 1]) > 0:
        probe[0] = y.detach()[donor]
    else:
        probe[0] = probe[0] * 1.125 + 0.125
    return probe


def rng_state(device: torch.device):
    """The random-number state a call of ``func`` starts from (the CPU's, and the device's on CUDA)."""
    return torch.get_rng_state(), (torch.cuda.get_rng_state(device) if device.type == "cuda" else None)


@contextlib.contextmanager
def replayed_rng(state, device: torch.device):
    """Run with the random-number state ``state`` (from :func:`rng_state`), then restore the current
    one: a call inside draws what the recorded call drew (the same dropout mask) and the caller's
    random stream is left as it was."""
    cpu, cuda = state
    with torch.random.fork_rng(devices=[device] if cuda is not None else []):
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state(cuda, device)
        yield


def _same_rng(a, b) -> bool:
    return torch.equal(a[0], b[0]) and (a[1] is None or torch.equal(a[1], b[1]))


def call_keeping_rng(call, device: torch.device):
    """``(call(), drew)``: run ``call`` from the current random state and restore that state after it
    (a probe must not shift the random numbers the solve draws next, or a seeded run would differ
    from backprop's); ``drew`` says whether ``call`` consumed random numbers (a random field:
    dropout in training mode). Costs two copies of the generator state (5 kB on the CPU)."""
    state = rng_state(device)
    with replayed_rng(state, device):
        out = call()
        drew = not _same_rng(rng_state(device), state)
    return out, drew


def check_rows_independent(func, t: torch.Tensor, y: torch.Tensor, f: torch.Tensor, rng=None) -> None:
    """Raise :class:`BatchMixingError` when ``func``'s output for rows 1.. changes if only row 0 of
    ``y`` changes. ``f = func(t, y)``; one more evaluation of ``func`` (run in the caller's grad
    mode: a field may differentiate inside; ``func`` checks its output).
    Shapes: ``y``, ``f``: ``(B, ...)`` with ``B >= 2``; ``t``: ``(B,)``. ``rng``: the random state
    ``f``'s call started from (:func:`rng_state`): the probe replays it, so a field that draws random
    numbers (dropout in training mode) draws the same ones.

    A row-independent field gives bit-identical rows (a tolerance of 16 ulp of the largest slope
    allows for kernels whose rounding depends on the batch); a batch mean of ``B`` rows moves them
    by about ``|row gap| / B``, far above it.
    """
    with replayed_rng(rng, y.device) if rng is not None else contextlib.nullcontext():
        f_probe = func(t, _probe_state(y))
    with torch.no_grad():
        rest, rest_probe = f.detach()[1:], f_probe.detach()[1:].to(f.dtype)
        same = (rest == rest_probe) | (torch.isnan(rest) & torch.isnan(rest_probe))
        change = torch.where(same, torch.zeros_like(rest), (rest_probe - rest).abs()).reshape(len(rest), -1)
        change = torch.nan_to_num(change, nan=float("inf"))
        per_row = change.amax(dim=1)
        scale = float(torch.nan_to_num(rest.abs(), nan=0.0, posinf=0.0).max())
        tolerance = 16 * torch.finfo(f.dtype).eps * scale + torch.finfo(f.dtype).tiny
        worst = int(per_row.argmax())
        if float(per_row[worst]) <= tolerance:
            return
    raise BatchMixingError(
        f"per_sample=True needs a field that treats each batch row on its own, but func mixes the rows: "
        f"changing row 0 of y changed dy/dt in row {worst + 1} by {float(per_row[worst]):.3g} (largest |dy/dt| "
        f"{scale:.3g}). Per-sample mode steps every row with its own step size and time, so such a field (a mean "
        f"or sum over the batch, BatchNorm in training mode, attention across the batch) gives a different answer "
        f"than the batch solve. Use per_sample=False, or make func act on each row alone (e.g. BatchNorm in eval "
        f"mode, LayerNorm)"
    )


class RngJumps:
    """An ``on_step`` callback wrapped so that a replay can follow it: where the callback moved the
    random stream (it drew random numbers: a noisy plot, a random probe), the state it left is kept
    by event number; :meth:`replayer` gives the replay's ``on_step``, which sets the stream to that
    state at the same event. Without it a replay of a random field (dropout) that does not call the
    user's callback draws other masks than the forward did. Costs two copies of the generator state
    per step (5 kB on the CPU)."""

    def __init__(self, on_step, device: torch.device):
        self.on_step, self.device = on_step, device
        self.jumps: dict[int, tuple] = {}
        self.count = 0

    def __call__(self, event):
        before = rng_state(self.device)
        try:
            return self.on_step(event)
        finally:
            after = rng_state(self.device)
            if not _same_rng(before, after):
                self.jumps[self.count] = after
            self.count += 1

    def replayer(self):
        """The replay's ``on_step``: at event ``n``, the random state the callback left in the forward."""
        count = [0]

        def replay(event) -> None:
            state = self.jumps.get(count[0])
            if state is not None:
                torch.set_rng_state(state[0])
                if state[1] is not None:
                    torch.cuda.set_rng_state(state[1], self.device)
            count[0] += 1

        return replay
