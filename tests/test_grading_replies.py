"""Whatever the kernel sends, the grader reads it as a named failure of that request, never its own crash.

On a scripted client (fast): a message that is not a dict, a content that is not a dict, a client
that raises while decoding (``KeyError: 'msg_id'``, what a replaced ``json.dumps`` in the kernel gave),
``user_expressions`` of any shape, an "idle" status dropped in a flood. On a real kernel (slow): an
answer that makes ``user_expressions`` a list, one that replaces ``json.dumps``; and ``nodecourse grade``
of two such notebooks followed by a correct one grades all three.
"""

from __future__ import annotations

import queue
from pathlib import Path

import nbformat
import pytest

from nodecourse.course import grading_kernel, sandbox
from nodecourse.course.exercise_builder import answer_id
from nodecourse.course.grading_kernel import Kernel
from notebook_fixtures import REPO, run_cli, write

PARENT = "request-1"


def _msg(kind: str, content, parent=PARENT):
    return {"msg_type": kind, "parent_header": {"msg_id": parent}, "content": content}


class Client:
    """Hands out the scripted messages; an Exception in the script is raised by the read."""

    def __init__(self, iopub, shell):
        self.iopub, self.shell = list(iopub), list(shell)

    def execute(self, *args, **kwargs):
        return PARENT

    def _next(self, messages):
        if not messages:
            raise queue.Empty
        item = messages.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    def get_iopub_msg(self, timeout=None):
        return self._next(self.iopub)

    def get_shell_msg(self, timeout=None):
        return self._next(self.shell)


class Alive:
    def is_alive(self):
        return True


def _kernel(tmp_path, iopub, shell) -> Kernel:
    kernel = Kernel.__new__(Kernel)  # the message loop alone: no process
    kernel.kc, kernel.km, kernel._conn, kernel.swept = Client(iopub, shell), Alive(), tmp_path, []
    return kernel


BUSY, IDLE = _msg("status", {"execution_state": "busy"}), _msg("status", {"execution_state": "idle"})


def _reply(user_expressions):
    return _msg("execute_reply", {"status": "ok", "user_expressions": user_expressions})


def test_a_well_formed_exchange_is_read(tmp_path):
    value = {"value": {"status": "ok", "data": {"text/plain": "42"}}}
    stream = _msg("stream", {"name": "stdout", "text": "hello\n"})
    res = _kernel(tmp_path, [BUSY, stream, IDLE], [_reply(value)]).evaluate("6 * 7", 5)
    assert res.ok and res.stdout == "42", res


@pytest.mark.parametrize(
    "bad, named",
    [
        (["not a message"], "is a str of length 13, not a dict"),
        ([_msg("stream", ["a", "list"])], "content a list of length 2"),
        ([{"msg_type": "status", "parent_header": None, "content": {}}], "parent_header is None"),
        ([KeyError("msg_id")], "(KeyError: 'msg_id')"),
        ([ValueError("Invalid Signature: b'...'")], "(ValueError: Invalid Signature"),
    ],
)
def test_a_message_the_grader_cannot_read_is_a_named_failure(tmp_path, bad, named):
    res = _kernel(tmp_path, [BUSY, *bad, IDLE], [_reply({})]).execute("x = 1", 5)
    assert res.status == "error" and res.ename == "UnreadableMessage", res
    assert named in res.evalue and "json.dumps" in res.evalue, res.evalue


@pytest.mark.parametrize(
    "user_expressions, named",
    [
        ([1, 2], "user_expressions is a list of length 2, not a dict"),
        ("text", "user_expressions is a str of length 4, not a dict"),
        ({"value": [0]}, "its value is a list of length 1, not a dict"),
        ({"value": {"status": "ok", "data": ["x"]}}, "its text/plain value is None, not text"),
        ({"value": {"status": "ok", "data": {"text/plain": 7}}}, "its text/plain value is an int, not text"),
    ],
)
def test_user_expressions_of_any_shape_is_a_named_failure(tmp_path, user_expressions, named):
    res = _kernel(tmp_path, [BUSY, IDLE], [_reply(user_expressions)]).evaluate("1", 5)
    assert res.status == "error" and res.ename == "UnreadableReply", res
    assert named in res.evalue, res.evalue


def test_an_error_reply_with_fields_of_other_types_is_named_by_their_shape(tmp_path):
    reply = _msg("execute_reply", {"status": "error", "ename": ["x"] * 3, "evalue": {"a": 1}})
    res = _kernel(tmp_path, [BUSY, IDLE], [reply]).execute("x", 5)
    assert res.status == "error" and res.ename == "a list of length 3" and res.evalue == "a dict of length 1"


def test_a_dropped_idle_status_ends_the_request_after_the_reply(tmp_path, monkeypatch):
    monkeypatch.setattr(grading_kernel, "IDLE_GRACE_S", 0.2)
    stream = _msg("stream", {"name": "stdout", "text": "PASS x\n"})
    res = _kernel(tmp_path, [BUSY, stream], [_reply({})]).execute("print('PASS x')", 30)
    assert res.ok and res.stdout == f"PASS x\n\n[{grading_kernel.LOST_OUTPUT}]\n", res


# --- a real kernel ------------------------------------------------------------------------------

LIST_EXPRESSIONS = "get_ipython().user_expressions = lambda expressions: [1, 2]\n"
REPLACED_DUMPS = "import json\njson.dumps = lambda *args, **kwargs: '{}'\n"


@pytest.fixture
def kernel():
    k = Kernel(sandbox.probe(), limits=sandbox.Limits(memory_mb=1024, tmp_mb=64))
    yield k
    k.close()


@pytest.mark.slow
def test_a_real_kernel_whose_user_expressions_is_a_list(kernel):
    assert kernel.execute(LIST_EXPRESSIONS, 60).ok
    res = kernel.evaluate("1 + 1", 30)
    assert res.ename == "UnreadableReply" and "user_expressions is a list of length 2" in res.evalue, res


@pytest.mark.slow
def test_a_real_kernel_whose_json_dumps_is_replaced(kernel):
    res = kernel.execute(REPLACED_DUMPS, 60)
    assert res.ename == "UnreadableMessage" and "KeyError" in res.evalue, res
    later = kernel.evaluate("1 + 1", 30)
    assert later.ename == "UnreadableMessage", later


def _ex01_with(first_answer_prefix: str, path: Path) -> Path:
    nb = nbformat.read(REPO / "solutions" / "01_resnet_as_euler_exercises.ipynb", as_version=4)
    first = next(c for c in nb.cells if answer_id(c))
    first.source = first_answer_prefix + first.source
    return write(nb, path)


@pytest.mark.slow
def test_grade_goes_on_after_notebooks_that_crashed_the_grader(tmp_path):
    listed = _ex01_with(LIST_EXPRESSIONS, tmp_path / "a" / "01_resnet_as_euler_exercises.ipynb")
    dumps = _ex01_with(REPLACED_DUMPS, tmp_path / "b" / "01_resnet_as_euler_exercises.ipynb")
    good = _ex01_with("", tmp_path / "c" / "01_resnet_as_euler_exercises.ipynb")
    out = run_cli("grade", str(listed), str(dumps), str(good), "--timeout", "60")
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    tables = out.stdout.split(str(tmp_path))
    assert len(tables) == 4, out.stdout[-3000:]  # one table per notebook
    assert "UnreadableReply" in tables[1] and "UnreadableMessage" in tables[2], out.stdout[-3000:]
    assert "FAIL" not in tables[3] and "4/4" in out.stdout.replace(" ", ""), out.stdout[-3000:]


def test_printed_output_is_cut_as_it_streams_whatever_the_message_sizes():
    """The kept text is the first and the last ``keep`` characters and the count of the rest, for any
    split of the output into messages (a long one is never copied whole)."""
    import random

    rng = random.Random(5)
    for _ in range(500):
        keep = rng.randint(1, 20)
        kept, full = grading_kernel.HeadTail(keep), ""
        for _ in range(rng.randint(0, 8)):
            text = "".join(rng.choice("abc") for _ in range(rng.randint(0, 3 * keep)))
            kept.add(text)
            full += text
        assert (kept.head, kept.tail) == (full[:keep], full[keep:][-keep:])
        assert kept.cut == max(0, len(full) - 2 * keep)
