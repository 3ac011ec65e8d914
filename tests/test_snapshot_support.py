"""The snapshot check fails on a changed or a missing snapshot, and its update mode writes one."""

from __future__ import annotations

import pytest
import snapshot_support
from snapshot_support import assert_snapshot


@pytest.fixture
def snapshots(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshot_support, "SNAPSHOTS", tmp_path)
    monkeypatch.delenv(snapshot_support.UPDATE, raising=False)
    return tmp_path


def test_an_equal_text_passes_and_a_changed_one_fails_with_a_diff(snapshots):
    (snapshots / "lesson00.example.md").write_text("The row holds.\n", encoding="utf-8")
    assert_snapshot("lesson00.example", "The row holds.\n")
    with pytest.raises(AssertionError, match=r"(?s)-The row holds\..*\+The row fails\."):
        assert_snapshot("lesson00.example", "The row fails.\n")


def test_a_missing_snapshot_fails_and_the_update_mode_writes_it(snapshots, monkeypatch):
    with pytest.raises(AssertionError, match="no snapshot lesson00.new.md"):
        assert_snapshot("lesson00.new", "text")
    monkeypatch.setenv(snapshot_support.UPDATE, "1")
    assert_snapshot("lesson00.new", "text")
    assert (snapshots / "lesson00.new.md").read_text(encoding="utf-8") == "text"


@pytest.mark.parametrize("name", ["Lesson 3", "../escape", ""])
def test_a_name_that_is_not_a_plain_file_name_is_refused(snapshots, name):
    with pytest.raises(ValueError, match="snapshot name="):
        assert_snapshot(name, "text")
