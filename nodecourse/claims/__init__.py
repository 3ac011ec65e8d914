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

from nodecourse.claims import (
    _columns,
    _executors,
    _html_report,
    _markdown_report,
    _readme,
    _registry,
    _runner,
    _spread,
    _text_report,
    _verdict,
)
from nodecourse.claims._columns import *  # noqa: F403
from nodecourse.claims._executors import *  # noqa: F403
from nodecourse.claims._html_report import *  # noqa: F403
from nodecourse.claims._markdown_report import *  # noqa: F403
from nodecourse.claims._readme import *  # noqa: F403
from nodecourse.claims._registry import *  # noqa: F403
from nodecourse.claims._runner import *  # noqa: F403
from nodecourse.claims._spread import *  # noqa: F403
from nodecourse.claims._text_report import *  # noqa: F403
from nodecourse.claims._verdict import *  # noqa: F403

__all__ = [
    *_columns.__all__,
    *_executors.__all__,
    *_html_report.__all__,
    *_markdown_report.__all__,
    *_readme.__all__,
    *_registry.__all__,
    *_runner.__all__,
    *_spread.__all__,
    *_text_report.__all__,
    *_verdict.__all__,
]
