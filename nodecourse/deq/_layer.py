"""``DEQ``: a deep equilibrium layer z* = f(z*, x), differentiated implicitly or by unrolling.

Implicit differentiation (the implicit function theorem): at z* = f(z*, x),

    dL/dθ = y ∂f/∂θ,   where y solves   y = y ∂f/∂z + dL/dz*     (a row vector, i.e. VJPs)

so the backward pass is a second fixed-point solve, on vector-Jacobian products of one
application of f at z*. Nothing of the forward iterations is stored: memory does not grow
with the number of forward iterations. Unrolled differentiation instead backpropagates
through every recorded iteration (memory grows with their number); truncated to a few
steps it becomes a weight-tied network of that depth.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable

import torch
from torch import nn

from nodecourse.deq._fixed_point import METHODS, FixedPointResult, fixed_point
from nodecourse.deq._regularizer import jacobian_regularizer
from nodecourse.deq._result import FixedPointWarning
from nodecourse.deq._settings import BACKWARDS, DEQ_ARGS, check_method_options, check_tol
from nodecourse.solvers import _field_checks as field_checks
from nodecourse.validation import RandomFieldError, SecondDerivativeError, check_args


class DEQInputError(ValueError):
    """``x`` or ``z0`` given to a DEQ has the wrong shape (a 1-D ``x``, batch sizes that differ,
    ``z0`` not ``(B, state)``, or an input width the block was not built for)."""


class DEQDtypeError(TypeError, RuntimeError):
    """``x`` or ``z0`` has another dtype than the DEQ's parameters. A ``RuntimeError`` too: that is
    what the operation inside ``f`` raised before this check named it."""


class DEQGradientWarning(FixedPointWarning):
    """A backward pass went through an unconverged solve (the forward one, the backward one, or
    both): the implicit gradient is exact only at a fixed point, and can be far off."""


def _cast(dtype: torch.dtype) -> str:
    """The method that converts a tensor or module to ``dtype``: ``double()``, ``float()``, ..."""
    return {
        torch.float64: "double()",
        torch.float32: "float()",
        torch.float16: "half()",
        torch.bfloat16: "bfloat16()",
    }.get(dtype, f"to({dtype})")


def unconverged_gradient_text(forward: FixedPointResult, backward: FixedPointResult) -> str:
    """The warning for a backward pass through an unconverged solve (``forward`` or ``backward``).

    The text holds the settings and statuses, not the residuals (they are in ``deq.stats``), so it
    repeats word for word across the steps of a training run and Python's default warning filter
    shows it once per setting, not once per step.
    """
    failed = [
        f"the {name} solve ended {r.status.name} ({r.stop_mode} residual above tol={r.tol:g} within "
        f"max_iter={r.max_iter})"
        for name, r in (("forward", forward), ("backward", backward))
        if not r.success
    ]
    return (
        f"DEQ backward pass through an unconverged solve: {' and '.join(failed)}; deq.stats holds the residuals. "
        f"The implicit gradient is exact only at a fixed point, so this one can be far from the true gradient. "
        f"What to try: raise max_iter or backward_max_iter, loosen tol, add the Jacobian regulariser "
        f"(deq.jacobian_loss()), or use backward='unrolled' for the exact gradient of the truncated solve; "
        f"DEQ(..., warn=False) silences this where an unconverged solve is intended"
    )


def random_implicit_text() -> str:
    """Why ``DEQ(backward="implicit")`` refuses a field that draws random numbers at every call."""
    return (
        "DEQ(backward='implicit') with a field that draws random numbers at every call (dropout in training "
        "mode): the implicit gradient assumes z* = f(z*, x) for one map f, but each call of this f draws a "
        "new mask, so the solve found a fixed point of no single map and the gradient would belong to no "
        "function that ran. Draw the mask once per forward pass (variational dropout, as torchdeq's "
        "VariationalDropout: the same mask at every iteration), put f in eval mode, or use "
        "DEQ(..., backward='unrolled') (backprop through the iterations that ran)"
    )


def implicit_backward_hook(
    f_z: torch.Tensor,
    z: torch.Tensor,
    *,
    solve: Callable[..., FixedPointResult],
    record: Callable[[FixedPointResult], None] | None = None,
) -> Callable:
    """The gradient hook of implicit differentiation, for ``f_z = f(z, x)`` with ``z`` the detached
    fixed point (a leaf that requires grad).

    Register it on an alias of ``f_z`` (``out = f_z.view_as(f_z)``), which the layer returns: it
    replaces the incoming gradient g by the solution y of y = y ∂f/∂z + g (found by
    ``solve(map, y0)``, here ``fixed_point``); autograd then carries y on through ``f_z``'s graph
    to the parameters and x. The VJPs y ∂f/∂z start at ``f_z`` itself, so they do not pass
    through the alias and do not fire the hook again (nor does a Jacobian regulariser built on
    ``f_z`` and ``z``).
    """

    def hook(grad: torch.Tensor | None) -> torch.Tensor | None:
        if grad is None:  # an undefined gradient (nothing downstream depends on the output)
            return None
        if torch.is_grad_enabled():
            # create_graph=True: the backward fixed point below is found without a graph; one
            # differentiable step past it would give a second derivative off by the Neumann series' rest
            raise SecondDerivativeError(
                "DEQ(backward='implicit') cannot give a differentiable gradient (create_graph=True: a gradient "
                "penalty, a Hessian-vector product): its backward fixed-point solve keeps no graph, and a "
                "gradient without it would get the second derivative wrong. Use DEQ(..., backward='unrolled') "
                "for the solve you differentiate twice (backprop through the iterations)"
            )

        def vjp_map(y: torch.Tensor) -> torch.Tensor:
            (yJ,) = torch.autograd.grad(f_z, z, y, retain_graph=True)
            return yJ + grad

        result = solve(vjp_map, grad)
        if record is not None:
            record(result)
        return result.z

    return hook


class DEQ(nn.Module):
    """Deep equilibrium layer over a field ``f(z, x)``: ``forward(x, z0=None)`` returns z* = f(z*, x).

    Args:
        f: the field, an ``nn.Module`` (its parameters are registered) or a callable, mapping
            ``z`` ``(B, ...)`` and ``x`` to the shape of ``z``, each sample independently.
        method: forward method, ``"anderson"`` (default), ``"broyden"`` or ``"picard"``.
        tol, max_iter, stop_mode: forward stopping criterion (see :func:`nodecourse.fixed_point`).
        backward: ``"implicit"`` (default; a backward fixed-point solve) or ``"unrolled"``
            (backprop through the recorded forward iterations; with ``max_iter=k`` and a ``tol``
            never reached, the same block truncated to k unrolled steps).
        backward_method, backward_tol, backward_max_iter: the backward solve's settings
            (default: the forward ones).
        method_options: extra options of the forward (and backward) method, e.g. ``{"m": 6}``.
        state: how to start when ``z0`` is not given: an int width (zeros ``(B, state)``) or a
            callable ``x -> z0``.
        warn: ``"backward"`` (default): warn (:class:`DEQGradientWarning`) when a backward pass goes
            through an unconverged solve, forward or backward, since the implicit gradient then
            can be far off; a forward-only call (inference, a truncated ``backward="unrolled"``
            block, whose gradient is exact for what it computed) stays quiet. ``True``: also warn
            on every forward solve that misses its tolerance. ``False``: never warn. The status is
            kept in :attr:`stats` either way.

    ``forward`` checks its inputs: ``x`` must be a batch ``(B, ...)`` (a 1-D ``x`` is refused, use
    ``x[None]``), ``z0`` must be ``(B, ...)`` (``(B, state)`` with an int ``state``); an ``x`` or
    ``z0`` in another dtype than the parameters raises :class:`DEQDtypeError` naming the fix.

    After each call :attr:`stats` holds the forward work (``forward_iters``, ``forward_residual``,
    ``forward_status``) and, once a backward pass has run, the backward work (``backward_iters``,
    ``backward_residual``, ``backward_status``); :attr:`forward_result` and :attr:`backward_result`
    hold the full :class:`FixedPointResult` objects.
    """

    def __init__(
        self,
        f: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        *,
        method: str = "anderson",
        tol: float = 1e-4,
        max_iter: int = 50,
        backward: str = "implicit",
        stop_mode: str = "rel",
        backward_method: str | None = None,
        backward_tol: float | None = None,
        backward_max_iter: int | None = None,
        method_options: dict[str, Any] | None = None,
        state: int | Callable[[torch.Tensor], torch.Tensor] | None = None,
        warn: bool | str = "backward",
    ):
        super().__init__()
        # every setting checked here, once, against nodecourse.deq._settings.DEQ_ARGS
        c = check_args(
            {
                "f": f,
                "method": method,
                "max_iter": max_iter,
                "backward": backward,
                "stop_mode": stop_mode,
                "backward_method": backward_method,
                "backward_max_iter": backward_max_iter,
                "method_options": method_options,
                "state": state,
                "warn": warn,
            },
            DEQ_ARGS,
            defaults=_DEQ_DEFAULTS,
        )
        tol = check_tol(tol, stop_mode, default=_DEQ_DEFAULTS["tol"])
        self.method_options = check_method_options(
            METHODS[method], method_options, name="method_options", as_keywords=False
        )
        self.backward_method = backward_method or method
        self.backward_tol = check_tol(backward_tol, stop_mode, name="backward_tol") if backward_tol is not None else tol
        self.backward_max_iter = c["backward_max_iter"] if backward_max_iter is not None else c["max_iter"]
        self.f = f
        self.method, self.tol, self.max_iter, self.stop_mode = method, tol, c["max_iter"], stop_mode
        self.backward = backward
        self.state = state
        self.warn = warn
        self.forward_result: FixedPointResult | None = None
        self.backward_result: FixedPointResult | None = None
        self.stats: dict[str, Any] = {}
        self._pair: tuple[torch.Tensor, torch.Tensor] | None = None

    def _options_for(self, method: str) -> dict[str, Any]:
        from nodecourse.deq._fixed_point import OPTIONS

        return {k: v for k, v in self.method_options.items() if k in OPTIONS[method]}

    def initial_state(self, x: torch.Tensor) -> torch.Tensor:
        """z0 for input ``x`` from :attr:`state` (zeros of width ``state``, or ``state(x)``)."""
        if self.state is None:
            raise ValueError("DEQ.forward needs z0: pass forward(x, z0=...) or build DEQ(f, state=width)")
        if callable(self.state):
            z0 = self.state(x)
            batch = x.shape[0] if isinstance(x, torch.Tensor) else None
            if (
                not isinstance(z0, torch.Tensor)
                or not z0.is_floating_point()
                or z0.dim() < 2
                or (batch is not None and z0.shape[0] != batch)
            ):
                got = f"shape {tuple(z0.shape)} ({z0.dtype})" if isinstance(z0, torch.Tensor) else type(z0).__name__
                raise DEQInputError(
                    f"DEQ's state callable returned {got} for x of shape {tuple(x.shape)}; "
                    f"state(x) must return a floating z0 of shape (B, ...) with B = x.shape[0] "
                    f"(one initial state per row), e.g. state=lambda x: x.new_zeros(x.shape[0], width)"
                )
            return z0
        return torch.zeros(x.shape[0], self.state, dtype=x.dtype, device=x.device)

    def _solve(self, F, z0, *, method, tol, max_iter, warn: bool, check_batch: bool) -> FixedPointResult:
        return fixed_point(
            F,
            z0,
            method=method,
            tol=tol,
            max_iter=max_iter,
            stop_mode=self.stop_mode,
            warn=warn,
            check_batch=check_batch,
            **self._options_for(method),
        )

    def _record_backward(self, result: FixedPointResult, forward: FixedPointResult) -> None:
        self.backward_result = result
        self.stats.update(
            backward_iters=result.n_iter, backward_residual=result.final_residual(), backward_status=result.status
        )
        if self.warn is not False and not (forward.success and result.success):
            warnings.warn(unconverged_gradient_text(forward, result), DEQGradientWarning, stacklevel=2)

    def check_input(self, x: Any, z0: torch.Tensor | None) -> None:
        """Refuse a 1-D ``x``, and a ``z0`` whose batch or width does not fit (raises :class:`DEQInputError`).

        Cheap (shape comparisons); an ``x`` that is not a tensor is the field's business.
        """
        batch = None
        if isinstance(x, torch.Tensor):
            if x.dim() < 2:
                raise DEQInputError(
                    f"x has shape {tuple(x.shape)}, but a DEQ takes a batch x of shape (B, ...) and solves one "
                    f"fixed point per row; for one sample pass x[None] (shape {(1, *x.shape)})"
                )
            batch = x.shape[0]
        if z0 is None:
            return
        if not isinstance(z0, torch.Tensor) or not z0.is_floating_point():
            raise TypeError(
                f"z0 must be a floating-point tensor (B, ...), got {type(z0).__name__}"
                + (f" of dtype {z0.dtype}" if isinstance(z0, torch.Tensor) else "")
            )
        if batch is None:
            return
        if isinstance(self.state, int):
            fits, want = tuple(z0.shape) == (batch, self.state), f"({batch}, {self.state}) (B, state)"
        else:
            fits, want = z0.dim() >= 2 and z0.shape[0] == batch, f"({batch}, ...)"
        if not fits:
            raise DEQInputError(
                f"z0 has shape {tuple(z0.shape)}, but for x of shape {tuple(x.shape)} this DEQ "
                f"needs z0 of shape {want}: one initial state per row of x"
            )

    def dtype_error(self, x: Any, z0: torch.Tensor, cause: BaseException) -> DEQDtypeError | None:
        """A :class:`DEQDtypeError` when ``x`` or ``z0`` is in another dtype than the parameters (all of
        one dtype), to replace the error ``cause`` that ``f`` raised; None when dtypes are not the cause."""
        params = {p.dtype for p in self.parameters() if p.is_floating_point()}
        if len(params) != 1:
            return None
        (dtype,) = params
        for name, t in (("x", x), ("z0", z0)):
            if isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != dtype:
                return DEQDtypeError(
                    f"{name} has dtype {t.dtype}, but the DEQ's parameters are {dtype} (f raised "
                    f"{type(cause).__name__}: {cause}). Give both one dtype: {name}.{_cast(dtype)}, or "
                    f"model.{_cast(t.dtype)} (the module holding the DEQ) to compute in {t.dtype}"
                )
        return None

    def _solve_forward(self, F, x: Any, z0: torch.Tensor, from_state: bool = False) -> FixedPointResult:
        """The forward solve, its errors named: a dtype mismatch becomes :class:`DEQDtypeError`; any
        other error from f gets a note with the shapes it was called with."""
        try:
            return self._solve(
                F,
                z0,
                method=self.method,
                tol=self.tol,
                max_iter=self.max_iter,
                warn=self.warn is True,
                check_batch=True,
            )
        except RuntimeError as err:
            named = self.dtype_error(x, z0, err)
            if named is not None:
                raise named from err
            if from_state and callable(self.state):
                raise DEQInputError(
                    f"f(z, x) raised {type(err).__name__} on z0 from DEQ's state callable (shape {tuple(z0.shape)}; "
                    f"x of shape {tuple(x.shape)}): {err}. Make state(x) return the shape f takes for z (or pass "
                    f"forward(x, z0=...)); if f itself is at fault, call it once on its own to see"
                ) from err
            shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            err.add_note(f"(raised in DEQ.forward by f(z, x) with z of shape {tuple(z0.shape)} and x of shape {shape})")
            raise

    def forward(self, x: torch.Tensor, z0: torch.Tensor | None = None) -> torch.Tensor:
        """z* ``(B, ...)`` (shape of ``z0``) for input ``x``.

        Implicit mode with grad enabled returns f(z*, x), one application of f past the solver's
        iterate (it differs from z* by the final residual); without grad it returns the iterate.
        """
        self.check_input(x, z0)
        from_state = z0 is None
        z0 = self.initial_state(x) if z0 is None else z0  # z0 is None exactly when from_state

        def F(z):
            return self.f(z, x)

        self._pair = None
        if self.backward == "unrolled":
            result = self._solve_forward(F, x, z0, from_state)
            out = result.z
        else:
            with torch.no_grad():
                result = self._solve_forward(F, x, z0, from_state)
            z_star = result.z.detach()
            out = z_star
            if torch.is_grad_enabled():
                z_leaf = z_star.clone().requires_grad_()
                # one application of f: the only graph kept for backward
                f_z, drew = field_checks.call_keeping_rng(lambda: self.f(z_leaf, x), z_leaf.device)
                if drew:
                    raise RandomFieldError(random_implicit_text())
                # the VJPs of a map the forward probe found per-sample act per sample too: no second probe;
                # the backward pass warns itself (one warning naming both solves), so its solve does not
                solve = lambda vjp_map, y0: self._solve(
                    vjp_map,
                    y0,
                    method=self.backward_method,  # noqa: E731
                    tol=self.backward_tol,
                    max_iter=self.backward_max_iter,
                    warn=False,
                    check_batch=False,
                )
                record = lambda r, forward=result: self._record_backward(r, forward)  # noqa: E731
                out = f_z.view_as(f_z)
                out.register_hook(implicit_backward_hook(f_z, z_leaf, solve=solve, record=record))
                self._pair = (f_z, z_leaf)
        self.forward_result = result
        self.backward_result = None
        self.stats = dict(
            forward_iters=result.n_iter,
            forward_residual=result.final_residual(),
            forward_status=result.status,
            backward_iters=None,
            backward_residual=None,
            backward_status=None,
        )
        return out

    def jacobian_loss(self, n_samples: int = 1, **kwargs) -> torch.Tensor:
        """Hutchinson estimate of ||∂f/∂z||_F² at the last forward's fixed point (mean over the batch),
        differentiable: add ``weight * deq.jacobian_loss()`` to the training loss (implicit mode only)."""
        if self._pair is None:
            raise RuntimeError("jacobian_loss needs a forward pass with backward='implicit' and grad enabled first")
        f_z, z = self._pair
        return jacobian_regularizer(f_z, z, n_samples, **kwargs)

    def extra_repr(self) -> str:
        return (
            f"method={self.method!r}, tol={self.tol:g}, max_iter={self.max_iter}, backward={self.backward!r}, "
            f"backward_method={self.backward_method!r}, backward_tol={self.backward_tol:g}"
        )


#: DEQ's defaults, for the messages of its constructor's checks (read from its signature).
_DEQ_DEFAULTS = {
    name: p.default
    for name, p in inspect.signature(DEQ.__init__).parameters.items()
    if p.default is not inspect.Parameter.empty
}

__all__ = ["DEQ", "BACKWARDS", "implicit_backward_hook"]
