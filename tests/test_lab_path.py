"""`nodecourse lab` puts the course's own bin folder first on the PATH of JupyterLab and its
terminals, so `nodecourse grade exercises/...` (as lessons and exercises spell it) works there."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from nodecourse.course import _cli_lab, cli
from notebook_fixtures import REPO

BIN = os.path.dirname(sys.executable)
GRADE = re.compile(r"([\w./~-]*nodecourse) grade ")


def test_lab_environment_puts_the_course_bin_first_once():
    env = _cli_lab.lab_environment({"PATH": f"/usr/bin{os.pathsep}{BIN}{os.pathsep}/bin", "HOME": "/h"})
    assert env["PATH"].split(os.pathsep) == [BIN, "/usr/bin", "/bin"]
    assert env["HOME"] == "/h"
    assert _cli_lab.lab_environment({})["PATH"] == BIN
    assert _cli_lab.course_bin_dir() == BIN  # the venv's own bin: a symlinked python is not resolved


def test_lab_terminals_are_not_login_shells(capsys):
    """A login shell reads /etc/profile, which resets PATH; the terminals run the shell plainly,
    unless the user gives their own terminado settings."""
    cmd = _cli_lab.lab_command(cli.build_parser().parse_args(["lab"]), [])
    setting = next(c for c in cmd if c.startswith("--ServerApp.terminado_settings="))
    shell = json.loads(setting.split("=", 1)[1])["shell_command"]
    assert (
        len(shell) == 1
        and "-l" not in shell
        and os.path.basename(shell[0]) in ("bash", "sh", "zsh", "fish", "dash", "ksh")
    )
    mine = "--ServerApp.terminado_settings={'shell_command': ['zsh', '-l']}"
    cmd = _cli_lab.lab_command(cli.build_parser().parse_args(["lab"]), [mine])
    assert [c for c in cmd if "terminado_settings" in c] == [mine]


def test_lessons_and_exercises_spell_the_grade_command_one_way():
    """Every notebook says `nodecourse grade exercises/<name>`: the spelling that works in
    JupyterLab's terminal (course bin on PATH, starts in the course folder)."""
    spellings = set()
    for folder in ("notebooks", "solutions", "exercises"):
        for path in sorted((REPO / folder).glob("*.ipynb")):
            for cell in nbformat.read(path, as_version=4).cells:
                for match in GRADE.finditer(cell.source):
                    spellings.add(match.group(1))
                    rest = cell.source[match.end() :].split()[0]
                    assert rest.startswith(("exercises/", "--")), f"{path.name}: grade {rest}"
    assert spellings <= {"nodecourse"}, spellings


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_nodecourse_is_found_in_a_jupyterlab_terminal(tmp_path):
    """Start `nodecourse lab` with a PATH that lacks the course's bin and a login-style SHELL,
    open a terminal through the server's API and ask it where `nodecourse` is."""
    pytest.importorskip("tornado")
    from tornado.httpclient import HTTPRequest
    from tornado.ioloop import IOLoop
    from tornado.websocket import websocket_connect

    port, token = _free_port(), "nodecourse-test-token"
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != BIN) or "/usr/bin:/bin"
    env["SHELL"] = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
    env["HOME"] = str(tmp_path)  # no user start-up files, no jupyter settings of the user
    env["JUPYTER_CONFIG_DIR"] = str(tmp_path / "jupyter")
    env["JUPYTER_RUNTIME_DIR"] = str(tmp_path / "runtime")
    env["PYTHONPATH"] = str(REPO)
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nodecourse.course.cli",
            "lab",
            "--no-browser",
            "--port",
            str(port),
            "--ip",
            "127.0.0.1",
            "--root",
            str(REPO),
            "--",
            f"--IdentityProvider.token={token}",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"token {token}"}
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(urllib.request.Request(f"{base}/api/status", headers=headers), timeout=5)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    output = server.stdout.read() if server.poll() is not None else ""
                    pytest.fail(f"JupyterLab did not start: {output}")
                time.sleep(1)
        req = urllib.request.Request(
            f"{base}/api/terminals", data=b"{}", method="POST", headers={**headers, "Content-Type": "application/json"}
        )
        name = json.loads(urllib.request.urlopen(req, timeout=30).read())["name"]

        async def ask() -> str:
            ws = await websocket_connect(
                HTTPRequest(f"ws://127.0.0.1:{port}/terminals/websocket/{name}", headers=headers)
            )
            await ws.write_message(json.dumps(["stdin", 'echo WHERE""=$(command -v nodecourse)=END\r']))
            seen = ""
            end = time.monotonic() + 60
            while time.monotonic() < end:
                msg = await ws.read_message()
                if msg is None:
                    break
                kind, *payload = json.loads(msg)
                if kind == "stdout":
                    seen += payload[0]
                    found = re.search(r"WHERE=([^\r\n=]*)=END", seen)
                    if found:
                        ws.close()
                        return found.group(1)
            ws.close()
            return f"no answer; terminal said: {seen[-500:]!r}"

        where = IOLoop.current().run_sync(ask, timeout=90)
        assert where == os.path.join(BIN, "nodecourse"), where
    finally:
        server.terminate()  # `nodecourse lab` passes it on to JupyterLab
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)  # the whole session: the server and its kernels
        deadline = time.monotonic() + 30  # JupyterLab shuts its terminals and kernels down first
        while _session_members(server.pid) and time.monotonic() < deadline:
            time.sleep(1)
        left = _session_members(server.pid)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    assert not left, f"stopping `nodecourse lab` left processes {left} running"


def _session_members(sid: int) -> list[int]:
    """Processes still alive in session ``sid`` (Linux /proc; empty elsewhere)."""
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit():
            try:
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if os.getsid(int(entry)) == sid and state != "Z":  # a zombie has exited already
                    found.append(int(entry))
            except (OSError, IndexError):
                pass
    return found


# ---------------------------------------------------------------------------
# the URL a learner is given opens lesson 0
# ---------------------------------------------------------------------------

PRINTED_URL = re.compile(r"(http://127\.0\.0\.1:\d+/\S*\?token=[0-9a-f]+)")


@pytest.mark.slow
@pytest.mark.browser
def test_the_printed_url_opens_lesson_0_without_a_local_browser(tmp_path):
    """`nodecourse lab --no-browser` (no browser on this machine, a server in a container, ...):
    the URL its output shows (JupyterLab's own line, with the token it generated) and the server's
    root URL (what `jupyter server list` prints) open lesson 0 in headless Chromium, not the launcher."""
    import browser_support as B

    if not B.CHROMIUM.exists():
        (pytest.fail if os.environ.get("CI", "").lower() == "true" else pytest.skip)(
            f"{B.CHROMIUM} not found (apt-get install chromium)"
        )
    pytest.importorskip("playwright.sync_api")
    port = _free_port()
    settings = tmp_path / "lab-settings"
    for rel, values in B.LAB_SETTINGS.items():
        (settings / rel).parent.mkdir(parents=True, exist_ok=True)
        (settings / rel).write_text(json.dumps(values))
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
        "PYTHONPATH": str(REPO),
    }
    env.pop("JUPYTER_TOKEN", None)  # the token JupyterLab generates is the one it prints in full
    log_path = tmp_path / "lab.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "nodecourse.course.cli",
                "lab",
                "--no-browser",
                "--port",
                str(port),
                "--ip",
                "127.0.0.1",
                "--root",
                str(REPO),
                "--",
                "--ServerApp.port_retries=0",
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + B.SERVER_START_TIMEOUT_S
        while not (found := PRINTED_URL.search(log_path.read_text(errors="replace"))):
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"`nodecourse lab` printed no URL:\n{log_path.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)
        printed = found.group(1)
        token = printed.split("?token=", 1)[1]
        assert printed.startswith(f"http://127.0.0.1:{port}{_cli_lab.START_URL}?"), printed
        with B.chromium(tmp_path / "chromium-profile") as context:
            for name, url in (("printed", printed), ("root", f"http://127.0.0.1:{port}/?token={token}")):
                page = context.new_page()
                page.set_default_timeout(90_000)
                page.goto(url)
                B.wait_for_notebook(page)
                assert B.current_tab(page) == START.name, f"the {name} URL {url} opened {B.current_tab(page)!r}"
                assert "/login" not in page.url, page.url
                title = B.active_panel(page).locator(".jp-MarkdownOutput h1").first
                title.wait_for(state="visible")
                assert title.inner_text().strip().startswith("0 "), title.inner_text()
                assert page.locator(".jp-Launcher:visible").count() == 0, f"the {name} URL shows the launcher"
                page.close()
    finally:
        B.stop_process_group(server)


START = REPO / _cli_lab.START_NOTEBOOK
