"""The construction steps every explorer repeats: the device check and control, the layout
(two rows of controls, a status line, the figure area) and showing a result.

(:mod:`nodecourse.widgets._base` holds the display mixin, :class:`~nodecourse.widgets._base.FigureExplorer`.)
"""

from __future__ import annotations

from typing import Callable, Sequence


def check_device(device: str) -> None:
    """Raise ``ValueError`` naming ``device`` and the devices available here when it is not one of them."""
    from nodecourse.config import available_devices

    available = available_devices()
    if device not in available:
        raise ValueError(f"device={device!r} is not available here; available: {available}")


def device_control(device: str):
    """The ``device`` dropdown (the devices :func:`nodecourse.config.available_devices` finds)."""
    import ipywidgets as w

    from nodecourse.config import available_devices

    return w.Dropdown(
        options=available_devices(),
        value=device,
        description="device",
        tooltip="where the computation runs (the devices found on this machine)",
    )


def assemble(explorer, controls: Sequence, first_row: int, notes: Sequence = ()) -> None:
    """Give ``explorer`` its ``controls`` laid out in two rows (``controls[:first_row]`` above the
    rest), then ``notes`` (widgets that explain the controls, e.g. why one is greyed out), a
    ``status`` line and an ``output`` area for the figure; then observe the controls and run the
    first ``update()``."""
    import ipywidgets as w

    explorer.status = w.HTML()
    explorer.output = w.Output()
    explorer.controls = list(controls)
    explorer.widget = w.VBox(
        [
            w.HBox(explorer.controls[:first_row]),
            w.HBox(explorer.controls[first_row:]),
            *notes,
            explorer.status,
            explorer.output,
        ]
    )
    explorer.figure = None
    explorer._observe_controls()
    explorer.update()


def show_result(explorer, result, figure: Callable):
    """Keep ``result`` on ``explorer.result``, put its ``summary()`` in the status line and, when
    the explorer renders, draw ``figure(result)``; return ``result``."""
    explorer.result = result
    explorer.status.value = f"<code>{result.summary()}</code>"
    if explorer.render:
        explorer.figure = figure(result)
        explorer._draw()
    return result
