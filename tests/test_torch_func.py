"""torch.func transforms and forward-mode AD: backprop goes through them; the routes that keep no
graph refuse them by name before the solve, naming the route that works; reverse-mode
torch.autograd.functional still works there."""

import pytest
import torch
import torch.autograd.forward_ad as fwAD

from nodecourse import odeint
from nodecourse.solvers._transforms import TransformError

T = torch.linspace(0.0, 1.0, 3, dtype=torch.float64)
Y0 = torch.tensor([1.0, 2.0], dtype=torch.float64)
T_GRAD = T.clone().requires_grad_(True)  # made outside the transforms (torch.func refuses requires_grad_ inside)
NO_GRAPH = ["checkpoint", "adjoint", "reversible", "time"]


def loss(route):
    def of(q):
        method = (
            dict(method="reversible_heun", step_size=0.1)
            if route == "reversible"
            else dict(method="rk4", step_size=0.1)
        )
        t = T_GRAD if route == "time" else T
        gradient = "backprop" if route == "time" else route
        return odeint(lambda t, y: -q * y, Y0, t, gradient=gradient, **method).ys.sum()

    return of


def forward_mode(route):
    with fwAD.dual_level():
        q = fwAD.make_dual(torch.tensor(0.7, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64))
        return fwAD.unpack_dual(loss(route)(q)).tangent


Q = torch.tensor(0.7, dtype=torch.float64)
TRANSFORMS = {
    "func.grad": lambda route: torch.func.grad(loss(route))(Q),
    "func.jacfwd": lambda route: torch.func.jacfwd(loss(route))(Q),
    "func.jvp": lambda route: torch.func.jvp(loss(route), (Q,), (torch.ones_like(Q),))[1],
    "forward_ad": forward_mode,
}


def reference(route="backprop"):
    """dL/dq by reverse mode through ``route``."""
    q = Q.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(loss(route)(q), q)
    return g


@pytest.mark.parametrize("transform", list(TRANSFORMS))
def test_backprop_goes_through_torch_func_and_forward_mode(transform):
    torch.testing.assert_close(TRANSFORMS[transform]("backprop"), reference(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("route", NO_GRAPH)
@pytest.mark.parametrize("transform", list(TRANSFORMS))
def test_no_graph_routes_refuse_transforms_naming_backprop(route, transform):
    with pytest.raises(TransformError, match="gradient='backprop'"):
        TRANSFORMS[transform](route)


@pytest.mark.parametrize("route", ["backprop", *NO_GRAPH])
def test_vmap_is_explained_on_every_route(route):
    with pytest.raises(TransformError, match="vmap cannot run an odeint solve.*per_sample=True"):
        torch.func.vmap(loss(route))(torch.tensor([0.7, 0.8], dtype=torch.float64))


def test_vmap_over_y0_is_explained_before_the_solve():
    with pytest.raises(TransformError, match="gradient='backprop': torch.func.vmap cannot run"):
        torch.func.vmap(lambda y: odeint(lambda t, z: -z, y, T, method="rk4", step_size=0.1).ys)(Y0[:, None])


def test_a_vmapped_function_whose_solve_sees_nothing_batched_runs():
    # only the scaling is batched; the solve is the same for every entry
    got = torch.func.vmap(lambda s: s * odeint(lambda t, y: -y, Y0, T, method="rk4", step_size=0.1).ys[-1, 0])(
        torch.tensor([1.0, 2.0], dtype=torch.float64)
    )
    want = odeint(lambda t, y: -y, Y0, T, method="rk4", step_size=0.1).ys[-1, 0]
    torch.testing.assert_close(got, torch.stack([want, 2 * want]))


def test_a_dual_tensor_the_field_closes_over_is_seen():
    # the field holds the dual; y0 and t are plain tensors
    with fwAD.dual_level():
        q = fwAD.make_dual(Q, torch.ones_like(Q))
        with pytest.raises(TransformError, match="forward-mode AD"):
            odeint(lambda t, y: -q * y, Y0, T, method="rk4", step_size=0.1, gradient="checkpoint")


@pytest.mark.parametrize("route", ["checkpoint", "reversible"])
def test_reverse_mode_functional_jvp_still_works_on_routes_with_second_derivatives(route):
    # the double-backward trick: needs the route's differentiable gradient (create_graph=True)
    _, got = torch.autograd.functional.jvp(loss(route), Q, torch.ones_like(Q))
    torch.testing.assert_close(got, reference(route), rtol=1e-12, atol=1e-14)
