"""What every explorer shares: showing its current figure and its controls."""
from __future__ import annotations


class FigureExplorer:
    """Mixin for an explorer with ``self.controls`` (its value widgets), ``self.widget``
    (their layout), ``self.output`` (an ``ipywidgets.Output``), ``self.figure`` (the
    latest matplotlib figure) and an ``update()`` method that recomputes from the controls.

    Outside a notebook nothing is drawn: the figure stays on ``.figure``, so
    tests can drive the callbacks headless.
    """

    def _observe_controls(self) -> None:
        """Re-run ``update()`` whenever any control's value changes."""
        for control in self.controls:
            control.observe(self._on_change, names="value")

    def _on_change(self, change) -> None:
        self.update()

    def _draw(self) -> None:
        from IPython import get_ipython
        from IPython.display import display

        if get_ipython() is None:  # no notebook: the figure is kept in .figure
            return
        self.output.clear_output(wait=True)
        with self.output:
            display(self.figure)

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
