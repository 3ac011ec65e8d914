"""`nodecourse check` names every lesson that runs on the synthetic PhysioNet stand-in when set A is missing."""

import json
import re
from pathlib import Path

from nodecourse.course import envcheck

ROOT = Path(__file__).resolve().parents[1]
#: What in a lesson's code loads set A: the loader, or a course model trained on it (lesson 9's audit).
LOADS_PHYSIONET = re.compile(r"physionet\.load\(|[\"']physionet-odernn[\"']")


def _lessons_that_load_physionet() -> set[str]:
    found = set()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        if LOADS_PHYSIONET.search(code):
            found.add(str(int(path.name[:2])))
    return found


def test_the_declared_lessons_are_those_whose_code_loads_physionet():
    assert set(envcheck.PHYSIONET_LESSONS) == _lessons_that_load_physionet()


def test_the_note_names_every_such_lesson():
    note = envcheck.standin_note()
    assert "stand-in" in note
    for number in envcheck.PHYSIONET_LESSONS:
        assert re.search(rf"\b{number}\b", note), (number, note)


def test_check_reports_the_note_when_set_a_is_missing(monkeypatch):
    from nodecourse.data import physionet

    monkeypatch.setattr(physionet, "locate", lambda *a, **k: None)
    item = envcheck._data_item()
    assert item.value == envcheck.standin_note() and item.ok
