"""What every explorer shares: showing its current figure and its controls."""
from __future__ import annotations


class FigureExplorer:
    """Mixin for an explorer with ``self.widget`` (the controls), ``self.output``
    (an ``ipywidgets.Output``) and ``self.figure`` (the latest matplotlib figure).

    Outside a notebook nothing is drawn: the figure stays on ``.figure``, so
    tests can drive the callbacks headless.
    """

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
