"""Leaving a model as it was found: what every audit (and step 5's in-place cast) restores."""

from __future__ import annotations

import contextlib

import torch
from torch import nn


@contextlib.contextmanager
def kept_as_found(model: nn.Module):
    """Within the block the audit may do anything to ``model``; afterwards (also after an error) its
    weights and buffers, every module's train/eval mode, every parameter's ``requires_grad`` and
    torch's global random state (CPU and CUDA) are as they were; a tensor cast or moved meanwhile
    gets its dtype and device back."""
    state = {k: v.detach().clone() for k, v in model.state_dict(keep_vars=True).items()}
    modes = {name: m.training for name, m in model.named_modules()}
    flags = {name: p.requires_grad for name, p in model.named_parameters()}
    rng = torch.get_rng_state()
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    try:
        yield
    finally:
        with torch.no_grad():
            for k, v in model.state_dict(keep_vars=True).items():
                if k not in state:
                    continue
                if v.shape == state[k].shape and v.dtype == state[k].dtype and v.device == state[k].device:
                    v.data.copy_(state[k])
                else:  # cast or moved meanwhile (step 5 may cast the model to float64): the original tensor back
                    v.data = state[k].clone()
        for name, m in model.named_modules():
            if name in modes:
                m.training = modes[name]
        for name, p in model.named_parameters():
            if name in flags:
                p.requires_grad_(flags[name])
        torch.set_rng_state(rng)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


def independent_copy(original: nn.Module, copy: nn.Module, x) -> bool:
    """Whether ``copy`` (a deep copy of ``original``) computes with its own weights only: one forward
    and backward of ``copy`` on ``x`` leaves no gradient on ``original``'s parameters. A closure made
    at construction (``self.f = lambda z: self.W(z)``) keeps pointing at the original's weights."""
    from nodecourse.audit import _inputs as I

    saved = {id(p): p.grad for p in original.parameters()}
    for p in original.parameters():
        p.grad = None
    try:
        with torch.enable_grad():
            out = I.call(copy, x)
            if out.requires_grad:
                out.float().sum().backward()
        return all(p.grad is None for p in original.parameters())
    finally:
        for p in original.parameters():
            p.grad = saved[id(p)]
        copy.zero_grad(set_to_none=True)
