"""Lesson 7's findings render their own Markdown: built here from small hand-made study results, each
checked for the fields its sentences quote (ranges, means, reductions, which model is named), including
edge cases (no measurable peak, a neural ODE that spends the same work on every input); the words are
kept whole in one snapshot per variant (tests/snapshots/lesson07.*.md)."""

from dataclasses import replace
from types import SimpleNamespace

import pytest
from snapshot_support import assert_snapshot

from nodecourse.claims import ClaimVerdict
from nodecourse.lessons import lesson07 as L


def _run(name, seed, *, work=(10.0,), train_seconds=1.0, saved=1000, peak=None):
    return SimpleNamespace(
        name=name, seed=seed, work_per_input=list(work), train_seconds=train_seconds, saved_bytes=saved, peak_bytes=peak
    )


def test_per_input_work_quotes_both_ranges_and_names_a_flat_ode():
    runs = [_run("DEQ", 0, work=(8, 12, 10)), _run("Neural ODE", 0, work=(20, 20, 20))]
    flat = L.PerInputWork.from_runs(runs)
    assert (min(flat.deq_iters), max(flat.deq_iters), sum(flat.deq_iters) / 3) == (8, 12, 10.0)
    assert set(flat.ode_nfe) == {20}  # the same NFE on every input
    assert_snapshot("lesson07.per-input-work-flat-ode", flat.markdown())
    varied = L.PerInputWork.from_runs([_run("DEQ", 0, work=(9,)), _run("Neural ODE", 0, work=(14, 26))])
    assert (min(varied.ode_nfe), max(varied.ode_nfe)) == (14, 26)
    assert_snapshot("lesson07.per-input-work-varied-ode", varied.markdown())


def _sweep():
    rows = []
    for seed in (0, 1):
        for tol, nfe, acc, each in ((1e-1, 14, 0.95, [14, 14]), (1e-3, 20, 0.96, [20, 26])):
            rows.append(L.DialSolve(seed, tol, acc, nfe, tuple(each), seconds=0.01 * nfe))
    return rows


def test_tolerance_table_marks_the_training_tolerance_loosest_first():
    table = L.ToleranceTable.from_sweep(_sweep(), 1e-3)
    assert [r.tol for r in table.rows] == [1e-1, 1e-3]
    assert [r.trained for r in table.rows] == [False, True]
    got = [(r.accuracy, r.nfe, r.nfe_min, r.nfe_max, 1000 * r.seconds) for r in table.rows]
    assert got == [pytest.approx((0.95, 14, 14, 14, 140.0)), pytest.approx((0.96, 20, 20, 26, 200.0))]
    assert_snapshot("lesson07.tolerance-table", table.markdown())


def test_adaptive_work_sentence_and_its_undecided_readings_with_two_seeds():
    found = L.AdaptiveWork.from_sweep(_sweep(), 1e-3)
    assert found.readings["at the training tolerance"] is ClaimVerdict.UNDECIDED  # two seeds: no interval
    assert found.train_tol == 1e-3
    assert found.ranges == {1e-1: (14, 14), 1e-3: (20, 26)}  # at 0.1 every input got 14: no other tolerance varies
    assert_snapshot("lesson07.adaptive-work-varies", found.markdown())
    flat = L.AdaptiveWork.from_sweep([replace(r, nfe_per_input=(20, 20)) for r in _sweep()], 1e-3)
    assert flat.ranges[1e-3] == (20, 20)  # the same NFE on every input: no per-input adaptation
    assert_snapshot("lesson07.adaptive-work-flat", flat.markdown())


def test_time_ratios_quote_each_models_range():
    base, slow = (0.001, 0.002), (0.03, 0.08)
    per_model = {n: slow if n == "DEQ" else base for n in L.MODELS}
    timings = L.Timings((0, 1), per_model, per_model, (450, 450), 1)
    runs = [_run(n, s, train_seconds=4.0 if n == "DEQ" else 2.0) for s in (0, 1) for n in L.MODELS]
    found = L.TimeRatios.from_studies(timings, runs)
    by = {r.model: r for r in found.ratios}
    assert [r.model for r in found.ratios] == list(L.MODELS)
    assert by["DEQ"].train == pytest.approx((30.0, 40.0)) and by["DEQ"].inference == pytest.approx((30.0, 40.0))
    assert by["DEQ"].whole == pytest.approx((2.0, 2.0))
    assert by["Neural ODE"].whole == pytest.approx((1.0, 1.0)) and by["Neural ODE"].train == pytest.approx((1.0, 1.0))
    assert_snapshot("lesson07.time-ratios", found.markdown())


def _summary(model: str, **fields) -> L.ModelSummary:
    """A capstone-table row with made-up values (the fields a test sets in ``fields``)."""
    row = dict(
        model=model,
        accuracy_mean=0.94,
        accuracy_sd=0.01,
        seeds=5,
        parameters=19_147,
        saved_kib=678.0,
        peak_mib=None,
        work_mean=17.3,
        work_min=9.0,
        work_max=40.0,
        work_last_epoch=17.0,
        work_first_epoch=12.0,
        backward_work=None,
        train_s=12.0,
        inference_ms_per_1000=80.0,
    )
    return L.ModelSummary(**(row | fields))


def test_peak_order_highest_first_or_says_it_cannot_be_measured():
    rows = [_summary("ResNet", peak_mib=1.5), _summary("DEQ", peak_mib=3.25)]
    found = L.PeakOrder.from_table(rows, L.QUICK_CAPSTONE)
    assert found.peak_mib == {"ResNet": 1.5, "DEQ": 3.25} and found.batch == L.QUICK_CAPSTONE.memory_batch == 256
    assert_snapshot("lesson07.peak-order", found.markdown())
    none = L.PeakOrder.from_table([_summary("ResNet", peak_mib=None)], L.QUICK_CAPSTONE)
    assert none.peak_mib == {"ResNet": None}
    # the words are the contract: an unmeasured peak is said to be unmeasurable, not shown as a number
    assert "cannot be measured on this platform" in none.markdown()
    assert_snapshot("lesson07.peak-order-not-measurable", none.markdown())


def test_peer_memory_table_reductions_and_a_missing_peak():
    peers = {
        "ResNet 4": L.PeerBytes("ResNet", 4, 19_000, 4096, None),
        "Unrolled 16": L.PeerBytes("Unrolled", 16, 19_100, 10240, 2 * 2**20),
    }
    runs = [_run("DEQ", s, saved=1024, peak=2**20) for s in (0, 1)]
    table = L.PeerMemoryTable.from_studies(peers, runs)
    assert (table.deq_saved, table.deq_peak) == (1024, 2**20)
    got = [
        (p.name, p.parameters, p.saved_bytes, p.saved_reduction, p.peak_bytes, p.peak_reduction) for p in table.peers
    ]
    assert got == [("ResNet 4", 19_000, 4096, 0.75, None, None), ("Unrolled 16", 19_100, 10240, 0.9, 2 * 2**20, 0.5)]
    assert_snapshot("lesson07.peer-memory", table.markdown())
    no_peak = L.PeerMemoryTable.from_studies(peers, [_run("DEQ", 0, saved=1024, peak=None)])
    assert no_peak.deq_peak is None and [p.peak_reduction for p in no_peak.peers] == [None, None]
    assert_snapshot("lesson07.peer-memory-no-peak", no_peak.markdown())


def test_capstone_table_renders_the_summary_with_the_annulus_column():
    row = _summary("DEQ")
    md = L.CapstoneTable((row,), {"DEQ": "not measured (lesson 3 trained the flows and a ResNet only)"}).markdown()
    lines = md.splitlines()
    assert len(lines) == 3 and lines[2].startswith("| DEQ |")  # header, rule, the one row
    # the words are the contract: the row's last cell is the annulus column's "not measured" statement
    assert lines[2].endswith("| not measured (lesson 3 trained the flows and a ResNet only) |")
    assert_snapshot("lesson07.capstone-table", md)
