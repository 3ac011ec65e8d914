"""The DEQ package at its edges: maps that change shape or mix the batch, empty batches,
inputs of the wrong shape or dtype, backward passes through unconverged solves, run-away iterates
and the spectral radius of a non-normal Jacobian. Each case ends in a named error, a warning or
the right answer."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

from nodecourse import DEQ, fixed_point
from nodecourse.deq import FixedPointStatus, FixedPointWarning, spectral_radius
from nodecourse.deq._fixed_point import FixedPointBatchMixingError, FixedPointShapeError
from nodecourse.deq._layer import DEQDtypeError, DEQGradientWarning, DEQInputError
from nodecourse.deq._models import EquilibriumBlock

METHODS = ("picard", "anderson", "broyden")
F64 = torch.float64


def _counted(f):
    """``f`` with a call counter (``wrapped.calls``)."""

    def wrapped(z):
        wrapped.calls += 1
        return f(z, wrapped.calls)

    wrapped.calls = 0
    return wrapped


def _rows(batch: int, dim: int) -> torch.Tensor:
    """Distinct rows, so the samples of a batch converge at different iterations."""
    return (
        torch.arange(float(batch * dim), dtype=F64).reshape(batch, dim)
        * torch.arange(1.0, batch + 1, dtype=F64)[:, None]
    )


# --- case 1: the map's shape, every call --------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_a_map_that_transposes_a_non_square_state_later_is_named(method):
    x = _rows(2, 3)
    f = _counted(lambda z, call: (0.5 * z + x) if call < 4 else (0.5 * z + x).T.contiguous())
    with pytest.raises(FixedPointShapeError, match=r"shape \(3, 2\) on call 4 .*shape of z0"):
        fixed_point(f, torch.zeros(2, 3, dtype=F64), method=method)


def test_a_map_that_changes_size_is_named():
    with pytest.raises(FixedPointShapeError, match=r"shape \(4, 3\) on call 1"):
        fixed_point(lambda z: torch.cat([z, z]) * 0.5, torch.zeros(2, 3))
    with pytest.raises(FixedPointShapeError, match="a tuple"):
        fixed_point(lambda z: (z,), torch.zeros(2, 3))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("switch", [3, 5, 10])
def test_a_square_state_transposed_later_never_ends_success_off_a_fixed_point(method, switch):
    # the transposed output has z0's shape, so no shape check sees it, and from call `switch` on (after the
    # first call and its probe) the map mixes the samples. Whatever happens, SUCCESS must mean that the
    # returned z is a fixed point, to tol for every sample, of the map as it was last called.
    x = _rows(3, 3)
    f = _counted(lambda z, call: (0.5 * z + x) if call < switch else (0.5 * z + x).T.contiguous())
    try:
        r = fixed_point(f, torch.zeros(3, 3, dtype=F64), method=method, warn=False)
    except FixedPointBatchMixingError:
        return
    if r.success:
        fz = 0.5 * r.z + x
        fz = fz.T if f.calls >= switch else fz
        assert float(((fz - r.z).norm(dim=1) / fz.norm(dim=1)).max()) <= 1e-6 * (1 + 1e-9)


@pytest.mark.parametrize("method", METHODS)
def test_a_sample_frozen_before_the_map_starts_mixing_is_caught(method):
    # sample 0 is a fixed point from the start (x's row 0 is 0) and is frozen at once; from call 3 on the
    # map is transposed, so sample 0's output reads the other samples: at the end its residual is not 0
    x = _rows(3, 3)
    x[0] = 0
    f = _counted(lambda z, call: (0.5 * z + x) if call < 3 else (0.5 * z + x).T.contiguous())
    with pytest.raises(FixedPointBatchMixingError, match="sample 0 met tol=1e-06 at evaluation 1.*not a fixed point"):
        fixed_point(f, torch.zeros(3, 3, dtype=F64), method=method, warn=False)


# --- case 2: maps that mix the batch ------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_a_batch_mixing_map_is_refused_on_the_first_call(method):
    x = _rows(8, 4) / 50
    mixing = lambda z: 0.5 * z.mean(0, keepdim=True) + x  # noqa: E731
    with pytest.raises(FixedPointBatchMixingError, match="mixes the samples.*one problem"):
        fixed_point(mixing, torch.zeros(8, 4, dtype=F64), method=method)


def test_what_the_check_prevents_a_mixing_map_solved_per_sample_ends_above_tol():
    x = _rows(8, 4) / 50
    mixing = lambda z: 0.5 * z.mean(0, keepdim=True) + x  # noqa: E731
    worst = []
    for method in METHODS:
        r = fixed_point(mixing, torch.zeros(8, 4, dtype=F64), method=method, check_batch=False)
        fz = mixing(r.z)
        worst.append(float(((fz - r.z).norm(dim=1) / fz.norm(dim=1)).max()))
        assert r.success  # reported as converged ...
    assert max(worst) > 10 * 1e-6  # ... but at least one method's true residual is far above tol
    # solved as one problem (as the error says), the answer is right
    one = fixed_point(lambda v: mixing(v.reshape(8, 4)).reshape(1, -1), torch.zeros(1, 32, dtype=F64))
    z = one.z.reshape(8, 4)
    assert one.success and float((mixing(z) - z).norm() / mixing(z).norm()) <= 1e-6


@pytest.mark.parametrize("mix", ["mean over 256", "roll", "sum"])
def test_the_probe_sees_mixing_of_several_kinds(mix):
    batch = 256 if mix == "mean over 256" else 5
    x = torch.randn(batch, 3, dtype=F64)
    maps = {
        "mean over 256": lambda z: 0.5 * z.mean(0, keepdim=True) + x,
        "roll": lambda z: 0.5 * z.roll(1, dims=0) + x,
        "sum": lambda z: 0.1 * torch.tanh(z.sum(0)) + x,
    }
    with pytest.raises(FixedPointBatchMixingError):
        fixed_point(maps[mix], torch.zeros(batch, 3, dtype=F64))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_per_sample_map_passes_and_the_probe_is_one_uncounted_evaluation(method, dtype):
    torch.manual_seed(0)
    block = EquilibriumBlock(6, 2, width=16).to(dtype)
    x = torch.randn(64, 2, dtype=dtype)
    f = _counted(lambda z, call: block(z, x))
    with torch.no_grad():
        r = fixed_point(f, torch.zeros(64, 6, dtype=dtype), method=method, tol=1e-5)
    assert r.success and r.stats["probe_evals"] == 1
    assert f.calls == r.n_iter + 1  # n_iter counts the method's evaluations only
    f.calls = 0
    with torch.no_grad():
        r = fixed_point(f, torch.zeros(64, 6, dtype=dtype), method=method, tol=1e-5, check_batch=False)
    assert f.calls == r.n_iter and "probe_evals" not in r.stats


def test_one_problem_is_not_probed():
    f = _counted(lambda z, call: 0.5 * z + 1)
    r = fixed_point(f, torch.zeros(4, dtype=F64))  # a 1-d z0 is one problem
    assert r.success and f.calls == r.n_iter


# --- case 3: an empty batch ---------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(0, 4), (3, 0), (0,)])
def test_an_empty_z0_is_success_without_evaluating_f(shape):
    f = _counted(lambda z, call: 0.5 * z + 1)
    r = fixed_point(f, torch.zeros(shape))
    assert r.success and r.n_iter == 0 and f.calls == 0 and r.z.shape == torch.Size(shape)
    assert r.final_residual() == 0.0 and r.residuals.worst() == [] and bool(r.converged.all())
    assert "SUCCESS" in repr(r)


def test_a_deq_on_an_empty_batch_runs_forward_and_backward():
    torch.manual_seed(0)
    block = EquilibriumBlock(6, 2, width=16)
    x = torch.zeros(0, 2, requires_grad=True)
    out = DEQ(block, state=6)(x)
    assert out.shape == (0, 6)
    out.sum().backward()
    assert x.grad.shape == (0, 2)


# --- cases 4 and 5: DEQ inputs of the wrong shape -----------------------------------------------------


def _deq(dtype=torch.float32, **kw):
    torch.manual_seed(0)
    return DEQ(EquilibriumBlock(6, 2, width=16).to(dtype), state=6, **kw)


def test_a_1d_input_is_refused_not_read_as_a_batch():
    with pytest.raises(DEQInputError, match=r"x has shape \(2,\).*x\[None\] \(shape \(1, 2\)\)"):
        _deq()(torch.randn(2))
    assert _deq()(torch.randn(2)[None]).shape == (1, 6)  # the fix the message gives


def test_a_wrong_input_width_names_the_expected_shape():
    with pytest.raises(DEQInputError, match=r"x of shape \(3, 5\).*x \(B, 2\)"):
        _deq()(torch.randn(3, 5))


@pytest.mark.parametrize("z0_shape", [(3, 5), (4, 6), (3, 6, 1)])
def test_a_wrong_z0_shape_names_the_expected_shape(z0_shape):
    with pytest.raises(DEQInputError, match=rf"z0 has shape \({z0_shape[0]}, .*needs z0 of shape \(3, 6\)"):
        _deq()(torch.randn(3, 2), z0=torch.zeros(z0_shape))


def test_a_z0_for_another_batch_is_refused_without_an_int_state():
    deq = DEQ(EquilibriumBlock(6, 2, width=16))
    with pytest.raises(DEQInputError, match=r"needs z0 of shape \(3, \.\.\.\)"):
        deq(torch.randn(3, 2), z0=torch.zeros(4, 6))
    assert deq(torch.randn(3, 2), z0=torch.zeros(3, 6)).shape == (3, 6)


def test_an_error_inside_a_plain_callable_carries_the_shapes():
    deq = DEQ(lambda z, x: torch.tanh(0.1 * z + x), state=6)
    with pytest.raises(RuntimeError) as info:
        deq(torch.randn(3, 5))
    assert any("z of shape (3, 6) and x of shape (3, 5)" in note for note in info.value.__notes__)


# --- case 6: dtypes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "module_dtype, input_dtype, fix", [(torch.float32, F64, "x.float()"), (F64, torch.float32, "x.double()")]
)
def test_an_input_in_another_dtype_than_the_parameters_is_named(module_dtype, input_dtype, fix):
    deq = _deq(module_dtype)
    with pytest.raises(DEQDtypeError, match=rf"x has dtype {input_dtype}.*parameters are {module_dtype}") as info:
        deq(torch.randn(3, 2, dtype=input_dtype))
    assert fix in str(info.value) and isinstance(info.value, TypeError) and isinstance(info.value, RuntimeError)


def test_a_z0_in_another_dtype_is_named():
    with pytest.raises(DEQDtypeError, match=r"z0 has dtype torch.float64.*z0.float\(\)"):
        _deq()(torch.randn(3, 2), z0=torch.zeros(3, 6, dtype=F64))


# --- case 7: backward through an unconverged solve ----------------------------------------------------


def _hard_block():
    torch.manual_seed(0)
    return EquilibriumBlock(8, 3, width=20, init_scale=1.5).double(), torch.randn(6, 3, dtype=F64)


def test_backward_through_an_unconverged_forward_warns_by_default_and_is_far_off():
    block, x = _hard_block()

    def grads(deq):
        block.zero_grad()
        (deq(x) ** 2).mean().backward()
        return torch.cat([p.grad.flatten() for p in block.parameters()])

    deq = DEQ(block, max_iter=50, state=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = deq(x)  # forward only: quiet by default (the status is in stats)
    assert deq.stats["forward_status"] == "max_iter"
    with pytest.warns(DEQGradientWarning, match="forward solve ended MAX_ITER"):
        (out**2).mean().backward()
    assert deq.stats["backward_status"] == "success"  # the backward solve converged: the forward is the cause
    with pytest.warns(DEQGradientWarning):
        implicit = grads(DEQ(block, max_iter=50, state=8))
    unrolled = grads(DEQ(block, method="picard", backward="unrolled", tol=1e-300, max_iter=50, state=8))
    assert float((implicit - unrolled).norm() / unrolled.norm()) > 0.5  # what the warning is about


def test_an_unconverged_backward_solve_warns_and_names_it():
    torch.manual_seed(0)
    block = EquilibriumBlock(8, 3, width=20).double()
    deq = DEQ(block, tol=1e-10, max_iter=100, backward_max_iter=2, state=8)
    out = deq(torch.randn(6, 3, dtype=F64))
    assert deq.stats["forward_status"] == "success"
    with pytest.warns(DEQGradientWarning, match="backward solve ended MAX_ITER"):
        out.sum().backward()
    assert issubclass(DEQGradientWarning, FixedPointWarning)


def test_converged_solves_and_truncated_unrolled_blocks_stay_quiet():
    block, x = _hard_block()
    easy = EquilibriumBlock(8, 3, width=20, init_scale=0.5).double()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DEQ(easy, tol=1e-10, max_iter=200, state=8)(x).sum().backward()
        # backward="unrolled": the exact gradient of the truncated computation, nothing to warn about
        DEQ(block, method="picard", backward="unrolled", tol=1e-300, max_iter=5, state=8)(x).sum().backward()
        DEQ(block, max_iter=5, state=8, warn=False)(x).sum().backward()


def test_warn_true_also_warns_on_the_forward_and_other_values_are_refused():
    block, x = _hard_block()
    with pytest.warns(FixedPointWarning, match="MAX_ITER"):
        DEQ(block, max_iter=5, state=8, warn=True)(x)
    with pytest.raises(ValueError, match="warn='sometimes'"):
        DEQ(block, warn="sometimes")


# --- case 10: run-away iterates and the spectral radius -----------------------------------------------


@pytest.mark.parametrize("stop_mode", ["rel", "abs"])
def test_broyden_running_away_is_diverged_not_success(stop_mode):
    f = lambda z: z + torch.atan(z - 1)  # noqa: E731  (fixed point z = 1; Broyden runs off from z0 = 3)
    with pytest.warns(FixedPointWarning, match="DIVERGED"):
        r = fixed_point(f, torch.full((1, 1), 3.0, dtype=F64), method="broyden", stop_mode=stop_mode)
    assert r.status is FixedPointStatus.DIVERGED and not bool(r.converged.any())
    assert r.residuals.absolute.shape[0] == r.n_iter < 100  # stopped where it ran off, not at max_iter


def test_a_far_fixed_point_within_the_bound_is_still_success():
    # z* = 2e5 from z0 = 0: 200x the start's size max(|z0|, |f(z0)|, 1) = 1e3, far below 1e6
    r = fixed_point(lambda z: 0.995 * z + 1e3, torch.zeros(2, 1, dtype=F64), method="broyden", tol=1e-10)
    assert r.success
    torch.testing.assert_close(r.z, torch.full((2, 1), 2e5, dtype=F64))


def _nonnormal_complex_pair() -> torch.Tensor:
    # eigenvalues 0.2 +- 1.02i (|lambda| = 1.0416) and 0.5; the pair's block is far from normal,
    # so ||J^T v|| of the power method swings between about 0.55 and 1.9
    return torch.tensor([[0.2, 1.9, 0.0], [-0.55, 0.2, 0.0], [0.0, 0.0, 0.5]], dtype=F64)


def test_spectral_radius_is_exact_for_a_non_normal_complex_pair():
    A = _nonnormal_complex_pair()
    exact = torch.linalg.eigvals(A).abs().max()
    z = torch.randn(4, 3, dtype=F64, requires_grad=True)
    rho = spectral_radius(z @ A.T, z, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(rho, exact.expand(4), rtol=1e-10, atol=0)


@pytest.mark.parametrize("dim", [5, 16])
def test_spectral_radius_per_sample_matches_eigenvalues(dim):
    torch.manual_seed(dim)
    A = torch.randn(3, dim, dim, dtype=F64) / dim**0.5  # one non-symmetric matrix per sample
    z = torch.randn(3, dim, dtype=F64, requires_grad=True)
    rho = spectral_radius(torch.einsum("bij,bj->bi", A, z), z, n_iter=30)
    torch.testing.assert_close(rho, torch.linalg.eigvals(A).abs().amax(dim=1), rtol=1e-9, atol=0)


def test_spectral_radius_of_a_rank_deficient_jacobian():
    # J = u v^T: the Krylov space closes after 2 steps (Arnoldi breaks down), rho = |v . u|
    u, v = torch.tensor([1.0, 2.0, 0.0, 0.0], dtype=F64), torch.tensor([0.5, 0.0, 1.0, 0.0], dtype=F64)
    z = torch.randn(2, 4, dtype=F64, requires_grad=True)
    rho = spectral_radius((z @ v)[:, None] * u, z)
    torch.testing.assert_close(rho, torch.full((2,), 0.5, dtype=F64))
    with pytest.raises(ValueError, match="n_iter=0"):
        spectral_radius((z @ v)[:, None] * u, z, n_iter=0)


def test_spectral_radius_below_the_dimension_is_an_estimate_that_improves():
    torch.manual_seed(0)
    dim = 60
    c, s = math.cos(0.3), math.sin(0.3)
    D = torch.diag(torch.linspace(0.1, 0.8, dim, dtype=F64))
    D[:2, :2] = 0.95 * torch.tensor([[c, -s], [s, c]], dtype=F64)  # a leading complex pair
    Q, _ = torch.linalg.qr(torch.randn(dim, dim, dtype=F64))
    A = Q @ D @ Q.T
    z = torch.randn(1, dim, dtype=F64, requires_grad=True)
    f_out = z @ A.T
    errors = [
        abs(float(spectral_radius(f_out, z, n_iter=m, generator=torch.Generator().manual_seed(1))) - 0.95)
        for m in (5, 20, 60)
    ]
    assert errors[-1] < 1e-10 and errors[1] < 1e-3 and errors[0] >= errors[1]
