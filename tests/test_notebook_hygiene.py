"""Committed lessons are clean artifacts (nodecourse.course.notebook_hygiene), and the stripper works.

The outputs of ``# NBVAL_CHECK_OUTPUT`` cells are compared with a fresh run by
tests/test_notebooks.py (nbval); this file checks what is stored.
"""

from __future__ import annotations

import asyncio
import time
from queue import Empty

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from nodecourse.course import notebook_hygiene as hygiene
from notebook_fixtures import REPO

LESSONS = sorted((REPO / "notebooks").glob("*.ipynb"))
EXERCISES = sorted((REPO / "exercises").glob("*.ipynb"))


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_committed_lesson_is_clean(path):
    assert hygiene.problems(path) == [], f"run `make notebooks` ({path.name})"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_committed_lesson_was_executed(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    assert code and all(c.execution_count for c in code), f"{path.name} is not executed; run `make notebooks`"


def _tqdm_notebook():
    """A notebook as nbclient leaves it after a tqdm.notebook bar ran to 3/3 and an explorer was shown."""

    def model(name, **state):
        return {"model_name": name, "state": {"_model_name": name, **state}}

    state = {
        "box": model("HBoxModel", children=["IPY_MODEL_l", "IPY_MODEL_p", "IPY_MODEL_r"]),
        "l": model("HTMLModel", value="epochs: 100%"),
        "p": model("FloatProgressModel", value=3, max=3),
        "r": model("HTMLModel", value=" 3/3 [00:01&lt;00:00,  2.10it/s]"),
        "explorer": model("VBoxModel", children=[]),
    }
    nb = new_notebook()
    nb.metadata["widgets"] = {hygiene.WIDGET_STATE: {"state": state, "version_major": 2, "version_minor": 0}}
    view = lambda mid: new_output(
        "display_data",
        data={  # noqa: E731
            "text/plain": "  0%|          | 0/3 [00:00<?, ?it/s]",
            hygiene.WIDGET_VIEW: {"model_id": mid},
        },
    )
    cell = new_code_cell("train()", outputs=[view("box"), view("explorer")], execution_count=1)
    cell.metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00Z"}
    nb.cells = [cell]
    return nb


def test_strip_saves_progress_bars_as_their_final_text_and_drops_widget_state(tmp_path):
    nb = hygiene.strip_notebook(_tqdm_notebook())
    bar, explorer = (o["data"] for o in nb.cells[0].outputs)
    assert bar == {"text/plain": "epochs: 100%|██████████| 3/3"}  # no times or rates: they differ every run
    assert explorer == {"text/plain": hygiene.LIVE_WIDGET_TEXT}
    assert "widgets" not in nb.metadata and "execution" not in nb.cells[0].metadata
    path = tmp_path / "clean.ipynb"
    nbformat.write(nb, path)
    assert hygiene.problems(path) == []


@pytest.mark.parametrize(
    "left, right, saved",
    [
        # the texts lag the model (seen in lesson 1): the model's count and percentage win, the stale postfix goes
        ("ResNet:   0%", " 0/6 [00:00&lt;?, ?epoch/s, loss=0.0639]", "ResNet: 100%|██████████| 6/6"),
        ("ODE:  67%", " 4/6 [00:00&lt;00:00, 39.17epoch/s, loss=0.0818]", "ODE: 100%|██████████| 6/6"),
        # up to date: the postfix is the final one and stays
        ("gru-d: 100%", " 6/6 [00:00&lt;00:00,  6.00epoch/s, loss=0.402]", "gru-d: 100%|██████████| 6/6 [loss=0.402]"),
    ],
)
def test_a_bar_is_saved_from_its_progress_model_not_its_stale_text(left, right, saved):
    nb = _tqdm_notebook()
    state = nb.metadata["widgets"][hygiene.WIDGET_STATE]["state"]
    state["l"]["state"]["value"], state["r"]["state"]["value"] = left, right
    state["p"]["state"].update(value=6, max=6)
    bar = hygiene.strip_notebook(nb).cells[0].outputs[0]["data"]["text/plain"]
    assert bar == saved


def test_problems_names_state_timestamps_and_machine_paths(tmp_path):
    nb = _tqdm_notebook()
    nb.cells[0].outputs.append(new_output("stream", name="stdout", text="loaded from /work/shared/x\n"))
    path = tmp_path / "dirty.ipynb"
    nbformat.write(nb, path)
    found = " | ".join(hygiene.problems(path))
    assert "widget state" in found and "execution timestamps" in found and "machine path" in found


class _Channel:
    """A kernel channel whose message arrives at ``arrives`` (monotonic seconds) and whose poll misses
    the wake-up: a wait that starts before the arrival lasts its whole timeout, as pyzmq's did."""

    def __init__(self, arrives: float | None):
        self.arrives, self.waits = arrives, []

    async def get_msg(self, timeout=None):
        self.waits.append(timeout)
        if self.arrives is not None and time.monotonic() >= self.arrives:
            return {"msg": "reply"}
        await asyncio.sleep(timeout if timeout is not None else 3600)  # the missed wake-up
        if self.arrives is not None and time.monotonic() >= self.arrives:
            return {"msg": "reply"}
        raise Empty


def _run(coro):
    return asyncio.run(coro)


def test_sliced_waits_bound_a_missed_wake_up_to_one_slice():
    channel = _Channel(arrives=time.monotonic() + 0.05)
    start = time.monotonic()
    assert _run(hygiene.sliced_waits(channel.get_msg, slice_s=0.1)(timeout=600)) == {"msg": "reply"}
    assert time.monotonic() - start < 5  # unsliced, the wait would have lasted the 600 s timeout
    assert all(w <= 0.1 for w in channel.waits)


def test_sliced_waits_keep_the_overall_timeout_and_the_endless_wait():
    channel = _Channel(arrives=None)
    start = time.monotonic()
    with pytest.raises(Empty):
        _run(hygiene.sliced_waits(channel.get_msg, slice_s=0.05)(timeout=0.3))
    assert 0.25 < time.monotonic() - start < 5 and len(channel.waits) >= 5
    late = _Channel(arrives=time.monotonic() + 0.3)  # timeout=None waits, slice by slice, until it comes
    assert _run(hygiene.sliced_waits(late.get_msg, slice_s=0.05)(timeout=None)) == {"msg": "reply"}
