"""A grader fault on one notebook is that notebook's error; the next notebook is still graded."""

from __future__ import annotations

from nodecourse.course import grading


def _fake_grade(nb, **_):
    if nb == "broken.ipynb":
        raise AttributeError("'list' object has no attribute 'get'")
    row = grading.CheckRow(nb, "01.ipynb", "euler", True, "", True)
    return [row], []


def test_a_fault_in_one_notebook_leaves_the_next_graded(monkeypatch, capsys):
    monkeypatch.setattr(grading, "grade_notebook", _fake_grade)
    monkeypatch.setattr(grading, "_no_peeking", lambda: None)
    code = grading.main(["broken.ipynb", "good.ipynb"])
    out, err = capsys.readouterr()
    assert code == 1  # one notebook was not graded: the run is not a pass
    assert "broken.ipynb: the grader failed on this notebook (AttributeError" in err
    assert "good.ipynb" in out and "1/1 checks pass in 2 notebooks" in out


def test_the_traceback_is_shown_on_request(monkeypatch, capsys):
    monkeypatch.setattr(grading, "grade_notebook", _fake_grade)
    monkeypatch.setattr(grading, "_no_peeking", lambda: None)
    monkeypatch.setenv("NODECOURSE_TRACEBACK", "1")
    grading.main(["broken.ipynb"])
    assert "Traceback (most recent call last)" in capsys.readouterr().err
