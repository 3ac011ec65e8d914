"""Helpers for the hub test (tests/test_hub.py): a JupyterHub started on 127.0.0.1 from a config
written into a temporary folder, the course handed out to the learners' homes, the hub's REST API,
and nbgrader's commands run as one hub user.

Every hub user is the same unix user here (JupyterHub's ``SimpleLocalProcessSpawner``, a home per
user under the test's folder). nbgrader 0.9.6 takes the student id of ``submit`` and
``fetch_feedback`` from the unix user name (``nbgrader.utils.get_username``: ``JUPYTERHUB_USER``
only when that name is ``jovyan``, as in the Jupyter Docker images), so each learner's
``nbgrader_config.py`` sets ``CourseDirectory.student_id`` from ``JUPYTERHUB_USER``, which the hub
sets in every single-user server: the student id is the hub login, as on a hub whose users are
``jovyan`` (Zero to JupyterHub) or have a unix user each (The Littlest JupyterHub).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from browser_support import CHP_COMMAND, LAB_SETTINGS, free_port, stop_process_group, wait_answering
from notebook_fixtures import REPO

VENV_BIN = Path(sys.executable).parent
COURSE_ID = "nodecourse"
#: What a learner's copy of the course holds (docs/hub.md): the lessons, the exercises, the Binder
#: environment and the README; never solutions/.
HANDED_OUT = ("notebooks", "exercises", "binder", "docs", "README.md")  # docs/: the guides the README links
HUB_START_TIMEOUT_S = 120
SERVER_START_TIMEOUT_S = 240

HUB_CONFIG = """\
c = get_config()  # noqa: F821
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.JupyterHub.db_url = "sqlite:///{hub_dir}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{hub_dir}/jupyterhub_cookie_secret"
c.JupyterHub.pid_file = "{hub_dir}/jupyterhub.pid"
c.JupyterHub.cleanup_servers = True
c.JupyterHub.cleanup_proxy = True
c.ConfigurableHTTPProxy.command = ["{chp}"]
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.pid_file = "{hub_dir}/proxy.pid"

c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = "{password}"
c.Authenticator.allowed_users = {learners!r}
c.Authenticator.admin_users = {{"{instructor}"}}

c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = "{homes}/{{username}}"
c.Spawner.cmd = ["{venv_bin}/jupyterhub-singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.args = {server_args!r}
c.Spawner.start_timeout = {server_timeout}
c.Spawner.http_timeout = {server_timeout}
c.Spawner.environment = {{"NODECOURSE_QUICK": "1", "OMP_NUM_THREADS": "1", "MPLBACKEND": "agg"}}

# the test's own client of the REST API: start and stop servers, read their state, use their API
c.JupyterHub.services = [{{"name": "hub-test", "api_token": "{token}"}}]
c.JupyterHub.load_roles = [
    {{
        "name": "hub-test",
        "scopes": ["admin:users", "admin:servers", "admin:server_state", "access:servers", "list:users"],
        "services": ["hub-test"],
    }}
]
"""

#: Each learner's ``~/.jupyter/nbgrader_config.py`` (one text for all, as /etc/jupyter's on a hub).
LEARNER_NBGRADER_CONFIG = """\
import os

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "{course_id}"
c.Exchange.root = "{exchange}"
# the hub login is the student id (nbgrader takes the unix user's name otherwise: one for all here)
c.CourseDirectory.student_id = os.environ["JUPYTERHUB_USER"]
"""

INSTRUCTOR_NBGRADER_CONFIG = """\
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "{course_id}"
c.CourseDirectory.root = "{course}"
c.Exchange.root = "{exchange}"
# every hub user is one unix user here, so the owner of a submission never matches the student id
c.ExchangeCollect.check_owner = False
"""


def hand_out(home: Path) -> Path:
    """The course as a learner gets it (docs/hub.md): ``home/nodecourse`` with :data:`HANDED_OUT`,
    no ``solutions/`` (the library comes from the shared environment)."""
    dest = home / "nodecourse"
    for name in HANDED_OUT:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        elif src.is_file():
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def user_env(home: Path, user: str) -> dict[str, str]:
    """The environment a hub user's server (and its terminal) has: the shared environment first on
    PATH, the user's home, ``JUPYTERHUB_USER``; nothing of the test process's Jupyter settings."""
    return {
        "PATH": f"{VENV_BIN}:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "JUPYTERHUB_USER": user,
        "NODECOURSE_QUICK": "1",
        "OMP_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def run_as(hub: Hub, user: str, args: list[str], *, cwd: Path | None = None, timeout: float) -> str:
    """Run ``args`` (a command of the shared environment) as hub user ``user`` in their home (or
    ``cwd``); returns its output, raises with the output when it fails."""
    home = hub.home(user)
    done = subprocess.run(
        [str(VENV_BIN / args[0]), *args[1:]],
        cwd=cwd or home,
        env=user_env(home, user),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    output = done.stdout + done.stderr
    if done.returncode != 0:
        raise AssertionError(f"{user}: {' '.join(args)} exited {done.returncode}:\n{output[-4000:]}")
    return output


@dataclass
class Hub:
    url: str
    token: str
    password: str
    root: Path
    exchange: Path
    log: Path
    proc: subprocess.Popen
    server_pids: set[int] = field(default_factory=set)

    def home(self, user: str) -> Path:
        return self.root / "homes" / user

    def log_tail(self, n: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-n:]

    def request(self, method: str, url: str, body: dict | None = None, timeout: float = 30) -> tuple[int, object]:
        """``(status, JSON or text)`` of ``method url`` with the test's API token (HTTP errors included)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method, headers={"Authorization": f"token {self.token}"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as err:
            status, raw = err.code, err.read()
        text = raw.decode(errors="replace")
        try:
            return status, json.loads(text) if text else None
        except json.JSONDecodeError:
            return status, text

    def api(self, method: str, path: str, body: dict | None = None) -> tuple[int, object]:
        """The hub's REST API: ``path`` below ``/hub/api``."""
        return self.request(method, f"{self.url}/hub/api{path}", body)

    def start_server(self, user: str) -> None:
        """Start ``user``'s server through the REST API and wait until the hub says it is ready."""
        status, body = self.api("POST", f"/users/{user}/server")
        assert status in (201, 202), f"starting {user}'s server: HTTP {status} {body}\n{self.log_tail()}"
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while time.monotonic() < deadline:
            status, model = self.api("GET", f"/users/{user}")
            server = (model or {}).get("servers", {}).get("") if status == 200 else None
            if server and (server.get("state") or {}).get("pid"):
                self.server_pids.add(int(server["state"]["pid"]))
            if server and server.get("ready"):
                return
            if status == 200 and not server and not (model or {}).get("pending"):
                raise AssertionError(f"{user}'s server stopped while starting:\n{self.log_tail()}")
            time.sleep(1)
        raise AssertionError(f"{user}'s server not ready within {SERVER_START_TIMEOUT_S} s:\n{self.log_tail()}")

    def stop_server(self, user: str) -> None:
        status, body = self.api("DELETE", f"/users/{user}/server")
        if status not in (202, 204, 400):  # 400: it was not running
            raise AssertionError(f"stopping {user}'s server: HTTP {status} {body}")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status, model = self.api("GET", f"/users/{user}")
            if status == 200 and not model.get("servers") and not model.get("pending"):
                return
            time.sleep(0.5)

    def contents(self, user: str, path: str = "") -> tuple[int, object]:
        """``user``'s server's contents API (through the proxy, as a browser reaches it)."""
        return self.request("GET", f"{self.url}/user/{user}/api/contents/{urllib.parse.quote(path)}?content=1")


def write_homes(root: Path, learners: list[str], instructor: str, exchange: Path) -> None:
    """Each user's home: the learners' with the course handed out, nbgrader's learner config and
    JupyterLab settings without news prompts; the instructor's with an empty home."""
    for user in [*learners, instructor]:
        home = root / "homes" / user
        (home / ".jupyter").mkdir(parents=True)
        for rel, values in LAB_SETTINGS.items():
            path = home / ".jupyter" / "lab" / "user-settings" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        if user in learners:
            hand_out(home)
            (home / ".jupyter" / "nbgrader_config.py").write_text(
                LEARNER_NBGRADER_CONFIG.format(course_id=COURSE_ID, exchange=exchange)
            )


def instructor_course(hub: Hub, instructor: str, source: dict[str, Path]) -> Path:
    """The instructor's nbgrader course folder, ``source/<assignment>/`` holding each notebook of
    ``source`` (``{assignment: exercise notebook}``) exactly as ``exercises/`` has it."""
    course = hub.home(instructor) / "course"
    course.mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(
        INSTRUCTOR_NBGRADER_CONFIG.format(course_id=COURSE_ID, course=course, exchange=hub.exchange)
    )
    for assignment, notebook in source.items():
        (course / "source" / assignment).mkdir(parents=True)
        shutil.copy2(notebook, course / "source" / assignment / notebook.name)
    return course


@contextmanager
def hub(root: Path, learners: list[str], instructor: str) -> Iterator[Hub]:
    """JupyterHub on 127.0.0.1 (free ports) from ``root/hub/jupyterhub_config.py``, the proxy npm's
    configurable-http-proxy at :data:`~browser_support.CHP_COMMAND`; yields when the REST API answers.
    On exit: every server stopped through the API, then the hub (which stops its proxy), and any
    server or proxy process the hub left is stopped by its pid."""
    hub_dir, exchange = root / "hub", root / "exchange"
    hub_dir.mkdir(parents=True)
    exchange.mkdir()
    write_homes(root, learners, instructor, exchange)
    port, token, password = free_port(), secrets.token_hex(16), secrets.token_hex(8)
    (hub_dir / "jupyterhub_config.py").write_text(
        HUB_CONFIG.format(
            port=port,
            hub_port=free_port(),
            proxy_api_port=free_port(),
            hub_dir=hub_dir,
            chp=CHP_COMMAND,
            password=password,
            learners={*learners, instructor},
            instructor=instructor,
            homes=root / "homes",
            venv_bin=VENV_BIN,
            server_timeout=SERVER_START_TIMEOUT_S,
            # a container's only user may be root (CI): Jupyter Server refuses root without it
            server_args=["--allow-root"] if os.geteuid() == 0 else [],
            token=token,
        )
    )
    log_path = hub_dir / "jupyterhub.log"
    log = open(log_path, "w")
    env = {**user_env(hub_dir, "hub"), "PATH": f"{VENV_BIN}:{CHP_COMMAND.parent}:/usr/bin:/bin"}
    env.pop("JUPYTERHUB_USER")
    proc = subprocess.Popen(
        [str(VENV_BIN / "jupyterhub"), "-f", str(hub_dir / "jupyterhub_config.py")],
        cwd=hub_dir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    h = Hub(f"http://127.0.0.1:{port}", token, password, root, exchange, log_path, proc)
    try:
        wait_answering(proc, lambda: h.api("GET", "/")[0] == 200, "JupyterHub", HUB_START_TIMEOUT_S, h.log_tail)
        yield h
    finally:
        try:
            for user in [*learners, instructor]:
                if proc.poll() is None:
                    h.stop_server(user)
        finally:
            stop_process_group(proc)
            log.close()
            # only processes this hub started: a server's group (its kernels too), the proxy
            groups = sorted(h.server_pids)
            proxy_pid = hub_dir / "proxy.pid"
            proxy = (
                int(proxy_pid.read_text()) if proxy_pid.is_file() and proxy_pid.read_text().strip().isdigit() else None
            )
            for kill, pid in [*((os.killpg, g) for g in groups), *([(os.kill, proxy)] if proxy else [])]:
                try:
                    kill(pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
