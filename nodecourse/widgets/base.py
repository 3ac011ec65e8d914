"""What every explorer shares: showing its current figure and its controls."""
from __future__ import annotations

# CSS classes put on an explorer's widgets, so that a page (and the browser tests) can find
# the explorer, each control by its attribute name, the result line and the figure.
EXPLORER_CLASS = "nc-explorer"
CONTROL_CLASS_PREFIX = "nc-control-"
STATUS_CLASS = "nc-status"
FIGURE_CLASS = "nc-figure"


class FigureExplorer:
    """Mixin for an explorer with ``self.controls`` (its value widgets), ``self.widget``
    (their layout), ``self.output`` (an ``ipywidgets.Output``), ``self.figure`` (the
    latest matplotlib figure) and an ``update()`` method that recomputes from the controls.
    An explorer may also have ``self.status`` (an ``HTML``/``Label`` with the result line).

    Outside a notebook nothing is drawn: the figure stays on ``.figure``, so
    tests can drive the callbacks headless.

    In the page the explorer's box carries the CSS classes ``nc-explorer`` and
    ``nc-explorer-<ClassName>``, each control ``nc-control-<attribute name>`` (e.g.
    ``nc-control-method``), the result line ``nc-status`` and the figure ``nc-figure``.
    """

    def _observe_controls(self) -> None:
        """Re-run ``update()`` whenever any control's value changes."""
        for control in self.controls:
            control.observe(self._on_change, names="value")
        self._add_dom_hooks()

    def _add_dom_hooks(self) -> None:
        """Put the stable CSS classes (see the class docstring) on the widgets; idempotent."""
        widget = getattr(self, "widget", None)
        if widget is None:
            return
        widget.add_class(EXPLORER_CLASS)
        widget.add_class(f"{EXPLORER_CLASS}-{type(self).__name__}")
        names = {id(value): name for name, value in vars(self).items()}
        for control in self.controls:
            name = names.get(id(control), getattr(control, "description", "") or "control")
            control.add_class(CONTROL_CLASS_PREFIX + "".join(c if c.isalnum() or c in "-_" else "-" for c in name))
        for attr, css in (("status", STATUS_CLASS), ("output", FIGURE_CLASS)):
            part = getattr(self, attr, None)
            if part is not None and hasattr(part, "add_class"):
                part.add_class(css)

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

        self._add_dom_hooks()
        display(self.widget)
