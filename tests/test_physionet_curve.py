"""Lesson 5's learning curve (nodecourse.lessons.lesson05.curve) and its plot."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from physionet_fixtures import needs_set_a, synthetic_set

from nodecourse.lessons.lesson05 import curve as lc
from nodecourse.plotting import plot_learning_curve


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    """A raw synthetic set of 90 patients on a 2-hour grid."""
    return synthetic_set(tmp_path_factory.mktemp("pn_curve"), 90, seed=6, quantization=2.0)


def test_split_is_nested_stratified_and_disjoint():
    labels = np.array([0] * 80 + [1] * 20)
    pool, held = lc.draw_split(100, labels, 60, seed=3)
    assert len(pool) == 60 and len(held) == 40 and not set(pool) & set(held)
    assert labels[pool].sum() == 12  # stratified: 20 % of the pool
    again, _ = lc.draw_split(100, labels, 60, seed=3)
    assert (again == pool).all()
    with pytest.raises(ValueError, match="leave no held-out patients"):
        lc.draw_split(100, labels, 100, seed=0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"sizes": (40, 20)}, "increasing"),
        ({"sizes": (1,)}, "integers >= 2"),
        ({"models": ("lstm",)}, "not models"),
        ({"seeds": ()}, "at least one seed"),
        ({"device": "tpu"}, "device='tpu'.*--device"),
    ],
)
def test_bad_configs_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        lc.CurveConfig(**kwargs)


def test_curve_points_summary_and_plot(raw):
    config = lc.CurveConfig(sizes=(20, 40), seeds=(0, 1), models=("gru-d", "summary-logreg"), epochs=1)
    result = lc.learning_curve(config, data=raw, progress=False)
    assert len(result.points) == 2 * 2 * 2
    assert {p.n_eval for p in result.points} == {90 - 40}  # every size of a seed scored on the same patients
    assert all(0.0 <= p.auc <= 1.0 for p in result.points)
    rows = result.summary()
    assert [(s.model, s.n_train, s.n_seeds) for s in rows] == [
        ("gru-d", 20, 2),
        ("gru-d", 40, 2),
        ("summary-logreg", 20, 2),
        ("summary-logreg", 40, 2),
    ]
    assert all(s.low <= s.mean <= s.high for s in rows)
    assert "| gru-d | 40 | 2 |" in result.to_markdown()
    fig = plot_learning_curve(result, published={"gru-d": (0.818, 0.008)}, published_patients=3200)
    assert fig.layout.xaxis.title.text == "training patients (set A)"
    assert fig.layout.yaxis.title.text.startswith("held-out AUC")
    assert [t.name for t in fig.data] == ["gru-d", "gru-d, published", "summary-logreg"]
    assert list(fig.data[0].x) == [20, 40]


@needs_set_a
@pytest.mark.slow
def test_quick_curve_on_real_set_a():
    result = lc.learning_curve(lc.QUICK_CURVE, progress=False)
    assert result.data_source == "shared" and result.quantization_hours == pytest.approx(1 / 60)
    assert len(result.points) == len(lc.QUICK_CURVE.sizes) * len(lc.QUICK_CURVE.seeds) * len(lc.CURVE_MODELS)


def test_an_unknown_executor_is_named(raw):
    with pytest.raises(ValueError, match="executor='dask'"):
        lc.learning_curve(lc.QUICK_CURVE, data=raw, progress=False, executor="dask")


def test_the_tasks_are_every_seed_size_and_model_in_serial_order():
    config = lc.CurveConfig(sizes=(20, 40), seeds=(3,), models=("gru-d", "odernn"))
    assert lc.curve_tasks(config) == (
        lc.CurveTask(3, 20, "gru-d"),
        lc.CurveTask(3, 20, "odernn"),
        lc.CurveTask(3, 40, "gru-d"),
        lc.CurveTask(3, 40, "odernn"),
    )


@pytest.mark.slow
def test_the_curve_on_ray_gives_the_serial_points_and_names_a_failed_fit(raw):
    """Each fit a Ray task on a local runtime of two CPUs: the same points as a serial run (both on
    one torch thread), in the same order; a fit that raises is named."""
    pytest.importorskip("ray", reason="Ray is the cluster extra: pip install 'nodecourse[cluster]'")
    import torch

    from nodecourse.claims import ray_runtime

    config = lc.CurveConfig(sizes=(20, 40), seeds=(0, 1), models=("gru-d", "summary-logreg"), epochs=1)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        serial = lc.learning_curve(config, data=raw, progress=False)
    finally:
        torch.set_num_threads(threads)
    with ray_runtime(workers=2):
        on_ray = lc.learning_curve(config, data=raw, progress=False, executor="ray", workers=2)

        def fields(points):  # everything a report shows but the CPU time, a timing
            return [(p.model, p.n_train, p.seed, p.auc, p.n_eval) for p in points]

        assert fields(on_ray.points) == fields(serial.points)
        assert (on_ray.data_source, on_ray.quantization_hours) == (serial.data_source, serial.quantization_hours)
        one_class = raw.subset(np.flatnonzero(raw.labels.numpy() == 0))  # nothing to stratify the split on
        with pytest.raises(lc.CurveFitsFailed) as failure:
            lc.learning_curve(config, data=one_class, progress=False, executor="ray", workers=2)
    task, exc = failure.value.failures[0]
    assert f"{task.model} on {task.n_train} patients, seed {task.seed}" in str(failure.value)
    assert "as a Ray task" in "".join(getattr(exc, "__notes__", [])), exc


def test_the_lesson_re_exports_every_name_of_the_curves_all():
    """The package names the curve's exports without importing it (``-m`` runs the module cleanly): the two agree."""
    from nodecourse.lessons import lesson05 as L

    assert set(lc.__all__) <= set(L.__all__) and len(L.__all__) == len(set(L.__all__))
    assert all(getattr(L, name) is getattr(lc, name) for name in lc.__all__)


TINY = lc.CurveConfig(sizes=(20, 40), seeds=(0,), models=("gru-d", "odernn"), epochs=1)


@pytest.mark.parametrize("executor", ["serial", "ray"])
def test_a_device_this_machine_lacks_is_refused_before_any_fit(raw, executor, monkeypatch, capsys):
    """On every machine (the GPU hidden where there is one): the run stops before loading or fitting anything."""

    def started(*args, **kwargs):
        raise AssertionError("the curve loaded or fitted something before refusing the device")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(lc, "fit_point", started)
    monkeypatch.setattr(lc, "load_curve_data", started)
    refused = r"--device cuda: torch\.cuda\.is_available\(\) is False here; drop --device .* machine with a GPU"
    with pytest.raises(lc.DeviceUnavailable, match=refused):
        lc.learning_curve(replace(TINY, device="cuda"), data=raw, progress=False, executor=executor)
    with pytest.raises(SystemExit) as stop:
        lc.main(["--device", "cuda", "--executor", executor, "--epochs", "1"])
    assert stop.value.code == 2
    assert "--device cuda: torch.cuda.is_available() is False here; drop --device" in capsys.readouterr().err


def test_a_cluster_without_a_gpu_refuses_a_cuda_curve_before_any_task(raw, monkeypatch):
    """With an address the driver's own GPU does not count: the cluster's resources decide (a cluster
    that lists CPUs and no GPU stands in for Ray here)."""
    from contextlib import contextmanager

    import nodecourse.claims as claims

    class Cluster:
        @staticmethod
        def cluster_resources():
            return {"CPU": 8.0}

    @contextmanager
    def joined(address, workers):
        yield Cluster

    def started(*args, **kwargs):
        raise AssertionError("a task was submitted before the device was refused")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # the driver has one; the cluster decides
    monkeypatch.setattr(claims, "ray_runtime", joined)
    monkeypatch.setattr(claims, "run_tasks", started)
    with pytest.raises(lc.DeviceUnavailable, match=r"--device cuda: the Ray cluster \(auto\) has no GPU"):
        lc.learning_curve(replace(TINY, device="cuda"), data=raw, progress=False, executor="ray", address="auto")


def test_every_model_of_the_curve_trains_on_the_device_under_a_strict_fake_cuda(raw, monkeypatch):
    """On every machine: the strict fake device (tests/fake_cuda.py) raises where a host tensor meets a
    device one, as CUDA does; each fit gets its sets on the device and finishes."""
    from fake_cuda import fake_cuda_device
    from nodecourse.models import latent

    seen, real_fit = [], latent.fit_mortality

    def recording_fit(name, train, test, **kwargs):
        seen.append((name, train.values.device.type, test.values.device.type))
        return real_fit(name, train, test, **kwargs)

    monkeypatch.setattr(latent, "fit_mortality", recording_fit)
    config = replace(TINY, sizes=(20,), models=lc.CURVE_MODELS, device="cuda")
    with fake_cuda_device():
        result = lc.learning_curve(config, data=raw, progress=False)
    assert seen == [(m, "cuda", "cuda") for m in lc.CURVE_MODELS]
    assert all(0.0 <= p.auc <= 1.0 for p in result.points) and result.machine.endswith("fits on cuda")


CUDA_AUC_TOLERANCE = 0.02
"""How far a cuda fit's AUC may sit from the cpu fit's: the same initial weights (drawn on the CPU) and
batch order, float32 sums in another order; on ~50 held-out patients one swapped pair of scores moves
the AUC by about 0.003, so this allows a handful of swaps and nothing like a different model."""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU here: the cuda fit needs one")
def test_a_cuda_fit_gives_the_cpu_fits_auc_within_the_tolerance(raw):
    on_cpu = lc.learning_curve(TINY, data=raw, progress=False)
    on_cuda = lc.learning_curve(replace(TINY, device="cuda"), data=raw, progress=False)
    assert [(p.model, p.n_train, p.seed, p.n_eval) for p in on_cuda.points] == [
        (p.model, p.n_train, p.seed, p.n_eval) for p in on_cpu.points
    ]
    for cpu, cuda in zip(on_cpu.points, on_cuda.points):
        assert cuda.auc == pytest.approx(cpu.auc, abs=CUDA_AUC_TOLERANCE), (cpu, cuda)
    assert on_cuda.machine.endswith("fits on cuda") and "fits on" not in on_cpu.machine
