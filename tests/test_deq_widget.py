"""The DEQ explorer, driven headless: set a control's .value, read the result it updated."""

import pytest

from nodecourse.widgets._deq_explorer import DEQExplorer, result_figure


@pytest.fixture(scope="module")
def explorer():
    return DEQExplorer(render=False)


@pytest.mark.slow
def test_initial_solve(explorer):
    res = explorer.result
    assert res.method == "anderson" and res.status == "SUCCESS"
    assert res.n_iter == len(res.residuals) > 1 and res.final_residual <= res.tol
    assert "iterations" in explorer.status.value


@pytest.mark.slow
def test_tighter_tolerance_costs_iterations(explorer):
    explorer.method.value = "anderson"
    explorer.tol.value = 1e-2
    loose = explorer.result
    explorer.tol.value = 1e-4
    tight = explorer.result
    assert loose.tol == 1e-2 and tight.tol == 1e-4
    assert loose.n_iter < tight.n_iter


@pytest.mark.slow
def test_method_and_weight_controls_resolve(explorer):
    explorer.tol.value = 1e-4
    explorer.method.value = "picard"
    picard = explorer.result
    explorer.method.value = "anderson"
    anderson = explorer.result
    assert picard.method == "picard" and anderson.method == "anderson"
    explorer.jac_weight.value = 3.0
    assert explorer.result.jac_weight == 3.0 and explorer.result.n_iter >= 1
    fig = result_figure(explorer.result)
    assert fig.layout.yaxis.type == "log" and "residual" in fig.layout.yaxis.title.text


def test_bad_arguments_name_the_fix():
    with pytest.raises(ValueError, match="method='newton'"):
        DEQExplorer(method="newton", render=False)
    with pytest.raises(ValueError, match="device='tpu'"):
        DEQExplorer(device="tpu", render=False)
