"""The device paths (``device="cuda"``) on a CPU-only machine, under a strict fake CUDA device.

``fake_cuda`` (tests/fake_cuda.py) makes ``cuda`` available and raises, as real CUDA does, when
a device tensor meets a host tensor (a hidden CPU tensor) or ``.numpy()`` is called on a device
tensor. Every explorer's compute and figure path, the lessons' device-aware helpers and the
``nodecourse physionet --device cuda`` training path run under it. This does not measure
anything about a GPU; ``NODECOURSE_DEVICE_TESTS=real`` runs the same tests on a real one
(scripts/gpu_check.sh).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from fake_cuda import fake_cuda_device, kind

# NODECOURSE_DEVICE_TESTS=real runs the same tests on a real GPU (scripts/gpu_check.sh does).
REAL_CUDA = os.environ.get("NODECOURSE_DEVICE_TESTS", "") == "real"


@pytest.fixture
def cuda():
    if REAL_CUDA:
        if not torch.cuda.is_available():
            pytest.fail("NODECOURSE_DEVICE_TESTS=real but torch.cuda.is_available() is False")
        yield torch.device("cuda")
        return
    with fake_cuda_device() as device:
        yield device


# ---------------------------------------------------------------------------
# the fake device itself catches what a GPU would reject
# ---------------------------------------------------------------------------


@pytest.mark.skipif(REAL_CUDA, reason="checks the fake device itself")
def test_fake_cuda_rejects_hidden_host_tensors_and_numpy(cuda):
    from nodecourse.config import available_devices, resolve_device

    assert "cuda" in available_devices() and resolve_device("cuda").type == "cuda"
    x = torch.randn(5, 3, device=cuda)
    assert x.device.type == "cuda" and x.is_cuda
    assert torch.zeros(3, device=x.device).device.type == "cuda"
    with pytest.raises(RuntimeError, match="same device"):
        x + torch.ones(3)  # a factory without device=: the classic hidden CPU tensor
    with pytest.raises(RuntimeError, match="same device"):
        torch.nn.Linear(3, 2)(x)  # a module never moved to the device
    with pytest.raises(TypeError, match="numpy"):
        x.numpy()
    with pytest.raises(TypeError, match="numpy"):
        np.asarray(x)
    # what real CUDA allows: 0-dim host scalars, explicit copies, a moved module and its training
    assert (x * torch.tensor(2.0)).is_cuda
    assert x.detach().cpu().numpy().shape == (5, 3)
    model = torch.nn.Linear(3, 2).to(cuda)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    model(x).square().mean().backward()
    opt.step()
    assert model.weight.is_cuda and kind(model.weight) == "cuda"
    assert not torch.ones(2).to(x.device).cpu().is_cuda


# ---------------------------------------------------------------------------
# lesson 2: every solver, the explorer and its figure
# ---------------------------------------------------------------------------


def test_every_solver_runs_on_the_device(cuda):
    from dataclasses import replace

    from nodecourse import SOLVERS
    from nodecourse.widgets import PROBLEMS, run_solver

    for name, full in PROBLEMS.items():
        # a short stretch of each problem keeps every solver's device path cheap
        problem = replace(full, name=f"{full.name} [t <= {full.t1 / 10:g}]", t1=full.t1 / 10)
        for method, spec in SOLVERS.items():
            if name.startswith("stiff") and spec.kind != "implicit":
                continue  # explicit methods on the stiff problem are the lesson's failure case, not a device path
            res = run_solver(problem, method, 1e-4, 1e-6, 0.05, "cuda", n_out=11)
            assert res.device == "cuda", (method, res.device)
            assert res.nfe > 0 and res.ys.shape == (11, len(problem.y0)), (method, res.status)


def test_solver_explorer_and_figure_on_the_device(cuda):
    from nodecourse.widgets._solver_explorer import SolverExplorer, result_figure

    explorer = SolverExplorer(device="cuda", render=False)
    assert "cuda" in explorer.device.options and explorer.result.device == "cuda"
    explorer.method.value = "rk4"
    assert explorer.result.method == "rk4" and explorer.result.device == "cuda"
    fig = result_figure(explorer.result)
    assert len(fig.data) >= 3


def test_solver_lesson_helpers_on_the_device(cuda):
    from nodecourse.lessons import lesson01, lesson02

    out = lesson01.resnet_vs_euler(device="cuda", batch=8)
    assert out.agrees and out.nfe_euler == out.n_blocks  # one field call per block, within the ulps tolerance
    conv = lesson02.convergence("rk4", device="cuda")
    assert conv.method == "rk4" and len(conv.errors) == len(conv.step_sizes) > 1
    sweep = lesson02.nfe_sweep([1e-3, 1e-5], device="cuda")
    assert [s.rtol for s in sweep] == [1e-3, 1e-5] and sweep[1].nfe >= sweep[0].nfe


# ---------------------------------------------------------------------------
# lesson 3: the annulus explorer (training, probes, figure)
# ---------------------------------------------------------------------------


def test_annulus_explorer_trains_probes_and_draws_on_the_device(cuda):
    from nodecourse.widgets import AnnulusExplorer

    explorer = AnnulusExplorer(augment_dim=1, epochs=5, device="cuda", render=True)  # no notebook: figure kept
    assert explorer.result.final_nfe > 0
    assert explorer.figure is not None


def test_annulus_lesson_training_on_the_device(cuda):
    from dataclasses import replace

    from nodecourse.lessons import lesson03 as L

    config = replace(L.QUICK_ANNULUS, n_inner=20, n_outer=40, epochs=2)
    for name in L.ANNULUS_MODELS:
        run = L.train_annulus_model(name, 0, config, device="cuda")
        assert run is not None


# ---------------------------------------------------------------------------
# lesson 5: `nodecourse physionet --device cuda`
# ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("model", ["odernn", "latent-ode", "gru-dt", "gru-d", "summary-logreg"])
def test_physionet_cli_trains_on_the_device(cuda, model, capsys, monkeypatch):
    from nodecourse.course.cli import main
    from nodecourse.models import latent

    seen = []  # the device of the data the CLI hands to the training loop
    real_fit = latent.fit_mortality

    def recording_fit(name, train, *args, **kwargs):
        seen.extend(v.device.type for v in vars(train).values() if isinstance(v, torch.Tensor))
        return real_fit(name, train, *args, **kwargs)

    monkeypatch.setattr(latent, "fit_mortality", recording_fit)
    rc = main(
        ["physionet", "--model", model, "--device", "cuda", "--quick", "--epochs", "1", "--patients", "120", "--json"]
    )
    out = capsys.readouterr()
    assert rc == 0, out.err[-2000:]
    result = json.loads(out.out.strip().splitlines()[-1])
    assert 0.0 <= result["auc"] <= 1.0 and result["n_train"] > 0
    assert seen and set(seen) == {"cuda"}, f"the CLI trained on {set(seen)}, not on --device cuda"


# ---------------------------------------------------------------------------
# lesson 4: the adjoint explorer (every gradient mode) and its figure
# ---------------------------------------------------------------------------


def test_adjoint_explorer_every_mode_on_the_device(cuda):
    from nodecourse.widgets._adjoint_explorer import MODES, AdjointExplorer, result_figure, run_gradient

    for mode in MODES:
        res = run_gradient(-10.0, 1.0, 1e-5, mode, "cuda")
        assert res.device == "cuda" and res.nfe > 0, (mode, res.status)
        assert result_figure(res) is not None
    explorer = AdjointExplorer(mode="checkpoint", device="cuda", render=True)  # no notebook: figure kept
    assert explorer.result.device == "cuda" and explorer.figure is not None


# ---------------------------------------------------------------------------
# lesson 6: the DEQ explorer (every fixed-point solver) and its figure
# ---------------------------------------------------------------------------


def test_deq_explorer_every_solver_on_the_device(cuda):
    from nodecourse.deq import METHODS
    from nodecourse.widgets._deq_explorer import DEQExplorer, result_figure, run_deq

    for solver in sorted(METHODS):
        res = run_deq(solver, 1e-4, 0.0, "cuda", n_inputs=32)
        assert res.device == "cuda" and res.n_iter > 0, (solver, res.status)
        assert len(result_figure(res).data) >= 1
    explorer = DEQExplorer(device="cuda", render=True)
    assert explorer.result.device == "cuda" and explorer.figure is not None


# ---------------------------------------------------------------------------
# lessons 4 and 7: the memory sweep and the four models of the capstone
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_adjoint_memory_study_on_the_device(cuda):
    from nodecourse.lessons import lesson04

    sweep = lesson04.memory_study(quick=True, device="cuda")
    assert sweep is not None


@pytest.mark.slow
def test_capstone_models_train_on_the_device(cuda):
    from dataclasses import replace

    from nodecourse.lessons import lesson07 as L

    config = replace(L.QUICK_CAPSTONE, seeds=(0,), epochs=1, n_samples=300)
    for name in L.MODELS:
        run = L.train_capstone_model(name, 0, config, device="cuda")
        assert run is not None, name
