"""Course-wide switches: quick mode and the devices a lesson may offer.

Every notebook reads one switch, the environment variable ``NODECOURSE_QUICK``
(``1`` = quick mode: small data, few epochs, short sweeps, so a lesson runs in
well under two minutes on two CPU cores). Full mode reproduces the numbers at
the sizes each lesson states.
"""
from __future__ import annotations

import os
from typing import TypeVar

import torch

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
    devices = ["cpu"]
    if torch.cuda.is_available():
        devices.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    return devices


def default_device() -> torch.device:
    """The fastest available device (cuda, then mps, then cpu)."""
    devices = available_devices()
    for name in ("cuda", "mps"):
        if name in devices:
            return torch.device(name)
    return torch.device("cpu")


def resolve_device(device: str | torch.device | None) -> torch.device:
    """Turn a user's device argument into a ``torch.device``, with a clear error.

    ``None`` or ``"auto"`` means :func:`default_device`.
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        return default_device()
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(
            f"device={device!r} is not a device; use one of {available_devices()} or 'auto'"
        ) from exc
    if dev.type not in available_devices():
        raise ValueError(
            f"device={device!r} is not available on this machine; "
            f"available: {available_devices()} (or 'auto')"
        )
    return dev
