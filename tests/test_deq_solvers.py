"""Fixed-point solvers: statuses, the stopping criterion, batching, and iteration counts
against Picard and torchdeq on contractions with spectral radius 0.9-0.99."""

from __future__ import annotations

import warnings

import pytest
import torch

from nodecourse import fixed_point
from nodecourse.deq import FixedPointError, FixedPointStatus, FixedPointWarning
from nodecourse.deq._compare import compare_solvers, run_nodecourse, run_torchdeq, torchdeq_available
from nodecourse.deq._problems import contraction, expansion, reflection, two_equilibria

METHODS = ("picard", "anderson", "broyden")


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_solvers_find_the_fixed_point_of_a_contraction(method, dtype):
    p = contraction("linear", 0.9, dim=20, batch=3, dtype=dtype)
    tol = 1e-5 if dtype == torch.float32 else 1e-10
    r = fixed_point(p.f, p.z0, method=method, tol=tol, max_iter=2000)
    assert r.status is FixedPointStatus.SUCCESS and r.success and r.returned == "converged"
    assert r.z.shape == p.z0.shape and r.z.dtype == dtype
    err = (r.z - p.z_star).norm(dim=1) / p.z_star.norm(dim=1)
    assert err.max() < 100 * tol  # residual tol, error <= tol / (1 - rho)
    assert r.n_iter == len(r.residuals) == r.residuals.absolute.shape[0]
    assert r.residuals.relative.shape == (r.n_iter, 3)
    assert bool(r.converged.all())


@pytest.mark.parametrize("method", METHODS)
def test_stopping_criterion_is_the_one_documented(method):
    """Stops at the first evaluation where every sample's relative residual <= tol, not before."""
    p = contraction("tanh", 0.95, dim=10, batch=4)
    r = fixed_point(p.f, p.z0, method=method, tol=1e-6, max_iter=500)
    worst = r.residuals.worst("rel")
    assert worst[-1] <= 1e-6 < max(worst[:-1])
    # the relative residual is ||f(z) - z|| / ||f(z)|| at the returned iterate
    fz = p.f(r.z)
    rel = (fz - r.z).norm(dim=1) / fz.norm(dim=1)
    assert rel.max() <= 1e-6 * (1 + 1e-9)
    ra = fixed_point(p.f, p.z0, method=method, tol=1e-6, max_iter=500, stop_mode="abs")
    assert ra.success and (p.f(ra.z) - ra.z).norm(dim=1).max() <= 1e-6 * (1 + 1e-9)


def test_batch_samples_are_independent():
    p = contraction("tanh", 0.9, dim=8, batch=5)
    together = fixed_point(p.f, p.z0, method="anderson", tol=1e-10)
    for b in range(5):
        alone = fixed_point(lambda z: p.f(z.expand(5, -1))[b : b + 1], p.z0[b : b + 1], method="anderson", tol=1e-10)
        torch.testing.assert_close(alone.z[0], together.z[b], rtol=1e-8, atol=1e-10)


def test_reflection_under_picard_is_not_success():
    p = reflection()
    with pytest.warns(FixedPointWarning, match="MAX_ITER"):
        r = fixed_point(p.f, p.z0, method="picard", tol=1e-8, max_iter=50)
    assert r.status is FixedPointStatus.MAX_ITER and not r.success and r.returned == "best"
    assert r.residuals.worst("abs") == pytest.approx([0.6] * 50)  # it cycles 0.2, 0.8, 0.2, ...
    # damping (Krasnoselskii-Mann) or Anderson find z = 1/2
    assert fixed_point(p.f, p.z0, method="picard", damping=0.5).success
    ra = fixed_point(p.f, p.z0, method="anderson")
    assert ra.success and abs(float(ra.z) - 0.5) < 1e-6


def test_diverging_map_is_not_success():
    p = expansion()
    with pytest.warns(FixedPointWarning, match="DIVERGED"):
        r = fixed_point(p.f, p.z0, method="picard", max_iter=500)
    assert r.status is FixedPointStatus.DIVERGED and r.n_iter < 500
    # best by the relative residual, which tends to 1/2 as z runs away: the last iterate
    assert r.returned == "best" and r.final_residual() == min(r.residuals.worst("rel"))
    with pytest.warns(FixedPointWarning, match="DIVERGED"):
        ra = fixed_point(p.f, p.z0, method="picard", max_iter=500, stop_mode="abs")
    assert ra.status is FixedPointStatus.DIVERGED and float(ra.z) == 0.0  # by absolute residual: the start
    with pytest.raises(FixedPointError, match="DIVERGED"):
        fixed_point(p.f, p.z0, method="picard", throw=True)


def test_non_finite_is_reported():
    f = lambda z: torch.where(z > 3, torch.full_like(z, float("nan")), z + 1)  # noqa: E731
    with pytest.warns(FixedPointWarning):
        r = fixed_point(f, torch.zeros(2, 1, dtype=torch.float64), method="picard", max_iter=100)
    assert r.status is FixedPointStatus.NON_FINITE and torch.isfinite(r.z).all()


def test_two_equilibria_found_from_different_starts():
    p = two_equilibria()
    r = fixed_point(p.f, p.z0, method="picard", tol=1e-10)
    assert r.success
    found = r.z[:, 0]
    assert (found[p.z0[:, 0] < 0] < -0.95).all() and (found[p.z0[:, 0] > 0] > 0.95).all()
    torch.testing.assert_close(found.abs(), torch.full_like(found, float(found.abs().max())))


def test_boundary_errors_name_the_argument():
    p = contraction(dim=4, batch=1)
    with pytest.raises(ValueError, match="method='newton'.*anderson"):
        fixed_point(p.f, p.z0, method="newton")
    with pytest.raises(ValueError, match="tol=-1"):
        fixed_point(p.f, p.z0, tol=-1)
    with pytest.raises(ValueError, match="max_iter=0"):
        fixed_point(p.f, p.z0, max_iter=0)
    with pytest.raises(ValueError, match=r"\['m'\].*picard"):
        fixed_point(p.f, p.z0, method="picard", m=5)
    with pytest.raises(ValueError, match="shape of z0"):
        fixed_point(lambda z: z[:, :2], p.z0)
    with pytest.raises(TypeError, match="floating-point"):
        fixed_point(p.f, torch.zeros(1, 4, dtype=torch.long))


def test_warning_can_be_silenced():
    p = reflection()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = fixed_point(p.f, p.z0, method="picard", max_iter=10, warn=False)
    assert not r.success


RHOS = (0.9, 0.95, 0.99)


@pytest.mark.parametrize("kind", ["linear", "tanh"])
@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.slow
def test_anderson_needs_at_most_half_of_picards_iterations(kind, rho):
    p = contraction(kind, rho, dim=30)
    anderson = run_nodecourse(p, "anderson", tol=1e-8, max_iter=5000)
    picard = run_nodecourse(p, "picard", tol=1e-8, max_iter=5000)
    assert anderson.reached and picard.reached
    assert anderson.final_rel_residual <= 1e-8
    assert anderson.n_evals <= 0.5 * picard.n_evals, (anderson.n_evals, picard.n_evals)


@pytest.mark.skipif(not torchdeq_available(), reason="torchdeq (a test dependency) does not import here")
@pytest.mark.parametrize("kind", ["linear", "tanh"])
@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.slow
def test_anderson_needs_no_more_iterations_than_torchdeq(kind, rho):
    p = contraction(kind, rho, dim=30)
    ours = run_nodecourse(p, "anderson", tol=1e-8, max_iter=5000)
    # torchdeq's Anderson with its defaults (m=6, lam=1e-4), given up to 3x our budget
    ref = run_torchdeq(p, "anderson", tol=1e-8, max_iter=3 * ours.n_evals)
    assert ours.reached
    assert not ref.reached or ours.n_evals <= ref.n_evals, (ours.n_evals, ref.n_evals)
    # same map, same counting: torchdeq's Picard needs exactly our Picard's evaluations
    assert (
        run_torchdeq(p, "picard", tol=1e-8, max_iter=5000).n_evals
        == run_nodecourse(p, "picard", tol=1e-8, max_iter=5000).n_evals
    )


@pytest.mark.skipif(not torchdeq_available(), reason="torchdeq does not import here")
def test_compare_solvers_lists_both_sources():
    runs = compare_solvers(contraction("tanh", 0.9, dim=10), tol=1e-8)
    assert {r.source for r in runs} == {"nodecourse", "torchdeq"}
    assert all(r.reached for r in runs)
