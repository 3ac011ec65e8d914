"""What every explorer shares: showing its current figure and its controls, and the one rule
for a constructor value outside a control's range (:func:`check_control_value`)."""

from __future__ import annotations

import math
import numbers

from nodecourse.plotting import INTERACTIVE_RENDERER, CourseFigure

# CSS classes put on an explorer's widgets, so that a page (and the browser tests) can find
# the explorer, each control by its attribute name, the result line and the figure.
EXPLORER_CLASS = "nc-explorer"
CONTROL_CLASS_PREFIX = "nc-control-"
STATUS_CLASS = "nc-status"
FIGURE_CLASS = "nc-figure"


def _fmt(x) -> str:
    return f"{x:g}" if isinstance(x, float) else repr(x)


def check_control_value(owner: str, name: str, value, control, *, hint: str = "") -> None:
    """Raise ``ValueError`` when ``value`` is outside what ``control`` (an ipywidgets value widget) offers.

    The range is read from the control itself, so it cannot drift from the slider: ``min``..``max``
    for a slider (``base**min``..``base**max`` for a log slider), the option values for a
    dropdown or selection slider. The message names ``owner`` (the explorer), the argument
    ``name``, the value received, the valid range and the fix; ``hint`` adds another fix
    (e.g. the constructor argument that widens the range).
    """
    fix_more = f", or {hint}" if hint else ""
    values = getattr(control, "_options_values", None)
    if values is not None:  # Dropdown, SelectionSlider, ...: one of the offered values
        try:
            offered = value in values
        except TypeError:  # e.g. an unhashable or incomparable value
            offered = False
        if not offered:
            raise ValueError(
                f"{owner}: {name}={value!r} is not offered by its control; valid: {list(values)}; "
                f"pass one of these{fix_more}"
            )
        return
    low, high = control.min, control.max
    if hasattr(control, "base"):  # FloatLogSlider: min and max are exponents
        low, high = control.base**low, control.base**high
    integer = isinstance(control.max, int)
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral if integer else numbers.Real):
        raise ValueError(
            f"{owner}: {name}={value!r} is not {kind}; pass {name} from {_fmt(low)} to {_fmt(high)}{fix_more}"
        )
    # A relative tolerance at the ends: 10**-3 as a log slider's end must accept 1e-3 as written.
    inside = low <= value <= high or math.isclose(value, low, rel_tol=1e-9) or math.isclose(value, high, rel_tol=1e-9)
    if not inside:  # NaN lands here too
        raise ValueError(
            f"{owner}: {name}={_fmt(value)} is outside its control's range [{_fmt(low)}, {_fmt(high)}]; "
            f"pass {name} from {_fmt(low)} to {_fmt(high)}{fix_more} (a slider would clamp it "
            "without a word)"
        )


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

    def _control(self, name: str, factory, value, *, hint: str = "", **options):
        """Build the control ``factory(**options)`` for the constructor argument ``name`` and set it
        to ``value``, refusing (:func:`check_control_value`) a value outside the control's range.

        Every explorer builds its value controls through this method: one rule for all widgets.
        """
        # Built without the value first: ipywidgets clamps an out-of-range value silently,
        # so the range is read from the control and checked before the value is set.
        control = factory(**options)
        check_control_value(type(self).__name__, name, value, control, hint=hint)
        control.value = value
        return control

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
            if isinstance(self.figure, CourseFigure):
                # A live figure needs no static PNG: kaleido's seconds per draw would lag every move
                # of a control, and widget output is not what a rendered page shows.
                self.figure.show(renderer=INTERACTIVE_RENDERER)
            else:
                display(self.figure)

    def _ipython_display_(self):
        from IPython.display import display

        self._add_dom_hooks()
        display(self.widget)
