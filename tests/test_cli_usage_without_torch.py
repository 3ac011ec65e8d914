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


def test_the_parser_matches_the_modules_it_spells_out():
    from nodecourse.course.grading import DEFAULT_CELL_TIMEOUT_S, DEFAULT_NOTEBOOK_TIMEOUT_S
    from nodecourse.course.physionet_cmd import HORIZON_HOURS
    from nodecourse.data.physionet.records import HORIZON_HOURS as RECORDS_HORIZON

    assert cli.DEFAULT_CELL_TIMEOUT_S == DEFAULT_CELL_TIMEOUT_S
    assert cli.DEFAULT_NOTEBOOK_TIMEOUT_S == DEFAULT_NOTEBOOK_TIMEOUT_S
    assert HORIZON_HOURS == RECORDS_HORIZON


def test_a_gradebook_in_an_existing_folder_passes_the_path_check(tmp_path):
    args = cli.build_parser().parse_args(["grade", "x.ipynb", "--gradebook", str(tmp_path / "class.csv")])
    assert cli.output_path_error(args) is None
    args = cli.build_parser().parse_args(["grade", "x.ipynb", "--gradebook", str(tmp_path)])
    assert "is a folder" in cli.output_path_error(args)
