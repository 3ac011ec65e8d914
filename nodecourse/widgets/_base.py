"""What every explorer shares: showing its current figure and its controls, the one rule
for a constructor value outside a control's range (:func:`check_control_value`), and the busy
state while a computation runs (:meth:`FigureExplorer._recompute`)."""

from __future__ import annotations

import html
import math
import numbers
from typing import Callable, TypeVar

from nodecourse.plotting import INTERACTIVE_RENDERER, CourseFigure

R = TypeVar("R")

# CSS classes put on an explorer's widgets, so that a page (and the browser tests) can find
# the explorer, each control by its attribute name, the result line and the figure.
EXPLORER_CLASS = "nc-explorer"
CONTROL_CLASS_PREFIX = "nc-control-"
STATUS_CLASS = "nc-status"
FIGURE_CLASS = "nc-figure"
BUSY_CLASS = "nc-busy"  # the "computing…" line in the status while a computation runs
STALE_CLASS = "nc-stale"  # on the figure area while it shows a result for earlier settings
ERROR_CLASS = "nc-error"  # the status line of a computation that failed

# Dims the figure while it is stale. Carried by the status line whenever the figure is marked stale
# (ipywidgets' Layout has no opacity); without it the caption still says the figure is the previous one.
_STALE_STYLE = f"<style>.{FIGURE_CLASS}.{STALE_CLASS} {{ opacity: 0.35; }}</style>"

# ipywidgets 8 draws a slider with noUiSlider and gives it no way to name the handle: the handle
# (role="slider") gets aria-valuenow/aria-valuetext but no aria-label, and the description's <label>
# is not tied to it, so a screen reader announces a bare number. This script, shown in each
# explorer's figure area (widget output: never saved in a notebook), names every slider handle in
# an explorer after its description, and the typed-in readout after it too; a MutationObserver
# names handles that noUiSlider re-creates (it rebuilds them when a slider's range changes).
SLIDER_NAMES_JS = """
(function () {
  if (window.ncNameSliders) { window.ncNameSliders(); return; }
  let queued = false;
  function name() {
    queued = false;
    document.querySelectorAll('.nc-explorer [class*="nc-control-"]').forEach(function (control) {
      const label = control.querySelector(':scope > .widget-label');
      const text = label ? label.textContent.trim() : '';
      if (!text) { return; }
      control.querySelectorAll('.noUi-handle').forEach(function (handle) {
        if (handle.getAttribute('aria-label') !== text) { handle.setAttribute('aria-label', text); }
        if (label.title && handle.title !== label.title) { handle.title = label.title; }
      });
      const readout = control.querySelector('.widget-readout');
      if (readout && readout.getAttribute('aria-label') !== text + ' (type a value)') {
        readout.setAttribute('role', 'textbox');
        readout.setAttribute('aria-label', text + ' (type a value)');
      }
    });
  }
  window.ncNameSliders = name;
  new MutationObserver(function () {
    if (!queued) { queued = true; window.requestAnimationFrame(name); }
  }).observe(document.body, { childList: true, subtree: true });
  name();
})();
"""


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


def control_text(control) -> str:
    """What ``control`` shows, as text: a dropdown's or selection slider's label, a slider's value
    in its readout format (``1e-06`` for ``.0e``)."""
    label = getattr(control, "label", None)
    if label is not None:
        return str(label)
    fmt = getattr(control, "readout_format", None)
    if fmt:
        try:
            return format(control.value, fmt)
        except (TypeError, ValueError):  # a d3 format Python does not read
            pass
    return _fmt(control.value)


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

    While a computation runs (:meth:`_recompute`) the explorer says so: :attr:`busy` is True, the
    status line reads "computing… <settings>" (class ``nc-busy``) above the previous result line,
    every control is disabled (the one just moved included), and the figure area carries
    ``nc-stale`` (dimmed) with a caption saying it is the previous result. All of it clears when
    the result is shown, or when the computation fails (its error then is the status line and
    the figure stays marked stale). Sliders report their value on release only
    (``continuous_update=False``), so dragging one starts one computation, not one per step.
    """

    #: The word of the busy line ("computing…", "training…").
    BUSY_VERB = "computing"
    #: True while a computation started by :meth:`_recompute` runs.
    busy: bool = False
    _generation: int = 0  # the number of the latest request; only its result is shown
    _shown_line: str = ""  # the status line of the result on display (captioned "previous" when busy)

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
        """Re-run ``update()`` whenever any control's value changes (a slider's: on release).

        Every control must have a ``description`` (its visible, accessible name); one without a
        ``tooltip`` gets its description as the tooltip."""
        for control in self.controls:
            if not getattr(control, "description", ""):
                raise ValueError(
                    f"{type(self).__name__}: a control ({type(control).__name__}) has no description; "
                    "give every control a description (its name on the page and for screen readers)"
                )
            if not getattr(control, "tooltip", None):
                control.tooltip = control.description
            if control.has_trait("continuous_update"):
                # one update when the slider is released, not one per step while it is dragged
                control.continuous_update = False
            control.observe(self._on_change, names="value")
        self._add_dom_hooks()

    def _applies(self, control) -> bool:
        """Whether ``control`` applies to the current settings; one that does not stays disabled
        (greyed) when the explorer is idle. All apply unless an explorer says otherwise."""
        return True

    def _settings_text(self) -> str:
        """The current settings, as the busy line names them: "solver rk4, rtol 1e-06, ...",
        the controls that apply only."""
        return ", ".join(f"{c.description} {control_text(c)}" for c in self.controls if self._applies(c))

    def _recompute(self, compute: Callable[[], R], show: Callable[[R], R]) -> R | None:
        """Run ``compute()`` under the busy state, then ``show(result)``; return what ``show`` returns.

        Each call is a request with a number (a generation). When a later request started while
        this one ran (a control changed meanwhile, its callback run inside this computation), this
        one's outcome, result or error, is dropped: only the latest request's result is ever
        shown, so the page never shows a result for settings it no longer has. A dropped request
        returns :attr:`result` (what is on display). An error in ``compute`` or ``show`` of the
        latest request becomes the status line (the controls are enabled again) and is raised.

        In a Jupyter kernel a change the page sends while a computation runs waits in the kernel's
        queue and becomes the next request as soon as this one ends, which marks the result just
        shown as previous again; the controls are disabled so that the page rarely sends one.
        """
        self._generation += 1
        request = self._generation
        self._enter_busy()
        try:
            result = compute()
            if request != self._generation:
                return getattr(self, "result", None)
            shown = show(result)
        except Exception as exc:
            if request != self._generation:
                return getattr(self, "result", None)
            self._leave_busy(error=exc)
            raise
        self._leave_busy()
        return shown

    def _enter_busy(self) -> None:
        """Say a computation runs: busy line, controls disabled, the figure marked stale."""
        status = getattr(self, "status", None)
        self.busy = True
        if status is not None:
            line = (
                f'<div class="{BUSY_CLASS}" role="status"><b>{self.BUSY_VERB}…</b> '
                f"{html.escape(self._settings_text())}; the controls are locked until it finishes</div>"
            )
            status.value = line + self._previous_caption()
        for control in self.controls:
            control.disabled = True
        self._mark_stale(True)

    def _leave_busy(self, error: Exception | None = None) -> None:
        """Clear the busy state: controls enabled (those that apply), the figure current again;
        after an ``error`` the status line is the error and the figure stays marked stale."""
        self.busy = False
        for control in self.controls:
            control.disabled = not self._applies(control)
        status = getattr(self, "status", None)
        if error is None:
            self._mark_stale(False)
            if status is not None:
                self._shown_line = status.value
            return
        if status is not None:
            status.value = (
                f'<div class="{ERROR_CLASS}" role="alert"><b>could not compute</b> '
                f"{html.escape(self._settings_text())}: {html.escape(type(error).__name__)}: "
                f"{html.escape(str(error))}</div>" + self._previous_caption()
            )

    def _previous_caption(self) -> str:
        """The previous result line, captioned as such, with the style that dims the stale figure."""
        if not self._shown_line:
            return ""
        return (
            f"{_STALE_STYLE}<div><small>previous result, for the settings before this change "
            f"(the figure below is that result too):</small> {self._shown_line}</div>"
        )

    def _mark_stale(self, stale: bool) -> None:
        output = getattr(self, "output", None)
        if output is None or not hasattr(output, "add_class"):
            return
        if stale:
            output.add_class(STALE_CLASS)
        else:
            output.remove_class(STALE_CLASS)

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
        from IPython.display import Javascript, display

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
            # the slider handles' names (see SLIDER_NAMES_JS); after the figure, so the figure stays first
            display(Javascript(SLIDER_NAMES_JS))

    def _ipython_display_(self):
        from IPython.display import display

        self._add_dom_hooks()
        display(self.widget)
