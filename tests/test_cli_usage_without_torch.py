"""The ``nodecourse`` command parses its arguments and checks its output paths before importing torch
or doing any work: a usage error comes back at once (checked by what is imported, not by a clock)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nodecourse.course import cli

PROBE = """
import sys
from nodecourse.course import cli
try:
    cli.main(sys.argv[1:])
except SystemExit as exc:
    print("exit", exc.code, "torch" in sys.modules)
"""


def run_cli(*argv: str) -> tuple[str, str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=60)
    return done.stdout.strip(), done.stderr


@pytest.mark.parametrize(
    "argv, message",
    [
        (("grade", "--timeout", "-1", "x.ipynb"), "--timeout"),
        (("physionet", "--model", "nope"), "--model"),
        (("no-such-command",), "invalid choice"),
        (("grade", "x.ipynb", "--gradebook", "missing-folder/class.csv"), "--gradebook missing-folder/class.csv"),
        (("grade", "x.ipynb", "--keep", "missing-folder/keep"), "--keep"),
        (("claims", "--format", "markdown", "--update", "no-such-file.md"), "--update"),
        (("site", "--out", "missing-folder/site"), "--out"),
    ],
)
def test_a_usage_error_exits_2_before_torch_is_imported(argv, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out, err = run_cli(*argv)
    assert out == "exit 2 False", (out, err)
    assert message in err


# Every command's bad flag or value, each refused with exit 2 and a message naming it, torch not imported.
# A command's own check may return 2 (printing "error: ...") instead of argparse's SystemExit(2).
PROBE_RC = """
import sys
from nodecourse.course import cli
try:
    rc = cli.main(sys.argv[1:])
except SystemExit as exc:
    rc = exc.code
print("exit", rc, "torch" in sys.modules)
"""

BAD_ARGUMENTS = [
    (("--frobnicate",), "--frobnicate"),
    (("--frobnicate", "grade", "x.ipynb"), "--frobnicate"),
    (("build", "--bogus"), "--bogus"),
    (("site", "--bogus"), "--bogus"),
    (("grade", "x.ipynb", "--bogus"), "--bogus"),
    (("claims", "--bogus"), "--bogus"),
    (("physionet", "--model", "odernn", "--bogus"), "--bogus"),
    (("audit", "--model", "digits-ode", "--bogus"), "--bogus"),
    (("check", "--bogus"), "--bogus"),
    (("grade", "x.ipynb", "--jobs", "-3"), "argument --jobs: -3 is out of range"),
    (("grade", "--jobs", "0", "--gradebook"), "argument --jobs: 0 is out of range"),
    (("grade", "x.ipynb", "--memory-mb", "1"), "--memory-mb"),
    (("grade", "x.ipynb", "--tmp-mb", "x"), "--tmp-mb"),
    (("grade", "x.ipynb", "--notebook-timeout", "0"), "--notebook-timeout"),
    (("grade", "x.ipynb", "--seed", "one"), "--seed"),
    (("grade", "missing.ipynb"), "NOTEBOOK missing.ipynb: no such file"),
    (("grade", "here.ipynb", "missing.ipynb"), "NOTEBOOK missing.ipynb: no such file"),
    (("grade", "here.ipynb", "--reference", "missing-ref.ipynb"), "--reference missing-ref.ipynb: no such file"),
    (("grade", "here.ipynb", "here.ipynb", "--reference", "here.ipynb"), "--reference applies to one notebook"),
    (("grade", "here.ipynb", "--jobs", "2"), "--jobs applies to --gradebook"),
    (("grade", "here.ipynb", "--gradebook", "class.csv", "--json"), "does not combine with --json"),
    (("grade", "here.ipynb", "--gradebook", "class.csv", "--roster", "no-roster.csv"), "--roster no-roster.csv"),
    (("lab", "--port", "0"), "--port"),
    (("build", "--solutions", "missing-folder"), "--solutions missing-folder: no such folder"),
    (("claims", "--format", "pdf"), "--format"),
    (("claims", "--json", "--format", "html"), "--json and --format=html"),
    (("claims", "--update", "here.ipynb"), "--update writes the Markdown table"),
    (("claims", "--executor", "spark"), "--executor"),
    (("claims", "--executor", "ray", "--workers", "0"), "argument --workers: 0 is out of range"),
    (("claims", "--workers", "2"), "--workers applies to --executor ray"),
    (("claims", "--address", "auto"), "--address applies to --executor ray"),
    (("claims", "--cache", "missing-folder/cache"), "--cache missing-folder/cache"),
    (("physionet", "--device", "foo"), "argument --device: 'foo' is not a device"),
    (("physionet", "--model", "odernn", "--device", "gpu0"), "'gpu0' is not a device"),
    (("physionet", "--model", "odernn", "--epochs", "-1"), "--epochs"),
    (("physionet", "--model", "odernn", "--train", "set-a", "--eval", "set-a"), "--eval set-a is the training set"),
    (("physionet", "--model", "odernn", "--val-fraction", "0.5", "--test-fraction", "0.5"), "--val-fraction 0.5"),
    (("physionet", "--model", "odernn", "--data", "missing-folder"), "--data missing-folder: no such folder"),
    (("audit", "--model", "nope"), "--model"),
    (("audit", "--model", "digits-ode", "--seed", "-1"), "--seed"),
    (("audit", "--model", "digits-ode", "--out", "report.txt"), "--out report.txt"),
]


@pytest.mark.parametrize("argv, message", BAD_ARGUMENTS, ids=[" ".join(a) for a, _ in BAD_ARGUMENTS])
def test_every_command_refuses_a_bad_flag_before_torch_is_imported(argv, message, tmp_path):
    (tmp_path / "here.ipynb").write_text("{}", encoding="utf-8")  # an existing file, where one is needed
    done = subprocess.run(
        [sys.executable, "-c", PROBE_RC, *argv], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.stdout.strip() == "exit 2 False", (done.stdout, done.stderr)
    assert message in done.stderr, done.stderr


@pytest.mark.parametrize("command", ["lab", "site", "build"])
def test_a_root_without_notebooks_is_named_before_torch_is_imported(command, tmp_path):
    """A wrong --root ends the command with its message (exit status 1, as a missing course folder does)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE_RC, command, "--root", "."],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.stdout.strip().endswith("no notebooks/ folder; give the course folder False"), done.stdout
    assert done.stdout.startswith("exit error: --root='.'"), done.stdout


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:1", "mps", "auto"])
def test_a_device_spelled_right_passes_the_parser(device):
    args = cli.build_parser().parse_args(["physionet", "--model", "odernn", "--device", device])
    assert args.device == device


def test_the_parser_matches_the_modules_it_spells_out():
    from nodecourse.course.grading import DEFAULT_CELL_TIMEOUT_S, DEFAULT_NOTEBOOK_TIMEOUT_S
    from nodecourse.course.physionet_cmd import HORIZON_HOURS
    from nodecourse.data.physionet import HORIZON_HOURS as RECORDS_HORIZON

    assert cli.DEFAULT_CELL_TIMEOUT_S == DEFAULT_CELL_TIMEOUT_S
    assert cli.DEFAULT_NOTEBOOK_TIMEOUT_S == DEFAULT_NOTEBOOK_TIMEOUT_S
    assert HORIZON_HOURS == RECORDS_HORIZON


def test_a_gradebook_in_an_existing_folder_passes_the_path_check(tmp_path):
    args = cli.build_parser().parse_args(["grade", "x.ipynb", "--gradebook", str(tmp_path / "class.csv")])
    assert cli.output_path_error(args) is None
    args = cli.build_parser().parse_args(["grade", "x.ipynb", "--gradebook", str(tmp_path)])
    assert "is a folder" in cli.output_path_error(args)
