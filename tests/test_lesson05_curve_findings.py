"""What lesson 5 says of its learning curve: the gap to the published levels, and what is not measured."""

from __future__ import annotations

from snapshot_support import assert_snapshot

from nodecourse.lessons import lesson05 as L
from nodecourse.lessons.lesson05 import curve
from nodecourse.lessons.lesson05.config import PUBLISHED
from nodecourse.models import physionet_settings


def _result(aucs: dict[tuple[int, int], float], source: str = "shared", sizes=(1000, 3200)) -> curve.CurveResult:
    """ODE-RNN's points at ``sizes`` and seeds 0-2; ``aucs[(size, seed)]``."""
    config = curve.CurveConfig(sizes=sizes, seeds=(0, 1, 2), models=("odernn",), settings="course")
    points = tuple(curve.CurvePoint("odernn", n, s, aucs[(n, s)], 800, 1.0) for n in sizes for s in (0, 1, 2))
    return curve.CurveResult(config, points, source, 1.0, "x86_64, Linux, torch threads 1", 12.0)


RISING = {(1000, 0): 0.78, (1000, 1): 0.77, (1000, 2): 0.79, (3200, 0): 0.80, (3200, 1): 0.80, (3200, 2): 0.81}
FLAT = {(1000, 0): 0.78, (1000, 1): 0.80, (1000, 2): 0.79, (3200, 0): 0.79, (3200, 1): 0.79, (3200, 2): 0.79}
REACHING = {(1000, 0): 0.80, (1000, 1): 0.81, (1000, 2): 0.79, (3200, 0): 0.83, (3200, 1): 0.82, (3200, 2): 0.83}


def _means(f: L.CurveFindings) -> dict[int, float]:
    return {s.n_train: round(s.mean, 3) for s in f.result.summary() if s.model == "odernn"}


def test_a_rising_curve_below_the_published_range_says_so_with_its_paired_interval():
    f = L.CurveFindings.from_curve(_result(RISING), "full", full_measured=True)
    assert not f.synthetic and f.full_measured and _means(f) == {1000: 0.78, 3200: 0.803}
    mean, sd = PUBLISHED["odernn"]
    assert (mean, round(mean - sd, 3)) == (0.833, 0.824) and mean - 0.803 > 0  # short of the published mean
    text = f.markdown()
    assert "quick-mode" not in text and "full mode runs it" not in text
    # the reading (it rises, and is still below the published range) and the paired interval: in the snapshot
    assert_snapshot("lesson05.curve-rising-full", text)


def test_a_flat_curve_and_one_that_reaches_the_published_range_read_differently():
    flat = L.CurveFindings.from_curve(_result(FLAT), "full", full_measured=True)
    assert _means(flat) == {1000: 0.79, 3200: 0.79}
    assert_snapshot("lesson05.curve-flat-full", flat.markdown())  # "the interval holds no change"
    reaching = L.CurveFindings.from_curve(_result(REACHING), "full", full_measured=True)
    assert _means(reaching) == {1000: 0.8, 3200: 0.827}
    assert_snapshot("lesson05.curve-reaching-full", reaching.markdown())  # "within reach at 3,200"


def test_every_mode_says_the_published_settings_curve_is_not_measurable_and_gives_its_command():
    for mode, full in (("quick", False), ("full", True)):
        f = L.CurveFindings.from_curve(_result(RISING), mode, full_measured=full)
        text = f.markdown()
        # the "not measured" statement every mode must make, with the command that measures it
        assert "Not measurable at this scale: the curve at the published settings" in text
        assert L.FULL_CURVE_COMMAND in text
        # the course's settings
        assert f.result.config.settings == "course" and physionet_settings("course").epochs == 20
        assert (physionet_settings("published").epochs, physionet_settings("published").batch_size) == (100, 50)
        assert_snapshot(f"lesson05.curve-rising-{mode}", text)


def test_quick_mode_says_its_sizes_are_not_the_benchmarks():
    f = L.CurveFindings.from_curve(_quick(), "quick")
    assert not f.full_measured and f.result.config.sizes == (100, 400)
    assert curve.COURSE_CURVE.sizes == (1000, 2000, 3200) and len(curve.COURSE_CURVE.seeds) == 3
    assert_snapshot("lesson05.curve-quick-sizes", f.markdown())  # "not where the benchmark's curve lies"


def _quick() -> curve.CurveResult:
    aucs = {(n, s): 0.6 + 0.0001 * n + 0.01 * s for n in (100, 400) for s in (0, 1, 2)}
    return _result(aucs, sizes=(100, 400))


def test_the_stand_in_is_compared_with_nothing_published():
    f = L.CurveFindings.from_curve(_result(RISING, source="synthetic"), "quick")
    assert f.synthetic
    text = f.markdown()
    # nothing compared with the published levels: the gap section and the published mean are absent
    assert "Do more patients close the gap" not in text and "short of it" not in text
    assert "published 0.833" not in text
    assert_snapshot("lesson05.curve-synthetic", text)  # the stand-in names itself
