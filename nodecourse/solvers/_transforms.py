"""torch.func transforms and forward-mode AD on the gradient routes that keep no graph.

``gradient="checkpoint"``, ``"adjoint"`` and ``"reversible"`` (and gradients with respect to the
output times) are ``torch.autograd.Function`` s whose backward pass solves or replays; torch.func
(``grad``, ``vjp``, ``jacrev``, ``jacfwd``, ``hessian``, ``jvp``) cannot transform them, and forward-mode
AD (``torch.autograd.forward_ad``, ``torch.func.jvp``) would need a tangent solve they do not have.
:func:`refuse_transforms` names that before the solve, with the route that works:
``gradient="backprop"`` (its operations are torch's own, so every transform and forward mode go
through them). ``torch.func.vmap`` fails on every route, backprop included: the step control reads
numbers on the host (data-dependent control flow); :func:`refuse_vmap` says so on every route, before
the solve, with how to batch instead.

``torch.autograd.grad`` and ``torch.autograd.functional`` (``jacobian``, ``hessian``, ``vjp``, ``jvp``,
``hvp``: built on reverse mode) are not transforms: they work on every route that gives what they
need (second order: backprop, checkpoint, reversible).
"""

from __future__ import annotations

import torch
import torch.autograd.forward_ad as fwAD

from nodecourse.solvers._dependencies import all_tensors


class TransformError(RuntimeError):
    """A torch.func transform or forward-mode AD met a solve route that cannot support it."""


def _active_transform() -> str | None:
    """The innermost torch.func transform running now (``"Vmap"``, ``"Grad"``, ``"Jvp"``, ...), or None."""
    if not torch._C._are_functorch_transforms_active():
        return None
    interpreter = torch._C._functorch.peek_interpreter_stack()
    return interpreter.key().name if interpreter is not None else "a torch.func transform"


def _dual(x) -> bool:
    return isinstance(x, torch.Tensor) and fwAD.unpack_dual(x).tangent is not None


def vmap_error(route: str) -> TransformError:
    return TransformError(
        f"{route}: torch.func.vmap cannot run an odeint solve (on any gradient route): the step-size control and "
        f"the output times read numbers on the host (float(t), error ratios), which vmap refuses as data-dependent "
        f"control flow. Batch without vmap: stack the inputs along a first dimension of y0 (one solve, shared "
        f"steps), or per_sample=True for each row's own steps; per-example parameters can ride in the state"
    )


def refuse_vmap(route: str, func, *tensors) -> None:
    """Raise :func:`vmap_error` when the innermost torch.func transform is ``vmap`` and a batched tensor
    reaches the solve (``tensors``: ``y0``'s parts and ``t``; or a tensor ``func`` holds). A vmapped
    function whose solve sees no batched tensor runs as usual. Costs a flag read outside torch.func."""
    if _active_transform() != "Vmap":
        return
    batched = torch._C._functorch.is_batchedtensor
    if any(isinstance(x, torch.Tensor) and batched(x) for x in tensors) or any(batched(x) for x in all_tensors(func)):
        raise vmap_error(route)


def refuse_transforms(route: str, func, *tensors) -> None:
    """Raise :class:`TransformError` when ``route`` (``"gradient='checkpoint'"``, ...) runs inside a
    torch.func transform, or with a forward-mode dual tensor among ``tensors`` (``y0``, ``t``) or the
    tensors ``func`` holds. Costs a flag read, plus a search of ``func`` inside a dual level."""
    transform = _active_transform()
    if transform == "Vmap":
        raise vmap_error(route)
    if transform is not None:
        raise TransformError(
            f"{route} inside torch.func ({transform} transform: grad, vjp, jacrev, jacfwd, hessian, jvp): the "
            f"route is an autograd.Function whose backward pass solves again, which torch.func cannot transform. "
            f"Use gradient='backprop' (torch.func and forward mode go through its operations), or "
            f"torch.autograd.grad / torch.autograd.functional (reverse mode, outside torch.func) with this route"
        )
    if getattr(fwAD, "_current_level", 0) < 0:  # no dual level open: no forward-mode tangents anywhere
        return
    if any(_dual(x) for x in tensors) or any(_dual(x) for x in all_tensors(func)):
        raise TransformError(
            f"{route} with forward-mode AD (a dual tensor from torch.autograd.forward_ad reaches the solve): the "
            f"route keeps no graph and has no tangent solve, so the tangent would be lost. Use gradient='backprop' "
            f"(forward mode goes through its operations), or reverse mode (torch.autograd.functional.jvp builds "
            f"the product from two reverse passes; it needs a route with second derivatives: backprop, "
            f"checkpoint, reversible)"
        )
