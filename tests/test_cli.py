"""The `nodecourse` command: check, claims, lab, physionet, argument errors."""

from __future__ import annotations

import json
import os

import pytest
import torch

from conftest import DEFAULT_TIMEOUT_S
from nodecourse.course import cli, envcheck
from notebook_fixtures import REPO, run_cli


@pytest.mark.slow
def test_check_reports_the_environment_and_exits_zero():
    # Inside even the fast tier's per-test limit, so a hung command fails with its own TimeoutExpired.
    proc = run_cli("check", timeout=DEFAULT_TIMEOUT_S - 20)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "torch" in out and torch.__version__ in out
    for item in (
        "devices",
        "cpu",
        "ipywidgets",
        "jupyterlab_widgets",
        "widget manager",
        "course folder",
        "PhysioNet 2012",
        "mode",
    ):
        assert item in out, f"{item!r} missing from:\n{out}"
    assert "environment ready" in out


def test_check_exits_nonzero_when_something_essential_is_missing(monkeypatch, capsys):
    monkeypatch.setitem(envcheck.ESSENTIAL_PACKAGES, "surely-not-installed-pkg", "a test")
    assert cli.main(["check"]) == 1
    out = capsys.readouterr().out
    assert "[MISS] surely-not-installed-pkg" in out and "NOT READY" in out


def test_check_reports_quick_mode(monkeypatch):
    monkeypatch.setenv("NODECOURSE_QUICK", "1")
    mode = next(i for i in envcheck.collect() if i.name == "mode")
    assert mode.value.startswith("quick")


def test_lab_command_line(capsys):
    assert (
        cli.main(
            ["lab", "--dry-run", "--port", "8899", "--ip", "127.0.0.1", "--no-browser", "--", "--ServerApp.token=abc"]
        )
        == 0
    )
    cmd = capsys.readouterr().out.split()
    assert cmd[1:3] == ["-m", "jupyterlab"]
    assert f"--ServerApp.root_dir={REPO}" in cmd
    assert {"--port=8899", "--ip=127.0.0.1", "--no-browser", "--ServerApp.token=abc"} <= set(cmd)
    assert ("--allow-root" in cmd) == (os.geteuid() == 0)
    if (REPO / "notebooks" / "00_start_here.ipynb").is_file():
        assert "notebooks/00_start_here.ipynb" in cmd


def test_lab_with_a_wrong_root_says_so(tmp_path):
    with pytest.raises(SystemExit, match="has no notebooks/ folder"):
        cli.main(["lab", "--dry-run", "--root", str(tmp_path)])


def test_unknown_arguments_are_rejected(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["build", "--frobnicate"])
    assert info.value.code == 2
    assert "unrecognized arguments for `build`: --frobnicate" in capsys.readouterr().err


def test_physionet_is_a_real_subcommand_with_choices(capsys):
    with pytest.raises(SystemExit) as info:  # argparse's --help exits 0
        cli.main(["physionet", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "nodecourse physionet" in out and "summary-logreg" in out
    with pytest.raises(SystemExit) as info:
        cli.main(["physionet", "--model", "transformer"])
    assert info.value.code == 2
    assert "invalid choice: 'transformer'" in capsys.readouterr().err


def test_physionet_model_names_match_the_library():
    from nodecourse.course.physionet_cmd import MODEL_NAMES
    from nodecourse.models.latent import MODELS

    assert tuple(MODEL_NAMES) == tuple(MODELS)


def _claim_ids():
    from nodecourse.claims import load_rows

    return list(load_rows())


def test_claims_unknown_id_lists_the_valid_ones(capsys):
    if not _claim_ids():
        pytest.skip("no claim rows registered yet")
    assert cli.main(["claims", "--only", "no-such-row", "--json"]) == 2
    err = capsys.readouterr().err
    assert "no-such-row" in err and "valid ids" in err


@pytest.mark.slow
def test_claims_only_one_row_as_json():
    ids = _claim_ids()
    if not ids:
        pytest.skip("no claim rows registered yet (nodecourse/claims/lessonNN.py)")
    row = ids[0]
    proc = run_cli("claims", "--quick", "--only", row, "--json", timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(proc.stdout)
    assert isinstance(rows, list) and len(rows) == 1
    assert rows[0]["id"] == row
    assert {"id", "claim", "source", "published", "threshold", "threshold_kind", "measured", "verdict"} <= set(rows[0])
    assert rows[0]["verdict"] in {"holds", "holds in part", "does not hold", "not measurable at this scale"}
    assert rows[0]["measured"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--ip="],
        ["--ip", "0.0.0.0"],
        ["--ip=::"],
        ["--ip", "192.168.1.5"],
        ["--ip=example.org"],
        ["--", "--ServerApp.ip=0.0.0.0"],
        ["--", "--ip", ""],
    ],
)
def test_lab_refuses_a_network_address_without_allow_remote(argv, capsys):
    """An empty or non-loopback address exposes a code-running server: exit 2, say so on stderr."""
    assert cli.main(["lab", "--dry-run", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # no command printed: nothing would start
    err = captured.err
    for words in (
        "runs any code as this user",
        "token is the only protection",
        "--allow-remote",
        "127.0.0.0/8, ::1 or localhost",
    ):
        assert words in err, err


@pytest.mark.parametrize("address", ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_lab_allows_loopback_without_the_flag(address, capsys):
    assert cli.main(["lab", "--dry-run", f"--ip={address}"]) == 0
    assert f"--ip={address}" in capsys.readouterr().out


def test_lab_allow_remote_lets_a_network_address_through_and_warns(capsys):
    assert cli.main(["lab", "--dry-run", "--ip=0.0.0.0", "--allow-remote"]) == 0
    captured = capsys.readouterr()
    assert "--ip=0.0.0.0" in captured.out and "--allow-remote" not in captured.out  # ours, not jupyter's
    assert "run code as this user" in captured.err
