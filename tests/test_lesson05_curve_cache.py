"""Lesson 5's learning curve resumes from its cache and names a fit that fails (serial executor, tiny sets)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from physionet_fixtures import synthetic_set

from nodecourse.lessons.lesson05 import curve as lc

CONFIG = lc.CurveConfig(sizes=(20, 40), seeds=(0, 1), models=("gru-d", "summary-logreg"), epochs=1)


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    """A raw synthetic set of 90 patients on a 2-hour grid."""
    return synthetic_set(tmp_path_factory.mktemp("pn_curve_cache"), 90, seed=6, quantization=2.0)


@pytest.fixture
def fits(monkeypatch):
    """Every fit the curve makes, as (model, size, seed); ``fits.fail`` raises for those keys,
    ``fits.stop_after`` interrupts the run (KeyboardInterrupt) once that many fits were made."""
    real = lc.fit_point

    class Fits(list):
        fail: set = set()
        stop_after: int | None = None

    made = Fits()

    def counted(config, task, data):
        if made.stop_after is not None and len(made) == made.stop_after:
            raise KeyboardInterrupt
        made.append((task.model, task.n_train, task.seed))
        if made[-1] in made.fail:
            raise ValueError("this fit was told to fail")
        return real(config, task, data)

    monkeypatch.setattr(lc, "fit_point", counted)
    return made


def _cache(folder):
    """The cache at one code version (the default, the package's hash, moves with any edit of the package)."""
    return lc.CurveCache(folder, version="v1")


def test_the_cache_is_the_ledgers_folder_at_the_code_version(tmp_path):
    from nodecourse.claims._executors import RowCache, code_version

    cache = lc.CurveCache(tmp_path)
    assert isinstance(cache.rows, RowCache) and cache.rows.version == code_version()
    path = cache.path(CONFIG, lc.curve_tasks(CONFIG)[0], "data")
    assert path.parent == tmp_path and path.name.startswith("curve-gru-d-n20-seed0-")
    on_gpu = cache.path(replace(CONFIG, device="cuda"), lc.curve_tasks(CONFIG)[0], "data")
    assert on_gpu != path  # a fit on another device is another fit: never read for this one


def _fields(result):
    return [(p.model, p.n_train, p.seed, p.auc, p.n_eval) for p in result.points]


def test_a_rerun_with_the_cache_fits_nothing_twice(raw, fits, tmp_path):
    first = lc.learning_curve(CONFIG, data=raw, progress=False, cache=_cache(tmp_path))
    assert len(fits) == len(lc.curve_tasks(CONFIG)) == 8
    again = lc.learning_curve(CONFIG, data=raw, progress=False, cache=_cache(tmp_path))
    assert len(fits) == 8  # every fit came from the cache
    assert _fields(again) == _fields(first)
    assert (again.data_source, again.quantization_hours) == (first.data_source, first.quantization_hours)


def test_an_interrupted_run_resumes_from_the_finished_fits(raw, fits, tmp_path):
    fits.stop_after = 3
    with pytest.raises(KeyboardInterrupt):
        lc.learning_curve(CONFIG, data=raw, progress=False, cache=_cache(tmp_path))
    assert len(fits) == 3
    fits.stop_after = None
    resumed = lc.learning_curve(CONFIG, data=raw, progress=False, cache=_cache(tmp_path))
    assert len(fits) == 8 and len(set(fits)) == 8  # the five left, none of the first three again
    assert len(resumed.points) == 8


def test_other_settings_or_other_data_are_not_read_from_the_cache(raw, fits, tmp_path):
    lc.learning_curve(CONFIG, data=raw, progress=False, cache=_cache(tmp_path))
    assert len(fits) == 8
    lc.learning_curve(replace(CONFIG, epochs=2), data=raw, progress=False, cache=_cache(tmp_path))
    assert len(fits) == 16  # more epochs: every fit again
    fewer = raw.subset(range(80))
    lc.learning_curve(CONFIG, data=fewer, progress=False, cache=_cache(tmp_path))
    assert len(fits) == 24  # other patients: every fit again
    cache = lc.CurveCache(tmp_path, version="another-version")
    lc.learning_curve(CONFIG, data=raw, progress=False, cache=cache)
    assert len(fits) == 32  # other code: every fit again


def test_a_fit_that_raises_is_named_and_the_others_finish(raw, fits, tmp_path):
    fits.fail = {("gru-d", 40, 1)}
    with pytest.raises(lc.CurveFitsFailed) as failure:
        lc.learning_curve(CONFIG, data=raw, progress=False, cache=_cache(tmp_path))
    err = failure.value
    assert len(fits) == 8  # the fits after the failed one ran too
    assert [(t.model, t.n_train, t.seed) for t, _ in err.failures] == [("gru-d", 40, 1)]
    assert isinstance(err.failures[0][1], ValueError)
    assert len(err.points) == 7 and ("gru-d", 40, 1) not in {(p.model, p.n_train, p.seed) for p in err.points}
    assert "gru-d on 40 patients, seed 1: ValueError: this fit was told to fail" in str(err)
    assert str(tmp_path) in str(err)
    fits.fail = set()
    result = lc.learning_curve(CONFIG, data=raw, progress=False, cache=_cache(tmp_path))
    assert fits[8:] == [("gru-d", 40, 1)]  # the rerun fits only the one that failed
    assert len(result.points) == 8


def test_without_a_cache_the_failure_says_how_to_resume(raw, fits):
    fits.fail = {("summary-logreg", 20, 0)}
    with pytest.raises(lc.CurveFitsFailed, match=r"summary-logreg on 20 patients, seed 0.*--cache DIR"):
        lc.learning_curve(CONFIG, data=raw, progress=False)
    assert len(fits) == 8
