"""What lesson 5 says of its learning curve: the gap to the published levels, and what is not measured."""

from __future__ import annotations

from nodecourse.lessons import lesson05 as L
from nodecourse.lessons.lesson05 import curve


def _result(aucs: dict[tuple[int, int], float], source: str = "shared", sizes=(1000, 3200)) -> curve.CurveResult:
    """ODE-RNN's points at ``sizes`` and seeds 0-2; ``aucs[(size, seed)]``."""
    config = curve.CurveConfig(sizes=sizes, seeds=(0, 1, 2), models=("odernn",), settings="course")
    points = tuple(curve.CurvePoint("odernn", n, s, aucs[(n, s)], 800, 1.0) for n in sizes for s in (0, 1, 2))
    return curve.CurveResult(config, points, source, 1.0, "x86_64, Linux, torch threads 1", 12.0)


RISING = {(1000, 0): 0.78, (1000, 1): 0.77, (1000, 2): 0.79, (3200, 0): 0.80, (3200, 1): 0.80, (3200, 2): 0.81}
FLAT = {(1000, 0): 0.78, (1000, 1): 0.80, (1000, 2): 0.79, (3200, 0): 0.79, (3200, 1): 0.79, (3200, 2): 0.79}
REACHING = {(1000, 0): 0.80, (1000, 1): 0.81, (1000, 2): 0.79, (3200, 0): 0.83, (3200, 1): 0.82, (3200, 2): 0.83}


def test_a_rising_curve_below_the_published_range_says_so_with_its_paired_interval():
    text = L.CurveFindings.from_curve(_result(RISING), "full", full_measured=True).markdown()
    assert "ODE-RNN: 0.780 → 0.803, change +0.023 (95 % interval" in text
    assert "published 0.833 (lower end 0.824), 0.030 short of it at 3,200" in text
    assert "more patients raise it, and at 3,200 it is still below the published range" in text
    assert "quick-mode" not in text and "full mode runs it" not in text


def test_a_flat_curve_and_one_that_reaches_the_published_range_read_differently():
    flat = L.CurveFindings.from_curve(_result(FLAT), "full", full_measured=True).markdown()
    assert "the interval holds no change: 3 seeds do not decide whether 3,200 patients do better than 1,000" in flat
    reaching = L.CurveFindings.from_curve(_result(REACHING), "full", full_measured=True).markdown()
    assert "the published range is within reach at 3,200 patients" in reaching


def test_every_mode_says_the_published_settings_curve_is_not_measurable_and_gives_its_command():
    for mode, full in (("quick", False), ("full", True)):
        text = L.CurveFindings.from_curve(_result(RISING), mode, full_measured=full).markdown()
        assert "Not measurable at this scale: the curve at the published settings" in text
        assert "1-minute grid, 100 epochs, batches of 50" in text and L.FULL_CURVE_COMMAND in text
        assert "1-hour grid; 20 epochs here, 20 in full mode" in text  # the course's settings, measured


def test_quick_mode_says_its_sizes_are_not_the_benchmarks():
    text = L.CurveFindings.from_curve(_quick(), "quick").markdown()
    assert "not where the benchmark's curve lies" in text and "1,000 / 2,000 / 3,200 patients, 3 seeds" in text


def _quick() -> curve.CurveResult:
    aucs = {(n, s): 0.6 + 0.0001 * n + 0.01 * s for n in (100, 400) for s in (0, 1, 2)}
    return _result(aucs, sizes=(100, 400))


def test_the_stand_in_is_compared_with_nothing_published():
    text = L.CurveFindings.from_curve(_result(RISING, source="synthetic"), "quick").markdown()
    assert "Synthetic stand-in" in text and "says nothing about PhysioNet" in text
    assert "Do more patients close the gap" not in text and "short of it" not in text
    assert "published 0.833" not in text
