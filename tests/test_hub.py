"""The course on a hub, end to end (docs/hub.md): JupyterHub started here on 127.0.0.1, two learners
and an instructor, the course handed out without ``solutions/``, exercise 2 released, fetched,
answered, submitted, collected, graded by ``nodecourse nbgrader autograde`` and returned as feedback
through nbgrader's exchange.

The hub is driven through its REST API (a service token); one learner, alice, logs in through the
hub's login page in Chromium and opens lesson 0 in JupyterLab. Fetching, answering and submitting
are nbgrader's commands run as each learner (what the Assignments tab calls), the instructor's steps
nbgrader's commands and the course's autograde step run in the instructor's course folder.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import nbformat
import pytest

import browser_support as B
import hub_support as H
from nodecourse.course.exercise_builder import answer_id
from notebook_fixtures import REPO

pytest.importorskip("nbgrader")
pytest.importorskip("jupyterhub")

from nbgrader.api import Gradebook  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LEARNERS = ["alice", "bob"]  # alice answers every task, bob only the first
INSTRUCTOR = "instructor"
ASSIGNMENT = "ex2"
EXERCISE = "02_solvers_exercises.ipynb"
LESSON0 = "00_start_here.ipynb"
#: Seconds each phase took (printed at the end; no test asserts on time).
PHASES: dict[str, float] = {}
COMMAND_TIMEOUT_S = 180  # one nbgrader command on a loaded 2-core machine
GRADE_TIMEOUT_S = 600  # the sandboxed grading of both submissions


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not B.CHROMIUM.exists():
        B.unavailable(f"{B.CHROMIUM} not found (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        B.unavailable(f"playwright is not installed: {exc}")
    try:
        B.install_chp()
    except (RuntimeError, OSError) as exc:
        B.unavailable(
            f"configurable-http-proxy is not available ({exc}); run python tests/browser_support.py install-chp"
        )
    assert (REPO / "exercises" / EXERCISE).is_file() and (REPO / "notebooks" / LESSON0).is_file()
    started = time.monotonic()
    with H.hub(tmp_path_factory.mktemp("hub"), LEARNERS, INSTRUCTOR) as h:
        PHASES["hub start"] = time.monotonic() - started
        yield h


def _answer(notebook: Path, tasks: set[str] | None) -> None:
    """Write the solution's answer cells (all, or those of ``tasks``) into the learner's ``notebook``."""
    solution = nbformat.read(REPO / "solutions" / EXERCISE, as_version=4)
    solved = {answer_id(c): c.source for c in solution.cells if answer_id(c)}
    nb = nbformat.read(notebook, as_version=4)
    answered = 0
    for cell in nb.cells:
        task = answer_id(cell)
        if task and (tasks is None or task in tasks):
            cell.source = solved[task]
            answered += 1
    assert answered == (len(solved) if tasks is None else len(tasks)), f"{notebook} lacks answer cells"
    nbformat.write(nb, notebook)


def _no_solutions(hub: H.Hub, user: str) -> list[str]:
    """Every path of ``user``'s server (two levels, through its contents API); asserts none is solutions/."""
    status, root = hub.contents(user)
    assert status == 200, f"{user}'s contents API: HTTP {status} {root}"
    seen = []
    for item in root["content"]:
        seen.append(item["path"])
        if item["type"] == "directory":
            status, sub = hub.contents(user, item["path"])
            assert status == 200, f"{user}'s contents API on {item['path']}: HTTP {status}"
            seen += [s["path"] for s in sub["content"]]
    assert not [p for p in seen if Path(p).name == "solutions"], f"{user}'s server shows solutions/: {seen}"
    status, _ = hub.contents(user, "nodecourse/solutions")
    assert status == 404, f"{user}'s server serves nodecourse/solutions (HTTP {status})"
    return seen


def _browser_opens_lesson0(hub: H.Hub, profile: Path) -> str:
    """alice logs in on the hub's login page and opens lesson 0 in JupyterLab; returns its title."""
    lesson = nbformat.read(REPO / "notebooks" / LESSON0, as_version=4)
    title = next(
        line[2:].strip()
        for c in lesson.cells
        if c.cell_type == "markdown"
        for line in c.source.splitlines()
        if line.startswith("# ")
    )
    path = f"/user/alice/lab/tree/nodecourse/notebooks/{LESSON0}"
    with B.chromium(profile) as context:
        page = context.new_page()
        page.set_default_timeout(120_000)
        page.goto(f"{hub.url}/hub/login?next={path}")
        page.fill("#username_input", "alice")
        page.fill("#password_input", hub.password)
        page.click("#login_submit")
        page.wait_for_url(re.compile(re.escape(f"{hub.url}{path}")))
        B.wait_for_notebook(page)
        heading = B.active_panel(page).locator(".jp-RenderedMarkdown h1").first
        heading.wait_for(state="visible")
        shown = heading.inner_text().replace("¶", "").strip()
        assert B.current_tab(page) == LESSON0
    assert shown == title, f"lesson 0 shows the heading {shown!r}, its notebook {title!r}"
    return shown


def test_a_class_on_the_hub_hand_out_submit_grade_feedback(hub, tmp_path):
    mark = time.monotonic()

    def phase(name: str) -> None:
        nonlocal mark
        PHASES[name], mark = time.monotonic() - mark, time.monotonic()

    # the learners' servers, started through the REST API; nothing of solutions/ is there
    for user in LEARNERS:
        hub.start_server(user)
    shown = {user: _no_solutions(hub, user) for user in LEARNERS}
    assert "nodecourse/exercises" in shown["alice"] and "nodecourse/notebooks" in shown["alice"]
    hub.stop_server("bob")  # bob works from his terminal below; one server is enough on the machine
    phase("servers and contents")

    # alice: the hub's login page, then lesson 0 rendered in JupyterLab
    _browser_opens_lesson0(hub, tmp_path / "chromium")
    phase("browser: login and lesson 0")

    # the instructor releases exercise 2 exactly as exercises/ has it
    course = H.instructor_course(hub, INSTRUCTOR, {ASSIGNMENT: REPO / "exercises" / EXERCISE})
    for user in LEARNERS:
        H.run_as(hub, INSTRUCTOR, ["nbgrader", "db", "student", "add", user], cwd=course, timeout=COMMAND_TIMEOUT_S)
    H.run_as(hub, INSTRUCTOR, ["nbgrader", "generate_assignment", ASSIGNMENT], cwd=course, timeout=COMMAND_TIMEOUT_S)
    H.run_as(hub, INSTRUCTOR, ["nbgrader", "release_assignment", ASSIGNMENT], cwd=course, timeout=COMMAND_TIMEOUT_S)

    # each learner fetches, answers (alice all tasks, bob the first) and submits under their hub login
    first_task = next(
        answer_id(c) for c in nbformat.read(REPO / "exercises" / EXERCISE, as_version=4).cells if answer_id(c)
    )
    for user, tasks in (("alice", None), ("bob", {first_task})):
        H.run_as(hub, user, ["nbgrader", "fetch_assignment", ASSIGNMENT], timeout=COMMAND_TIMEOUT_S)
        fetched = hub.home(user) / ASSIGNMENT / EXERCISE
        _answer(fetched, tasks)
        H.run_as(hub, user, ["nbgrader", "submit", ASSIGNMENT], timeout=COMMAND_TIMEOUT_S)
    phase("release, fetch, submit")

    # the instructor collects, grades with the course's grader, returns feedback
    H.run_as(hub, INSTRUCTOR, ["nbgrader", "collect", ASSIGNMENT], cwd=course, timeout=COMMAND_TIMEOUT_S)
    assert sorted(p.name for p in (course / "submitted").iterdir()) == sorted(LEARNERS)
    phase("collect")
    H.run_as(
        hub,
        INSTRUCTOR,
        ["nodecourse", "nbgrader", "autograde", ASSIGNMENT, "--course-dir", "."],
        cwd=course,
        timeout=GRADE_TIMEOUT_S,
    )
    phase("autograde")
    H.run_as(hub, INSTRUCTOR, ["nbgrader", "generate_feedback", ASSIGNMENT], cwd=course, timeout=COMMAND_TIMEOUT_S)
    H.run_as(hub, INSTRUCTOR, ["nbgrader", "release_feedback", ASSIGNMENT], cwd=course, timeout=COMMAND_TIMEOUT_S)

    # both learners' grades are in nbgrader's gradebook; the full answer scores more than the partial one
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", H.COURSE_ID) as gb:
        scores = {
            u: (gb.find_submission(ASSIGNMENT, u).score, gb.find_submission(ASSIGNMENT, u).max_score) for u in LEARNERS
        }
        graded = {u: [g.auto_score for g in gb.find_submission(ASSIGNMENT, u).notebooks[0].grades] for u in LEARNERS}
    assert all(graded[u] and None not in graded[u] for u in LEARNERS), f"ungraded checks: {graded}"
    (alice, max_score), (bob, _) = scores["alice"], scores["bob"]
    assert max_score > 0 and alice == max_score, f"alice answered every task: {scores}"
    assert 0 < bob < alice, f"bob answered only {first_task!r}: {scores}"

    # alice fetches her feedback through the exchange: it shows her score
    H.run_as(hub, "alice", ["nbgrader", "fetch_feedback", ASSIGNMENT], timeout=COMMAND_TIMEOUT_S)
    feedback = sorted((hub.home("alice") / ASSIGNMENT / "feedback").glob(f"*/{Path(EXERCISE).stem}.html"))
    assert len(feedback) == 1, f"alice's feedback: {feedback}"
    found = re.search(r"\(Score: ([\d.]+) / ([\d.]+)\)", feedback[0].read_text())
    assert found, f"{feedback[0]} shows no score"
    assert (float(found[1]), float(found[2])) == pytest.approx((alice, max_score))
    # and her server, still running, serves it to her
    rel = feedback[0].relative_to(hub.home("alice")).as_posix()
    status, model = hub.contents("alice", rel)
    assert status == 200 and model["type"] == "file", f"alice's server does not serve {rel}: HTTP {status}"
    phase("feedback")
    timings = ", ".join(f"{name} {s:.0f} s" for name, s in PHASES.items())
    print(
        f"\nhub class of {len(LEARNERS)}: {sum(PHASES.values()):.0f} s in all ({timings}); scores {json.dumps(scores)}",
        file=sys.stderr,
    )
