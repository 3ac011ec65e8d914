"""Memory a training step holds for its backward pass, measured on any device."""
from __future__ import annotations

from typing import Callable

import torch


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
