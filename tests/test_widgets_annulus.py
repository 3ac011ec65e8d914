"""The lesson-3 explorer, driven headless: set a control's value, read the result."""
import pytest

from nodecourse.widgets.annulus import AnnulusExplorer

pytestmark = pytest.mark.slow


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


def test_explorer_draws_a_figure_when_rendering():
    ex = AnnulusExplorer(augment_dim=1, epochs=5, render=True)
    assert ex.figure is not None and len(ex.figure.axes) == 2
