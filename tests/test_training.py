"""One solver-settings object (SolveConfig) and one training loop (nodecourse.training)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from nodecourse import AugmentedODE, SolveConfig, SolverError
from nodecourse.models import MLPField, ODEBlock
from nodecourse.training import seeded_batches, train_epochs


def test_solve_config_replace_and_unknown_names():
    cfg = SolveConfig(method="rk4", step_size=0.1)
    assert cfg.replace(step_size=0.05).step_size == 0.05 and cfg.step_size == 0.1
    with pytest.raises(TypeError, match=r"unknown solver setting\(s\) \['tol'\]; valid: \['method'"):
        cfg.replace(tol=1e-3)
    with pytest.raises(TypeError, match="give a nodecourse.SolveConfig"):
        SolveConfig.of({"method": "rk4"})
    kwargs = cfg.odeint_kwargs()
    assert set(kwargs) == {
        "method",
        "rtol",
        "atol",
        "step_size",
        "max_steps",
        "gradient",
        "per_sample",
        "options",
        "adjoint_options",
    }


def test_block_takes_a_config_or_its_fields_and_solves_the_same():
    torch.manual_seed(0)
    field = MLPField(3, (8,))
    z0 = torch.randn(4, 3)
    by_kw = ODEBlock(field, method="rk4", step_size=0.25)
    by_cfg = ODEBlock(field, solver=SolveConfig(method="rk4", step_size=0.25))
    assert by_kw.solver == by_cfg.solver
    assert torch.equal(by_kw(z0), by_cfg(z0))
    assert by_kw.last_stats["nfe"] == 16  # 4 steps of rk4


def test_every_path_of_augmented_ode_uses_every_setting():
    # max_steps used to be missing from AugmentedODE and trajectory() dropped settings.
    flow = AugmentedODE(MLPField(3, (8,)), 1, method="dopri5", rtol=1e-6, atol=1e-6, max_steps=2)
    x = torch.randn(5, 2)
    with pytest.raises(SolverError, match="(?i)max"):
        flow(x)
    with pytest.raises(SolverError, match="(?i)max"):
        flow.trajectory(x, n_times=5)


def test_training_loop_is_seeded_logs_sums_and_runs_hooks():
    def run():
        torch.manual_seed(0)
        x, y = torch.randn(64, 5), torch.randint(0, 3, (64,))
        model = nn.Linear(5, 3)

        def loss_on_batch(idx):
            out = model(x[idx])
            return nn.functional.cross_entropy(out, y[idx]), {"correct": int((out.argmax(1) == y[idx]).sum())}

        seen = []

        def on_epoch(row, m):
            assert not m.training  # hooks evaluate in eval mode
            row["weight_norm"] = float(m.weight.detach().norm())
            seen.append(row["epoch"])

        history = train_epochs(
            model,
            loss_on_batch,
            seeded_batches(64, 16, seed=3),
            epochs=3,
            optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
            on_epoch=on_epoch,
        )
        return history, seen, model

    h1, seen, model = run()
    h2, _, _ = run()
    assert h1 == h2 and seen == [1, 2, 3] and not model.training
    assert [r["n_rows"] for r in h1] == [64, 64, 64]
    assert all(0 <= r["correct"] <= 64 and "weight_norm" in r for r in h1)
    assert h1[-1]["loss"] < h1[0]["loss"]


def test_seeded_batches_cover_every_row_once_per_epoch():
    epoch = seeded_batches(10, 4, seed=1)
    first, second = torch.cat(list(epoch())), torch.cat(list(epoch()))
    assert sorted(first.tolist()) == list(range(10)) == sorted(second.tolist())
    assert not torch.equal(first, second)  # a new permutation each epoch
    assert [len(b) for b in epoch()] == [4, 4, 2]
    with pytest.raises(ValueError, match="batch_size=0"):
        seeded_batches(10, 0)
