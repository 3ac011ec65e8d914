"""What every explorer shares (nodecourse/widgets/common.py): the device check and the layout."""
import pytest

from nodecourse.widgets.adjoint_explorer import AdjointExplorer
from nodecourse.widgets.deq_explorer import DEQExplorer
from nodecourse.widgets.solver_explorer import SolverExplorer


@pytest.mark.parametrize("cls", [SolverExplorer, DEQExplorer, AdjointExplorer])
def test_explorers_refuse_an_unavailable_device(cls):
    with pytest.raises(ValueError, match=r"device='tpu' is not available here; available: \['cpu'"):
        cls(device="tpu", render=False)


def test_layout_and_status_line():
    explorer = AdjointExplorer(render=False)
    first_row, second_row, status, output = explorer.widget.children
    assert list(first_row.children) == [explorer.lam, explorer.T, explorer.tol]
    assert list(second_row.children) == [explorer.mode, explorer.device]
    assert explorer.controls == [explorer.lam, explorer.T, explorer.tol, explorer.mode, explorer.device]
    assert status is explorer.status and output is explorer.output and explorer.figure is None
    explorer.T.value = 2.0  # an observed control re-runs update()
    assert explorer.result.T == 2.0
    assert explorer.status.value == f"<code>{explorer.result.summary()}</code>"
