"""Lessons as clean, reproducible artifacts: execute in quick mode, strip what is volatile.

A committed lesson carries its quick-mode outputs (so a reader on GitHub or
Binder sees figures before running anything) but nothing that changes from
run to run without the lesson changing:

- no execution timestamps (``cell.metadata.execution``);
- no saved widget state (``application/vnd.jupyter.widget-state+json``): a
  widget only lives in a running kernel, so its saved view is replaced by a
  line of text; a ``tqdm.auto`` bar is saved as the text of its final state
  (description, percentage and count from the progress model, without the
  times and rates, which differ on every run);
- no path of the machine it ran on in any output.

:func:`problems` lists what a notebook still carries (the notebook test uses
it); :func:`execute` runs one notebook and strips it (``make notebooks``).
"""

from __future__ import annotations

import html
import json
import os
import re
import time
from pathlib import Path

import nbformat

#: A committed lesson stays small enough to open quickly on Binder and to diff. 1.5 MB since every
#: plotly figure also carries its static PNG (50-100 kB each; lesson 3, the heaviest, is 1.2 MB).
MAX_NOTEBOOK_BYTES = 1_500_000
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
MACHINE_PATH = re.compile(r"(?<![\w.])(/work/|/tmp/|/root/|/home/|/Users/|[A-Z]:\\Users\\)[A-Za-z0-9_.-]")
LIVE_WIDGET_TEXT = "[interactive widget: run the notebook to use it]"
_TAGS = re.compile(r"<[^>]+>")
#: tqdm's right-hand text: `` n/total [elapsed<remaining, rate, postfix]`` (the postfix optional).
_TQDM_RIGHT = re.compile(r"^\s*(?P<n>[^/\s]+)/\S+\s*\[[^,\]]*,[^,\]]*(?:,\s*(?P<postfix>[^\]]*))?\]\s*$")


def _model_value(state: dict, ref: str):
    model = state.get(ref.removeprefix("IPY_MODEL_"), {}).get("state", {})
    return model.get("_model_name"), model


def _progress_text(state: dict, model_id: str) -> str | None:
    """The final text of a tqdm.notebook bar (an HBox of HTML, FloatProgress, HTML), or None.

    The progress model's ``value`` and ``max`` are the bar's final state; the two HTML texts can be
    older (tqdm throttles their updates, and the last may not reach the saved state: a bar full to
    6/6 was saved with "0%" and "0/6" beside it), so the percentage and the count are taken from the
    model, and the postfix (``loss=...``) is kept only when the text's count is the final one."""
    name, box = _model_value(state, model_id)
    if name != "HBoxModel":
        return None
    parts = [_model_value(state, ref) for ref in box.get("children", [])]
    if [p[0] for p in parts] != ["HTMLModel", "FloatProgressModel", "HTMLModel"]:
        return None
    left, bar, right = (p[1] for p in parts)
    total, value = bar.get("max") or 0, bar.get("value") or 0
    filled = int(10 * value / total) if total else 0
    text = lambda m: html.unescape(_TAGS.sub("", m.get("value", "")))  # noqa: E731
    description = re.sub(r"\s*\d+%\s*$", "", text(left))
    percent = int(100 * value / total) if total else 0  # tqdm rounds the percentage down too
    count = f"{value:g}/{total:g}" if total else f"{value:g}"
    right = _TQDM_RIGHT.match(text(right))
    postfix = right["postfix"] if right and right["postfix"] and right["n"] == f"{value:g}" else ""
    line = f"{description} {percent:3d}%|{'█' * filled}{' ' * (10 - filled)}| {count}"
    return (line + (f" [{postfix.strip()}]" if postfix else "")).strip()


def strip_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Remove execution timestamps and widget state in place; widget views become text. Returns ``nb``."""
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            view = data.pop(WIDGET_VIEW, None)
            if view is None:
                continue
            bar = _progress_text(state, view.get("model_id", ""))
            data["text/plain"] = bar if bar is not None else LIVE_WIDGET_TEXT
    return nb


def problems(path: Path | str) -> list[str]:
    """What keeps a committed notebook from being a clean artifact (empty when clean)."""
    path = Path(path)
    found = []
    size = path.stat().st_size
    if size >= MAX_NOTEBOOK_BYTES:
        found.append(f"{size / 1e6:.2f} MB (limit {MAX_NOTEBOOK_BYTES / 1e6:g} MB)")
    nb = nbformat.read(path, as_version=4)
    if WIDGET_STATE in nb.metadata.get("widgets", {}):
        found.append("saved widget state in the notebook metadata")
    for i, cell in enumerate(nb.cells):
        if "execution" in cell.metadata:
            found.append(f"cell {i}: execution timestamps")
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            text = json.dumps(out, ensure_ascii=False)  # every field, as stored
            if WIDGET_VIEW in out.get("data", {}):
                found.append(f"cell {i}: a widget view with no text fallback")
            match = MACHINE_PATH.search(text)
            if match:
                found.append(f"cell {i}: a machine path in an output ({match.group(0)}...)")
    return found


#: The longest one wait for a kernel message lasts before the socket is checked again (seconds).
POLL_SLICE_S = 1.0


def sliced_waits(get_msg, slice_s: float = POLL_SLICE_S):
    """``get_msg(timeout)`` of a kernel client's channel, waiting in slices of at most ``slice_s``.

    pyzmq's asyncio poll can miss the wake-up of a message that has already arrived; the wait then
    lasts its whole timeout, and the poll that ends it finds the message waiting. Lesson 2 hit it
    about once in ten runs, on the cell that shows a widget: the cell took exactly the 600 s timeout
    and then completed normally. A poll that times out checks the socket again, so waiting in
    slices bounds such a stall to one slice; the overall timeout (None: wait for ever) still holds.
    """
    from queue import Empty

    async def get(timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return await get_msg(timeout=slice_s if left is None else min(slice_s, left))
            except Empty:
                if left is not None and left <= slice_s:
                    raise

    return get


def _client(nb: nbformat.NotebookNode, path: Path, timeout_s: int):
    """An ``nbclient.NotebookClient`` for ``nb`` whose shell and IOPub waits are :func:`sliced_waits`."""
    from nbclient import NotebookClient

    class SlicedClient(NotebookClient):
        async def async_start_new_kernel_client(self):
            kc = await super().async_start_new_kernel_client()
            for channel in (kc.shell_channel, kc.iopub_channel):
                channel.get_msg = sliced_waits(channel.get_msg)
            return kc

    return SlicedClient(
        nb, timeout=timeout_s, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )


def execute(path: Path | str, *, timeout_s: int = 600, quick: bool = True) -> list[str]:
    """Run ``path`` top to bottom in a fresh kernel (quick mode by default), strip it, save it.

    Returns :func:`problems` of the saved notebook. The kernel runs in the
    notebook's folder with one thread per process, as a learner's would.
    """
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    env = {**os.environ, "NODECOURSE_QUICK": "1" if quick else "0"}
    env.setdefault("OMP_NUM_THREADS", "1")
    client = _client(nb, path, timeout_s)
    saved = os.environ.copy()
    os.environ.update(env)  # the kernel inherits the environment of this process
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    nbformat.write(strip_notebook(nb), path)
    return problems(path)
