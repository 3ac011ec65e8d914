"""The claims ledger: small reproductions of the course's published figures.

Each row is a function registered with :func:`claim` together with its
:class:`Threshold`, declared in code before anything is measured: the published
figure itself (kind ``published``) or, where nothing is published, the course's
own (kind ``course``, with the reason). The row runs a measurement (smaller in
quick mode) and returns a :class:`Measurement` whose :class:`ClaimVerdict` is computed by
code from what was measured, never written by hand. Verdicts that rest on several
seeds compare a :class:`ConfidenceInterval` over the seeds with the threshold
(:func:`judge`), so floating-point noise between machines cannot flip them; a two-part
claim is judged on both parts (:func:`combine`).

``nodecourse claims [--quick] [--only ID] [--json | --format text|markdown|html]``
runs the rows (``--executor ray [--address ADDR] [--workers N]`` as Ray tasks, ``--cache DIR`` to
skip the rows a previous run finished) and prints one table (wrapped, never truncated), one JSON
document, or an escaped Markdown/HTML report; a lesson shows its own rows with
``show(["annulus"])``.

Rows live in ``nodecourse/lessons/lessonNN/`` (one package per lesson, its ``rows`` module);
:func:`load_rows` imports them, which registers their rows.

This file is the package's surface: import from ``nodecourse.claims``. The modules behind it are
private, one job each:

- :mod:`~nodecourse.claims._verdict`: :class:`ClaimVerdict`, :class:`Threshold`, :class:`Measurement`;
- :mod:`~nodecourse.claims._spread`: :class:`ConfidenceInterval`, :func:`seed_interval`,
  :func:`judge`, :func:`judge_effect`, :func:`judge_median`, :func:`median_interval`, :func:`sign_test`,
  :func:`combine`, :func:`parts_text`;
- :mod:`~nodecourse.claims._registry`: :func:`claim`, :data:`REGISTRY`, :func:`load_rows`,
  :class:`ClaimSpec`, :class:`ClaimResult`; the rule for a published figure at a scale this machine cannot
  run (:data:`UNRUN_SCALE_WORDS`, :func:`unrun_scale_words`, :func:`unrun_scale_parts`,
  :func:`check_unrun_scale`);
- :mod:`~nodecourse.claims._runner`: :func:`run_claims`, :func:`show`;
- :mod:`~nodecourse.claims._executors`: where the rows run, one after another or one Ray task each
  (:data:`EXECUTORS`), and the cache of finished rows (:class:`RowCache`, :func:`code_version`); the Ray
  runtime and its tasks, which lesson 5's learning curve shares (:func:`ray_runtime`, :func:`run_tasks`,
  :func:`limit_task_threads`);
- :mod:`~nodecourse.claims._columns`: what every report shares (:data:`COLUMNS`,
  :func:`verdict_counts`, :func:`report_header`);
- :mod:`~nodecourse.claims._text_report`, :mod:`~nodecourse.claims._markdown_report`,
  :mod:`~nodecourse.claims._html_report`: the three formats;
- :mod:`~nodecourse.claims._readme`: the table between the README's ledger markers.
"""

from nodecourse.claims._columns import COLUMNS, report_header, verdict_counts
from nodecourse.claims._executors import (
    EXECUTORS,
    RowCache,
    code_version,
    limit_task_threads,
    ray_runtime,
    run_tasks,
)
from nodecourse.claims._html_report import format_html, html_table
from nodecourse.claims._markdown_report import escape_markdown_cell, format_markdown
from nodecourse.claims._readme import LEDGER_BEGIN, LEDGER_END, replace_between_markers, verdicts_in_markdown
from nodecourse.claims._registry import (
    PUBLISHED_PART,
    REGISTRY,
    UNRUN_SCALE_WORDS,
    ClaimResult,
    ClaimSpec,
    check_unrun_scale,
    claim,
    load_rows,
    unrun_scale_parts,
    unrun_scale_words,
)
from nodecourse.claims._runner import run_claims, show
from nodecourse.claims._spread import (
    ConfidenceInterval,
    MedianInterval,
    combine,
    judge,
    judge_effect,
    judge_median,
    median_interval,
    parts_text,
    seed_interval,
    sign_test,
)
from nodecourse.claims._text_report import format_table
from nodecourse.claims._verdict import THRESHOLD_KINDS, ClaimVerdict, Measurement, Threshold, verdict_text

__all__ = [
    "COLUMNS",
    "EXECUTORS",
    "LEDGER_BEGIN",
    "LEDGER_END",
    "PUBLISHED_PART",
    "REGISTRY",
    "THRESHOLD_KINDS",
    "UNRUN_SCALE_WORDS",
    "ClaimResult",
    "ClaimSpec",
    "ClaimVerdict",
    "ConfidenceInterval",
    "Measurement",
    "MedianInterval",
    "RowCache",
    "Threshold",
    "check_unrun_scale",
    "claim",
    "code_version",
    "combine",
    "escape_markdown_cell",
    "format_html",
    "format_markdown",
    "format_table",
    "html_table",
    "judge",
    "judge_effect",
    "judge_median",
    "limit_task_threads",
    "load_rows",
    "median_interval",
    "parts_text",
    "ray_runtime",
    "replace_between_markers",
    "report_header",
    "run_claims",
    "run_tasks",
    "seed_interval",
    "show",
    "sign_test",
    "unrun_scale_parts",
    "unrun_scale_words",
    "verdict_counts",
    "verdict_text",
    "verdicts_in_markdown",
]
