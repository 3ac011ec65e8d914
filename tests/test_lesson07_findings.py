"""Lesson 7's findings render their own Markdown: built here from small hand-made study results, each
checked for the numbers and words its sentences quote, including edge cases (no measurable peak, a
neural ODE that spends the same work on every input)."""

from dataclasses import replace
from types import SimpleNamespace

from nodecourse.claims import ClaimVerdict
from nodecourse.lessons import lesson07 as L


def _run(name, seed, *, work=(10.0,), train_seconds=1.0, saved=1000, peak=None):
    return SimpleNamespace(
        name=name, seed=seed, work_per_input=list(work), train_seconds=train_seconds, saved_bytes=saved, peak_bytes=peak
    )


def test_per_input_work_quotes_both_ranges_and_names_a_flat_ode():
    runs = [_run("DEQ", 0, work=(8, 12, 10)), _run("Neural ODE", 0, work=(20, 20, 20))]
    md = L.PerInputWork.from_runs(runs).markdown()
    assert "8 to 12 iterations per input (mean 10.0)" in md
    assert "the same 20 NFE on every input" in md
    varied = L.PerInputWork.from_runs([_run("DEQ", 0, work=(9,)), _run("Neural ODE", 0, work=(14, 26))])
    assert "14 to 26 NFE per input" in varied.markdown()


def _sweep():
    rows = []
    for seed in (0, 1):
        for tol, nfe, acc, each in ((1e-1, 14, 0.95, [14, 14]), (1e-3, 20, 0.96, [20, 26])):
            rows.append(L.DialSolve(seed, tol, acc, nfe, tuple(each), seconds=0.01 * nfe))
    return rows


def test_tolerance_table_marks_the_training_tolerance_loosest_first():
    table = L.ToleranceTable.from_sweep(_sweep(), 1e-3)
    assert [r.tol for r in table.rows] == [1e-1, 1e-3]
    md = table.markdown()
    assert "| 0.1 | 95.00 % | 14 | 14–14 | 140.0 |" in md
    assert "| 0.001 (trained) | 96.00 % | 20 | 20–26 | 200.0 |" in md


def test_adaptive_work_sentence_and_its_undecided_readings_with_two_seeds():
    found = L.AdaptiveWork.from_sweep(_sweep(), 1e-3)
    assert found.readings["at the training tolerance"] is ClaimVerdict.UNDECIDED  # two seeds: no interval
    md = found.markdown()
    assert "At the training tolerance 0.001 every test input gets 20 to 26 NFE" in md
    assert "Inputs differ at other tolerances" not in md  # at 0.1 every input got 14
    flat = [replace(r, nfe_per_input=(20, 20)) for r in _sweep()]
    assert (
        "the same 20 NFE: the per-input adaptation the paper names is not there"
        in L.AdaptiveWork.from_sweep(flat, 1e-3).markdown()
    )


def test_time_ratios_quote_each_models_range():
    base, slow = (0.001, 0.002), (0.03, 0.08)
    per_model = {n: slow if n == "DEQ" else base for n in L.MODELS}
    timings = L.Timings((0, 1), per_model, per_model, (450, 450), 1)
    runs = [_run(n, s, train_seconds=4.0 if n == "DEQ" else 2.0) for s in (0, 1) for n in L.MODELS]
    md = L.TimeRatios.from_studies(timings, runs).markdown()
    assert "| DEQ | 30.0x to 40.0x | 30.0x to 40.0x | 2.0x to 2.0x |" in md
    assert "The DEQ: training step 30.0x to 40.0x, inference 30.0x to 40.0x." in md
    assert "its whole training run took 1.0x to 1.0x the ResNet's" in md


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
    md = L.PeakOrder.from_table(rows, L.QUICK_CAPSTONE).markdown()
    assert md == "Measured peak of one training step (batch 256), highest first: DEQ 3.25 MiB, ResNet 1.50 MiB."
    none = L.PeakOrder.from_table([_summary("ResNet", peak_mib=None)], L.QUICK_CAPSTONE).markdown()
    assert "cannot be measured on this platform" in none


def test_peer_memory_table_reductions_and_a_missing_peak():
    peers = {
        "ResNet 4": L.PeerBytes("ResNet", 4, 19_000, 4096, None),
        "Unrolled 16": L.PeerBytes("Unrolled", 16, 19_100, 10240, 2 * 2**20),
    }
    runs = [_run("DEQ", s, saved=1024, peak=2**20) for s in (0, 1)]
    table = L.PeerMemoryTable.from_studies(peers, runs)
    md = table.markdown()
    assert "| ResNet 4 | 19,000 | 4 | 75 % | n/a | n/a |" in md
    assert "| Unrolled 16 | 19,100 | 10 | 90 % | 2.00 | 50 % |" in md
    assert "The DEQ (trained): saved 1 KiB, peak 1.00 MiB." in md
    no_peak = L.PeerMemoryTable.from_studies(peers, [_run("DEQ", 0, saved=1024, peak=None)])
    assert "peak n/a." in no_peak.markdown()


def test_capstone_table_renders_the_summary_with_the_annulus_column():
    row = _summary("DEQ")
    md = L.CapstoneTable((row,), {"DEQ": "not measured (lesson 3 trained the flows and a ResNet only)"}).markdown()
    assert "| DEQ | 94.0 ± 1.0 % (5 seeds) | 19,147 | 678 | n/a | 17.3 iterations (9–40)" in md
    assert md.rstrip().endswith("| not measured (lesson 3 trained the flows and a ResNet only) |")
