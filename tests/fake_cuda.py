"""A pretend CUDA device on a CPU-only machine, strict where real CUDA is strict.

Inside ``with fake_cuda():``

* ``torch.cuda.is_available()`` is True (one device), ``torch.cuda.synchronize()`` and the
  memory counters work, so ``nodecourse.config.resolve_device("cuda")`` succeeds;
* a tensor created with ``device="cuda"``, moved with ``.to("cuda")`` / ``.cuda()`` (modules
  included), or computed from such a tensor is a *device tensor*: it lives in CPU memory but
  reports ``device == cuda:0`` and ``is_cuda``;
* a tensor made by a factory without a device (``torch.zeros(3)``, ``torch.tensor(...)``,
  ``torch.from_numpy``), or by ``.cpu()``, is a *host tensor*;
* like real CUDA, an operation that mixes a device tensor with a host tensor of one or more
  dimensions raises ``RuntimeError`` (the hidden-CPU-tensor bug), and ``.numpy()`` or
  ``np.asarray`` on a device tensor raises ``TypeError`` (use ``.detach().cpu()``).

Tensors of unknown origin (autograd's gradients) are neutral: they take the kind of what they
meet. The checks run through a ``TorchFunctionMode``, so they see every torch call the code
under test makes, in the library or in a lesson.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator
from unittest import mock

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_map

CUDA = torch.device("cuda", 0)
CPU = torch.device("cpu")
_TAG = "_nodecourse_fake_device"  # "cuda" or "cpu" on tensors whose origin is known

# Real CUDA lets these take host tensors beside device tensors (copies and indexing).
# (Property accessors are new method-wrapper objects at each access: compare with ==, not is.)
_MIXING_ALLOWED = (
    torch.Tensor.copy_,
    torch.Tensor.__setitem__,
    torch.Tensor.__getitem__,
    torch.Tensor.data.__set__,
    torch.Tensor.grad.__set__,
    torch._has_compatible_shallow_copy_type,
)


def _tensors_in(obj, out: list) -> list:
    """The tensors in ``obj`` (nested lists, tuples and dicts), cheaper than a pytree walk."""
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            if isinstance(item, (torch.Tensor, list, tuple, dict)):
                _tensors_in(item, out)
    elif isinstance(obj, dict):
        for item in obj.values():
            _tensors_in(item, out)
    return out


def kind(t: torch.Tensor) -> str | None:
    return getattr(t, _TAG, None)


def _tag(out: Any, where: str) -> Any:
    for t in _tensors_in(out, []):
        if True:
            try:
                setattr(t, _TAG, where)
            except (AttributeError, RuntimeError):  # pragma: no cover - e.g. a C++-only tensor
                pass
    return out


def _is_cuda(device) -> bool:
    if device is None:
        return False
    if isinstance(device, int):
        return True
    return torch.device(device).type == "cuda"


def _to_cpu_device(x):
    if isinstance(x, torch.device) and x.type == "cuda":
        return CPU
    if isinstance(x, str) and x.startswith("cuda"):
        return "cpu"
    return x


def _fresh(out, inputs):
    """An alias when the op returned one of its inputs (a CPU 'move' is a no-op), so that
    tagging the result never re-tags the caller's tensor."""
    if isinstance(out, torch.Tensor) and any(out is t for t in inputs):
        return out.view_as(out)
    return out


class FakeCudaMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        tensors = _tensors_in(args, _tensors_in(kwargs, []))
        self_kind = kind(args[0]) if args and isinstance(args[0], torch.Tensor) else None

        if func == torch._C._nn._parse_to:  # argument parsing only (Module.to): keep "cuda" as asked
            return func(*args, **kwargs)
        # what a device tensor reports about itself
        if func == torch.Tensor.device.__get__:
            return CUDA if self_kind == "cuda" else func(*args)
        if func == torch.Tensor.is_cuda.__get__:
            return self_kind == "cuda"
        if func == torch.Tensor.get_device:
            return 0 if self_kind == "cuda" else -1
        if func in (torch.Tensor.numpy, torch.Tensor.__array__) and self_kind == "cuda":
            raise TypeError(
                "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
                "tensor to host memory first. (fake CUDA device: a .numpy() on a device tensor)"
            )
        if func == torch.Tensor.grad.__get__:
            out = func(*args)
            return _tag(out, self_kind) if out is not None and self_kind and kind(out) is None else out
        if func == torch.Tensor.data.__set__:
            func(*args)
            if kind(args[1]):
                _tag(args[0], kind(args[1]))
            return None

        # moves
        if func in (torch.Tensor.cuda, torch.Tensor.cpu):
            out = _fresh(func(args[0]) if func == torch.Tensor.cpu else args[0], tensors)
            return _tag(out, "cuda" if func == torch.Tensor.cuda else "cpu")
        if func == torch.Tensor.to:
            if len(args) > 1 and isinstance(args[1], torch.Tensor):  # .to(other): other's device
                device = CUDA if kind(args[1]) == "cuda" else (CPU if kind(args[1]) == "cpu" else None)
            else:
                device = torch._C._nn._parse_to(*args[1:], **kwargs)[0]
            call_args = tree_map(_to_cpu_device, args)
            call_kwargs = tree_map(_to_cpu_device, kwargs)
            if len(args) > 1 and isinstance(args[1], torch.Tensor):  # .to(other): dtype from other only
                call_args = (args[0], args[1].dtype, *args[2:])
            out = func(*call_args, **call_kwargs)
            if device is None:
                return _tag(out, self_kind) if self_kind else out
            return _tag(_fresh(out, tensors), "cuda" if _is_cuda(device) else "cpu")

        # factories and anything else with a device argument
        if "device" in kwargs:
            target = "cuda" if _is_cuda(kwargs["device"]) else "cpu"
            kwargs["device"] = _to_cpu_device(kwargs["device"])
            if isinstance(kwargs["device"], int):
                kwargs["device"] = "cpu"
            return _tag(_fresh(func(*args, **kwargs), tensors), target)

        # ordinary ops: device and host tensors must not meet (0-dim host tensors may, as in CUDA)
        kinds = {kind(t) for t in tensors}
        if "cuda" in kinds and not any(func == f for f in _MIXING_ALLOWED):
            host = [t for t in tensors if kind(t) == "cpu" and t.dim() > 0]
            if host:
                name = getattr(func, "__qualname__", getattr(func, "__name__", repr(func)))
                raise RuntimeError(
                    f"Expected all tensors to be on the same device, but found at least two devices, cuda:0 and "
                    f"cpu! (fake CUDA device: {name} got a host tensor of shape {tuple(host[0].shape)})"
                )
        out = func(*args, **kwargs)
        if func == torch.Tensor.__setitem__ or func == torch.Tensor.copy_:
            return out
        if "cuda" in kinds:
            return _tag(out, "cuda")
        if not tensors or "cpu" in kinds:
            return _tag(out, "cpu")
        return out


def _synchronize(device=None) -> None:
    return None


_parameter_new = torch.nn.Parameter.__new__


def _parameter_new_keeping_kind(cls, data=None, requires_grad=True):
    """A Parameter is where its data is (a new module's weights are on the host)."""
    param = _parameter_new(cls, data, requires_grad)
    _tag(param, kind(data) if isinstance(data, torch.Tensor) and kind(data) else "cpu")
    return param


@contextlib.contextmanager
def fake_cuda() -> Iterator[None]:
    """Pretend one CUDA device exists (see the module docstring)."""
    patches = [
        mock.patch("torch.cuda.is_available", lambda: True),
        mock.patch("torch.cuda.device_count", lambda: 1),
        mock.patch("torch.cuda.synchronize", _synchronize),
        mock.patch("torch.cuda.get_device_name", lambda *a, **k: "fake CUDA device"),
        mock.patch("torch.cuda.current_device", lambda: 0),
        mock.patch("torch.cuda.reset_peak_memory_stats", lambda *a, **k: None),
        mock.patch("torch.cuda.max_memory_allocated", lambda *a, **k: 0),
        mock.patch("torch.cuda.memory_allocated", lambda *a, **k: 0),
        mock.patch("torch.cuda.empty_cache", lambda: None),
        # The pretend device's tensors are drawn by the CPU generator: its state is the CPU's.
        mock.patch("torch.cuda.get_rng_state", lambda *a, **k: torch.get_rng_state()),
        mock.patch("torch.cuda.set_rng_state", lambda state, *a, **k: torch.set_rng_state(state)),
        mock.patch.object(torch.nn.Parameter, "__new__", _parameter_new_keeping_kind),
    ]
    with contextlib.ExitStack() as stack:
        for p in patches:
            stack.enter_context(p)
        stack.enter_context(FakeCudaMode())
        yield


@contextlib.contextmanager
def fake_cuda_device() -> Iterator[torch.device]:
    """``fake_cuda()`` with one CPU thread (what the device tests run under); yields ``cuda``."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with fake_cuda():
            yield torch.device("cuda")
    finally:
        torch.set_num_threads(threads)
