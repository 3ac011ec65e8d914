"""Cached study results cannot be changed by a caller: the studies that hand every caller the same
cached object (lesson 3's annulus runs, lesson 7's capstone runs, lesson 8's CNF run) return frozen
dataclasses whose logs are tuples, so a caller that sets a field or appends to a log gets an error,
and the next caller reads what the study measured."""

from __future__ import annotations

import dataclasses

import pytest

import nodecourse.lessons.lesson03 as L3
import nodecourse.lessons.lesson07 as L7
import nodecourse.lessons.lesson08 as L8

TINY_FLOW = L8.FlowConfig(n_train=64, n_test=32, iterations=3, batch=16, hidden=(8,), seed=3)
TINY_ANNULUS = L3.AnnulusConfig(
    seeds=(0,), n_inner=20, n_outer=20, epochs=2, batch_size=None, hidden=(8,), probe_points=64, probe_radii=(0.5,)
)
TINY_CAPSTONE = dataclasses.replace(
    L7.QUICK_CAPSTONE, seeds=(0,), epochs=1, n_samples=120, per_input_samples=2, memory_batch=8
)


def _studies():
    # (study, its tiny configuration, a float field, a sequence field) per cached result type
    return [
        (L8.train_flow, TINY_FLOW, "test_nll", "losses"),
        (L3.annulus_study, TINY_ANNULUS, "sample_accuracy", None),
        (L7.capstone_study, TINY_CAPSTONE, "accuracy", "work_per_input"),
    ]


def _readings(runs, number: str, log: str | None) -> list:
    return [(getattr(r, number), tuple(getattr(r, log)) if log else None) for r in runs]


@pytest.mark.parametrize("study, config, number, log", _studies(), ids=["flow", "annulus", "capstone"])
def test_mutating_a_cached_result_cannot_change_the_next_callers(study, config, number, log):
    first = study(config)
    runs = first if isinstance(first, tuple) else (first,)
    before = _readings(runs, number, log)
    for run in runs:
        assert dataclasses.is_dataclass(run) and type(run).__dataclass_params__.frozen, type(run).__name__
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(run, number, -1.0)
        if log:
            assert isinstance(getattr(run, log), tuple)
            with pytest.raises(AttributeError):
                getattr(run, log).append(0.0)
    again = study(config)
    again_runs = again if isinstance(again, tuple) else (again,)
    assert again is first  # the cache still hands out the one object ...
    assert _readings(again_runs, number, log) == before  # ... unchanged
    study.clear()


def test_a_run_built_from_lists_stores_tuples():
    run = L8.FlowRun(TINY_FLOW, "adjoint", None, losses=[1.0, 0.5], nfe_forward=[14, 20], nfe_backward=[14, 14])
    assert (run.losses, run.nfe_forward, run.nfe_backward) == ((1.0, 0.5), (14, 20), (14, 14))
    cap = L7.CapstoneRun("DEQ", 0, None, 1, 0.9, 1.0, 1.0, 0, None, [3.0, 4.0], [5.0])
    assert (cap.work_per_epoch, cap.work_per_input) == ((3.0, 4.0), (5.0,))
