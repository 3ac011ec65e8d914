"""The lesson-3 explorer, driven headless: set a control's value, read the result."""

import dataclasses

import pytest
import torch

from nodecourse.widgets._annulus import AnnulusExplorer, AnnulusResult


@pytest.mark.slow
def test_explorer_retrains_on_change_and_caches():
    ex = AnnulusExplorer(augment_dim=0, epochs=10, render=False)
    first = ex.result
    assert first.augment_dim == 0 and first.epochs == 10
    assert first.final_nfe > 0 and first.log.nfe[-1] > 0
    assert first.grid.outputs.shape == (80, 80)
    assert "plain NODE" in ex.status.value and "NFE" in ex.status.value
    ex.augment_dim.value = 1
    assert ex.result.augment_dim == 1 and "ANODE (+1" in ex.status.value
    assert ex.result.n_parameters > first.n_parameters
    ex.augment_dim.value = 0
    assert ex.result is first  # cached: moving back is instant


def test_explorer_rejects_out_of_range_settings():
    with pytest.raises(ValueError, match="augment_dim=5"):
        AnnulusExplorer(augment_dim=5, render=False)
    with pytest.raises(ValueError, match="epochs=0"):
        AnnulusExplorer(epochs=0, render=False)


@pytest.mark.slow
def test_explorer_draws_a_figure_when_rendering():
    ex = AnnulusExplorer(augment_dim=1, epochs=5, render=True)
    assert ex.figure is not None and len(ex.figure.axes) == 2


@pytest.mark.slow
def test_a_model_that_predicts_one_class_everywhere_is_not_headlined_as_a_success():
    """1 extra dimension and 10 epochs (seed 0): the ring's class everywhere, 66.7 % of the points.
    The circle on the ring is then "all correct", which says nothing: the status says what happened."""
    ex = AnnulusExplorer(augment_dim=1, epochs=10, render=False)
    res = ex.result
    assert res.single_class == 1
    assert (torch.sign(res.grid.outputs) > 0).all()
    assert res.sample_accuracy == pytest.approx(120 / 180)
    assert "predicts one class, the ring (+1), everywhere" in ex.status.value
    assert "wrong 0.00%" not in ex.status.value and "min margin" not in ex.status.value
    ex.epochs.value = 40  # trained longer, the same model separates the classes
    assert ex.result.single_class is None
    assert "min margin" in ex.status.value and "predicts one class" not in ex.status.value


def _result_with_grid(outputs: torch.Tensor, ex_result: AnnulusResult) -> AnnulusResult:
    grid = dataclasses.replace(ex_result.grid, outputs=outputs)
    return dataclasses.replace(ex_result, grid=grid)


def test_single_class_reads_the_sign_of_the_whole_grid():
    from nodecourse.measure import CircleProbe, DecisionGrid
    from nodecourse.models._augment import FitLog

    axis = torch.linspace(-1.75, 1.75, 5)
    probe = CircleProbe(1.25, 1.0, 4, 0.0, 0.05, 0.0, torch.zeros(4), torch.full((4,), 0.05))
    base = AnnulusResult(
        0, 10, 0, 100, 2 / 3, FitLog(nfe_per_forward=[20.0]), probe, DecisionGrid(axis, axis, torch.full((5, 5), 0.3))
    )
    assert base.single_class == 1
    assert "predicts one class, the ring (+1), everywhere" in base.summary()
    disk = _result_with_grid(torch.full((5, 5), -0.2), base)
    assert disk.single_class == -1 and "the disk (-1)" in disk.summary()
    mixed = torch.full((5, 5), 0.3)
    mixed[2, 2] = -0.4  # the centre on the disk's side: a boundary exists
    both = _result_with_grid(mixed, base)
    assert both.single_class is None
    assert "min margin +0.05" in both.summary() and "predicts one class" not in both.summary()
