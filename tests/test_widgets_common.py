"""What every explorer shares (nodecourse/widgets/_common.py): the device check and the layout."""

import pytest

from nodecourse.widgets import AdjointExplorer, DEQExplorer, SolverExplorer


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


# One rule for every explorer (nodecourse.widgets._base.check_control_value): a constructor value
# outside its control's range is refused by name, never clamped. (argument, value, words of the range)
OUT_OF_RANGE = {
    "SolverExplorer": [
        ("rtol", 1e-12, "[1e-10, 0.1]"),
        ("atol", 1.0, "[1e-12, 0.1]"),
        ("step_size", 2.0, "[0.0001, 1]"),
        ("method", "rk5", "valid: ["),
        ("problem", "lorenz", "valid: ["),
    ],
    "AdjointExplorer": [
        ("lam", -40.0, "[-30, -0.5]"),
        ("T", 5.0, "[0.25, 4]"),
        ("tol", 1e-12, "[1e-10, 0.001]"),
        ("mode", "symbolic", "valid: ['backprop'"),
    ],
    "DEQExplorer": [
        ("method", "newton", "valid: ["),
        ("tol", 1e-5, "valid: [0.01"),
        ("jac_weight", 0.5, "valid: [0.0, 0.3"),
    ],
    "AnnulusExplorer": [
        ("augment_dim", 5, "[0, 3]"),
        ("epochs", 2, "[5, 150]"),
        ("epochs", 200, "raise max_epochs"),
        ("seed", 9, "[0, 4]"),
        ("epochs", 10.5, "not an integer"),
    ],
}


def _explorers():
    from nodecourse.widgets import AnnulusExplorer

    return {cls.__name__: cls for cls in (SolverExplorer, AdjointExplorer, DEQExplorer, AnnulusExplorer)}


@pytest.mark.parametrize(
    "name,arg,value,words", [(n, a, v, w) for n, cases in OUT_OF_RANGE.items() for a, v, w in cases]
)
def test_explorers_refuse_an_out_of_range_value_by_name(name, arg, value, words, monkeypatch):
    import re

    cls = _explorers()[name]
    monkeypatch.setattr(cls, "update", lambda self: None)  # the check runs before any compute
    with pytest.raises(ValueError) as info:
        cls(**{arg: value}, render=False)
    message = str(info.value)
    shown = f"{value:g}" if isinstance(value, float) else repr(value)
    assert message.startswith(f"{name}: {arg}={shown} "), message
    assert words in message, message
    assert re.search(r"pass (one of these|" + re.escape(arg) + r" from)", message), message  # the fix


def test_every_explorer_builds_its_value_controls_through_the_one_rule(monkeypatch):
    """No explorer builds a slider or dropdown for a constructor argument on its own (it would clamp)."""
    import inspect

    for cls in _explorers().values():
        source = inspect.getsource(cls.__init__)
        assert "self._control(" in source, cls.__name__
        assert "w.FloatSlider(" not in source and "w.IntSlider(" not in source and "w.Dropdown(" not in source, (
            cls.__name__
        )


@pytest.mark.parametrize("name", ["SolverExplorer", "AdjointExplorer", "DEQExplorer", "AnnulusExplorer"])
def test_explorer_defaults_and_range_ends_still_construct(name, monkeypatch):
    cls = _explorers()[name]
    monkeypatch.setattr(cls, "update", lambda self: None)  # construction only; the solves are tested elsewhere
    explorer = cls(render=False)
    for control in explorer.controls:
        assert control.value is not None
    if name == "AdjointExplorer":  # the ends of each range are inside it (log slider ends included)
        ends = cls(lam=-30.0, T=4.0, tol=1e-10, render=False)
        assert (ends.lam.value, ends.T.value, ends.tol.value) == (-30.0, 4.0, 1e-10)
        assert cls(tol=1e-3, render=False).tol.value == 1e-3
