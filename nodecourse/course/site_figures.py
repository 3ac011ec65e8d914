"""The site's plotly figures: each output as its static PNG (what a reader without JavaScript sees)
with a box that plotly.js draws the interactive figure into (:func:`plotly_output_html`), and the
script that draws them, laid out for a phone in a box narrower than :data:`NARROW_FIGURE_PX`
(:data:`FIGURE_SCRIPT`, a template of plotly.js's path).
"""

from __future__ import annotations

import html

from nodecourse.course.site_notebook import PLOTLY_MIME, json_for_script

#: Below this width (px) of its box a figure is laid out for a phone (FIGURE_SCRIPT's ``forNarrow``):
#: the legend under the plot and side-by-side panels stacked, so the plot keeps the width.
NARROW_FIGURE_PX = 600
FIGURE_SCRIPT = """<script src="%s"></script>
<script>
function forNarrow(layout, width) {
  if (width >= NARROW) return layout;
  var margin = Object.assign({b: 40}, layout.margin || {}, {l: 50, r: 10});
  layout.margin = margin;
  // a long title wraps (plotly does not), under the mode bar rather than behind it
  var title = typeof layout.title === 'string' ? {text: layout.title} : Object.assign({}, layout.title || {});
  var lines = 0;
  if (title.text) {
    var room = Math.max(20, Math.floor((width - 20) / 9)), words = String(title.text).split(' '), out = [], line = '';
    words.forEach(function (w) {
      if (line && (line + ' ' + w).replace(/<[^>]*>/g, '').length > room) { out.push(line); line = w; }
      else line = line ? line + ' ' + w : w;
    });
    out.push(line);
    lines = out.length;
    layout.title = Object.assign(title, {text: out.join('<br>'), x: 0, xanchor: 'left', y: 1, yref: 'container',
                                         yanchor: 'top', pad: {t: 44, l: 8}});
  }
  margin.t = 40 + lines * 22 + (lines ? 20 : 0);
  // side-by-side panels (make_subplots' columns) stack, one above the other, each as wide as the box
  var xs = Object.keys(layout).filter(function (k) { return /^xaxis[0-9]*$/.test(k) && layout[k].domain; });
  var columns = {};
  xs.forEach(function (k) { columns[layout[k].domain[0].toFixed(3)] = true; });
  var n = Object.keys(columns).length > 1 ? xs.length : 1;
  var panel = 260, gapPx = 110;
  layout.height = n > 1 ? n * panel + (n - 1) * gapPx + margin.t + margin.b + 100
                        : (layout.height || 360) + 100 + lines * 22;
  var plotHeight = layout.height - margin.t - margin.b;
  if (n > 1) {
    xs.sort(function (a, b) { return layout[a].domain[0] - layout[b].domain[0]; });
    var gap = gapPx / plotHeight, each = (1 - gap * (n - 1)) / n;
    var titles = (layout.annotations || []).filter(function (a) { return a.xref === 'paper' && a.yref === 'paper'; });
    var moves = xs.map(function (k, i) {
      var old = layout[k].domain, top = 1 - i * (each + gap), ykey = 'yaxis' + (layout[k].anchor || 'y').slice(1);
      layout[k] = Object.assign({}, layout[k], {domain: [0, 1]});
      if (layout[ykey]) layout[ykey] = Object.assign({}, layout[ykey], {domain: [top - each, top]});
      return [(old[0] + old[1]) / 2, top];
    });
    titles.forEach(function (a) {  // a panel's title (over its old column) moves with the panel
      var move = moves.filter(function (m) { return Math.abs(a.x - m[0]) < 0.01; })[0];
      if (move) { a.x = 0.5; a.y = move[1]; }
    });
  }
  // the legend under the plot, across the width (not two thirds of it at the side)
  layout.legend = Object.assign({}, layout.legend || {},
    {orientation: 'h', x: 0, xanchor: 'left', y: -80 / plotHeight, yanchor: 'top'});
  return layout;
}
var NARROW = NARROW_PX;
document.querySelectorAll('.nc-plotly').forEach(function (box) {
  var spec = JSON.parse(box.querySelector('script.nc-plotly-json').textContent);
  var plot = box.querySelector('.nc-plotly-live');
  if (!window.Plotly) return;  // the static image stays
  var layout = forNarrow(Object.assign({}, spec.layout || {}), box.clientWidth);
  delete layout.width;  // the box's width, so a phone shows the whole figure
  Plotly.newPlot(plot, spec.data || [], layout, {responsive: true}).then(function () {
    box.classList.add('nc-plotly-drawn');
    if (window.ncMarkScrollers) window.ncMarkScrollers();  // a drawn figure may now scroll
  });
});
</script>""".replace("NARROW_PX", str(NARROW_FIGURE_PX))


def plotly_output_html(data: dict, alt: str = "") -> str:
    """An output's plotly figure as HTML: the static PNG (shown without scripts), a box that
    plotly.js draws the interactive figure into, and the figure's JSON."""
    spec = json_for_script(data[PLOTLY_MIME])
    png = data.get("image/png")
    static = (
        f'<img class="nc-plotly-static" alt="{html.escape(alt or "Figure", quote=True)}" '
        f'src="data:image/png;base64,{png.strip()}">'
        if png
        else '<p class="nc-plotly-missing">This figure has no static image: run the notebook to see it.</p>'
    )
    return (
        f'<div class="nc-plotly" role="figure" aria-label="{html.escape(alt or "Figure", quote=True)}">{static}'
        f'<div class="nc-plotly-live"></div>'
        f'<script type="application/json" class="nc-plotly-json">{spec}</script></div>'
    )
