"""`nodecourse physionet` (nodecourse.course.physionet_cmd) and the ledger row `physionet-auc`."""
from __future__ import annotations

import argparse
import json

import pytest

from nodecourse.course import physionet_cmd as physionet_cli
from nodecourse.claims import Verdict
from nodecourse.lessons import lesson05
from nodecourse.data import physionet


def run(argv):
    parser = argparse.ArgumentParser()
    physionet_cli.add_arguments(parser)
    return physionet_cli.main(parser.parse_args(argv))


@pytest.fixture
def synthetic_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("NODECOURSE_CACHE", str(tmp_path / "cache"))
    return physionet.synthetic(150, seed=2, directory=tmp_path / "data").directory


def test_json_output_has_the_contract_fields(synthetic_dir, capsys):
    rc = run(["--data", str(synthetic_dir), "--model", "summary-logreg", "--eval", "split", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert {"auc", "n_train", "n_eval", "seconds"} <= set(out)
    assert out["n_train"] + out["n_eval"] == 150 and 0 <= out["auc"] <= 1
    assert out["data_source"] == "path" and out["synthetic"] is False


def test_odernn_quick_run_reports_solver_work(synthetic_dir, capsys):
    rc = run(["--data", str(synthetic_dir), "--model", "odernn", "--quick", "--epochs", "1", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["mode"] == "quick" and out["epochs"] == 1
    assert out["solver"]["method"] == "euler" and out["solver"]["train_nfe"] > 0


def test_text_output_and_eval_on_another_set(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NODECOURSE_CACHE", str(tmp_path / "cache"))
    d = tmp_path / "both"
    physionet.synthetic(80, set_name="set-a", seed=1, directory=d)
    physionet.synthetic(60, set_name="set-b", seed=2, directory=d)
    rc = run(["--data", str(d), "--model", "gru-dt", "--train", "set-a", "--eval", "set-b", "--epochs", "1"])
    text = capsys.readouterr().out
    assert rc == 0 and "AUC" in text and "on 60 patients (set-b)" in text


def test_unknown_eval_set_is_refused_by_the_parser(synthetic_dir, capsys):
    with pytest.raises(SystemExit) as info:
        run(["--data", str(synthetic_dir), "--model", "odernn", "--eval", "set-c"])
    assert info.value.code == 2 and "--eval: invalid choice: 'set-c'" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--eval", "set-a"], "is the training set"),
    (["--test-fraction", "1.5"], "--test-fraction 1.5"),
    (["--threads", "0"], "--threads 0"),
])
def test_bad_options_name_the_option(synthetic_dir, capsys, argv, message):
    rc = run(["--data", str(synthetic_dir), "--model", "odernn", *argv])
    assert rc == 2 and message in capsys.readouterr().err


def test_missing_eval_set_is_an_error_not_a_synthetic_swap(synthetic_dir, capsys):
    rc = run(["--data", str(synthetic_dir), "--model", "summary-logreg", "--eval", "set-b"])
    assert rc == 2 and "does not hold PhysioNet set-b" in capsys.readouterr().err


def _fake_study(aucs, synthetic=False):
    return {"source": "synthetic" if synthetic else "shared", "synthetic": synthetic,
            "runs": {m: [{"auc": a, "seconds": 1.0} for a in v] for m, v in aucs.items()}}


@pytest.mark.parametrize("aucs, quick, synthetic, verdict", [
    ({"odernn": [0.84, 0.83], "gru-dt": [0.81, 0.82], "summary-logreg": [0.80, 0.80]}, False, False, Verdict.HOLDS),
    ({"odernn": [0.81, 0.80], "gru-dt": [0.79, 0.80], "summary-logreg": [0.80, 0.80]}, False, False,
     Verdict.DOES_NOT_HOLD),
    # set A as measured: the AUC level is reached, but the margin is inside the seed spread
    ({"odernn": [0.8335, 0.8201, 0.8352], "gru-dt": [0.8263, 0.8184, 0.8390],
      "summary-logreg": [0.8278, 0.7995, 0.8571]}, False, False, Verdict.DOES_NOT_HOLD),
    ({"odernn": [0.84, 0.84], "gru-dt": [0.85, 0.85], "summary-logreg": [0.80, 0.80]}, False, False,
     Verdict.DOES_NOT_HOLD),
    ({"odernn": [0.84, 0.84], "gru-dt": [0.80, 0.80], "summary-logreg": [0.80, 0.80]}, True, False,
     Verdict.NOT_MEASURABLE),
    ({"odernn": [0.84, 0.84], "gru-dt": [0.80, 0.80], "summary-logreg": [0.80, 0.80]}, False, True,
     Verdict.NOT_MEASURABLE),
])
def test_claim_verdict_is_computed_from_the_measurement(monkeypatch, aucs, quick, synthetic, verdict):
    monkeypatch.setattr(lesson05, "auc_study", lambda config, progress=False: _fake_study(aucs, synthetic))
    m = lesson05.measure_physionet_auc(quick)
    assert m.verdict is verdict
    assert f"odernn {sum(aucs['odernn']) / len(aucs['odernn']):.3f}" in m.measured


@pytest.mark.parametrize("damage", ["garbage archive", "empty set", "labels"])
def test_every_loader_error_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, damage):
    """Cases 8 and 10 through the command line: one line on stderr, exit code 2, no traceback."""
    monkeypatch.setenv("NODECOURSE_CACHE", str(tmp_path / "cache"))
    d = tmp_path / "data"
    d.mkdir()
    if damage == "garbage archive":
        (d / "set-a.tar.gz").write_bytes(b"\x1f\x8b\x08" + b"\x00" * 30)
        (d / "Outcomes-a.txt").write_text("RecordID,In-hospital_death\n1,0\n")
        expected = "DamagedArchive"
    elif damage == "empty set":
        (d / "set-a").mkdir()
        (d / "Outcomes-a.txt").write_text("RecordID,In-hospital_death\n1,0\n")
        expected = "EmptySet"
    else:  # every record has a label that is not 0/1
        physionet.synthetic(40, seed=1, directory=d)
        out = d / "Outcomes-a.txt"
        lines = out.read_text().splitlines()
        out.write_text("\n".join([lines[0]] + [ln[: ln.rindex(",")] + ",7" for ln in lines[1:]]) + "\n")
        expected = "EmptySet"
    rc = run(["--data", str(d), "--model", "summary-logreg", "--eval", "split"])
    err = capsys.readouterr().err.strip().splitlines()
    errors = [ln for ln in err if ln.startswith("error:")]
    assert rc == 2, err
    assert len(errors) == 1 and expected in errors[0], err
    assert not any("Traceback" in ln for ln in err)
