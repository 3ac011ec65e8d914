"""A user's adjoint norm on a tuple state receives torchdiffeq's split tuple
``(t, y_a, y_b, adj_y_a, adj_y_b, *adj_params)`` (torchdiffeq's ``test_adjoint_norm``), and the
gradient agrees with torchdiffeq's ``odeint_adjoint`` given the same norm."""

import pytest
import torch

from nodecourse import odeint

torchdiffeq = pytest.importorskip("torchdiffeq")


class Field(torch.nn.Module):
    """A two-part state: a 2-vector rotated by ``a``, and a (1, 1) block damped by the first part."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor([[0.2, -1.0], [1.0, 0.1]], dtype=torch.float64))

    def forward(self, t, y):
        return y[0] @ self.a.T, -y[1] * y[0].sum()


def run(solve, **kwargs):
    seen = []

    def norm(parts):
        seen.append(tuple(tuple(p.shape) for p in parts))
        return torch.stack([p.abs().max() for p in parts]).max()

    field = Field()
    y0 = (
        torch.tensor([1.0, 0.5], dtype=torch.float64, requires_grad=True),
        torch.tensor([[2.0]], dtype=torch.float64, requires_grad=True),
    )
    t = torch.tensor([0.0, 1.0], dtype=torch.float64)
    ys = solve(field, y0, t, adjoint_options=dict(norm=norm), rtol=1e-6, atol=1e-8, **kwargs)
    (ys[0][-1].pow(2).sum() + ys[1][-1].sum()).backward()
    return set(seen), (y0[0].grad, y0[1].grad, field.a.grad)


def test_tuple_state_adjoint_norm_gets_torchdiffeqs_split_tuple():
    ours, our_grads = run(lambda *a, **k: odeint(*a, gradient="adjoint", **k).ys)
    theirs, their_grads = run(torchdiffeq.odeint_adjoint)
    # (t, y_a, y_b, adj_y_a, adj_y_b, adj_a)
    assert ours == theirs == {((), (2,), (1, 1), (2,), (1, 1), (2, 2))}
    for got, want in zip(our_grads, their_grads):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)


def test_a_tensor_state_keeps_the_unsplit_tuple():
    seen = []

    def norm(parts):
        seen.append(tuple(tuple(p.shape) for p in parts))
        return torch.stack([p.abs().max() for p in parts]).max()

    field = Field()
    y0 = torch.tensor([1.0, 0.5], dtype=torch.float64, requires_grad=True)
    sol = odeint(
        lambda t, y: field(t, (y, y[:1, None]))[0],
        y0,
        torch.tensor([0.0, 1.0], dtype=torch.float64),
        gradient="adjoint",
        adjoint_options=dict(norm=norm, params=(field.a,)),
    )
    sol.ys[-1].sum().backward()
    assert set(seen) == {((), (2,), (2,), (2, 2))}
