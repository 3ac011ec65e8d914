"""Continuous normalising flows (nodecourse.models._flows) and lesson 8's studies."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
import torch

from nodecourse.lessons import lesson08
from nodecourse.models import MLPField
from nodecourse.models import _flows as flows


def _field_and_point(dim=3, batch=4, dtype=torch.float64, seed=0):
    torch.manual_seed(seed)
    field = MLPField(dim, (16,), activation="tanh").to(dtype)
    z = torch.randn(batch, dim, dtype=dtype, requires_grad=True)
    return field, z


def _jacobian_traces(field, z):
    return torch.stack(
        [torch.trace(torch.autograd.functional.jacobian(lambda v: field(None, v[None])[0], zb)) for zb in z.detach()]
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_exact_divergence_is_the_jacobian_trace(dtype):
    field, z = _field_and_point(dtype=dtype)
    got = flows.divergence_exact(field(None, z), z)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    assert got.dtype == dtype and got.shape == (4,)
    torch.testing.assert_close(got, _jacobian_traces(field, z), atol=tol, rtol=tol)


def test_hutchinson_over_every_sign_vector_is_exact():
    """The mean over all 2^d Rademacher vectors is the expectation itself: the estimator is unbiased exactly."""
    field, z = _field_and_point(dim=3, batch=2)
    signs = torch.tensor(list(itertools.product([-1.0, 1.0], repeat=3)), dtype=torch.float64)  # (8, 3)
    probes = signs[:, None, :].expand(8, 2, 3)
    got = flows.divergence_hutchinson(field(None, z), z, probes)
    torch.testing.assert_close(got, flows.divergence_exact(field(None, z), z), atol=1e-12, rtol=0)


def test_hutchinson_single_probe_is_not_the_trace():
    field, z = _field_and_point(dim=4, batch=1)
    probe = torch.tensor([[[1.0, -1.0, 1.0, 1.0]]], dtype=torch.float64)
    est = flows.divergence_hutchinson(field(None, z), z, probe)
    assert (est - flows.divergence_exact(field(None, z), z)).abs().item() > 1e-6


def test_variance_formula_matches_enumeration():
    torch.manual_seed(1)
    a = torch.randn(4, 4, dtype=torch.float64)
    signs = torch.tensor(list(itertools.product([-1.0, 1.0], repeat=4)), dtype=torch.float64)
    values = ((signs @ a) * signs).sum(1)
    exact_var = values.var(unbiased=False)
    torch.testing.assert_close(flows.hutchinson_variance(a, "rademacher"), exact_var)
    assert flows.hutchinson_variance(a, "gaussian") >= exact_var


def test_probe_statistics():
    eps = flows.sample_probes((20000, 3), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert set(eps.unique().tolist()) == {-1.0, 1.0}
    torch.testing.assert_close(eps.T @ eps / len(eps), torch.eye(3, dtype=torch.float64), atol=0.03, rtol=0)


def test_linear_flow_matches_closed_form_and_the_baseline_does_not():
    r = lesson08.linear_flow_check()
    assert r.max_error < 1e-5 and r.max_error_without_volume_term > 0.1 and r.nfe > 0


def test_integrated_trace_equals_logdet_of_the_solved_map():
    r = lesson08.trace_vs_logdet(n=3)
    assert r.max_diff < 1e-6 and r.mean_abs_logdet > 0.01


def test_cnf_density_integrates_to_one():
    torch.manual_seed(0)
    cnf = flows.CNF(2, (16,), rtol=1e-6, atol=1e-6).double()
    axis = torch.linspace(-7, 7, 141, dtype=torch.float64)
    gx, gy = torch.meshgrid(axis, axis, indexing="ij")
    pts = torch.stack([gx.reshape(-1), gy.reshape(-1)], 1)
    with torch.no_grad():
        mass = cnf.log_prob(pts).exp().sum().item() * (axis[1] - axis[0]).item() ** 2
    assert abs(mass - 1.0) < 0.01
    assert cnf.last_stats["nfe"] > 0


def test_sampling_inverts_the_flow():
    torch.manual_seed(0)
    cnf = flows.CNF(2, (16,), rtol=1e-8, atol=1e-8).double()
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        x = cnf.sample(50, generator=gen, dtype=torch.float64)
        z1, _, _ = cnf._solve(x, 0.0, 1.0)
    z_drawn = torch.randn(50, 2, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    torch.testing.assert_close(z1, z_drawn, atol=1e-5, rtol=0)


def test_adjoint_gradient_matches_backprop_for_a_cnf():
    if not lesson08.adjoint_available():
        pytest.skip("gradient='adjoint' is not available in this checkout")
    x = flows.two_moons(64, seed=0).double()
    grads = {}
    for gradient in ("backprop", "adjoint"):
        torch.manual_seed(0)
        cnf = flows.CNF(2, (16,), trace="hutchinson", rtol=1e-9, atol=1e-9, gradient=gradient).double()
        loss = -cnf.log_prob(x, generator=torch.Generator().manual_seed(1)).mean()
        loss.backward()
        grads[gradient] = torch.cat([p.grad.flatten() for p in cnf.parameters()])
        if gradient == "adjoint":
            assert cnf.last_stats["nfe_backward"] > 0
    torch.testing.assert_close(grads["adjoint"], grads["backprop"], atol=1e-6, rtol=1e-5)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="trace='det'"):
        flows.CNF(2, trace="det")
    with pytest.raises(ValueError, match="noise='uniform'"):
        flows.sample_probes((2, 2), noise="uniform")
    field, z = _field_and_point()
    with pytest.raises(ValueError, match="probes has shape"):
        flows.divergence_hutchinson(field(None, z), z, torch.ones(1, 3, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="x has shape"):
        flows.CNF(2).log_prob(torch.zeros(3, 5))


def test_hutchinson_findings_fail_on_a_biased_study():
    study = lesson08.trace_estimator_study(lesson08.TraceStudyConfig(repeats=500, probes=(1, 4, 16)))
    assert lesson08.HutchinsonFindings.from_study(study).holds
    biased = dataclasses.replace(study, rows=tuple(dataclasses.replace(r, bias_z=9.0) for r in study.rows))
    assert not lesson08.HutchinsonFindings.from_study(biased).holds
    flat = dataclasses.replace(study, slope=-0.5)
    assert not lesson08.HutchinsonFindings.from_study(flat).holds


def test_ledger_row_holds_in_quick_mode():
    m = lesson08.measure_hutchinson_variance(True)
    assert m.verdict.value == "holds", m.measured
