"""Helpers for the browser tests: a JupyterLab server started the way a learner starts it
(``nodecourse lab``), headless Chromium driven by Playwright, and the few page actions a
learner does (open a notebook, Run All, pick a dropdown entry, type a slider value).

Everything here is plain functions and context managers; tests/test_browser.py holds the
fixtures and the assertions.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from notebook_fixtures import REPO, SUBPROCESS_ENV

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]
ARTIFACTS = REPO / "test-artifacts" / "browser"

# axe-core, the accessibility checker the site's browser tests inject into each page. It is npm's
# package, installed into a cache folder outside the repository (no node_modules in the tree; one
# file, axe.min.js, is all a test reads), at one exact version: a new axe release adds rules, and
# CI should not turn red on a day nothing here changed. `.ci/run` installs it before the tests
# (python tests/browser_support.py install-axe); a test set-up installs it where it is missing.
AXE_VERSION = "4.14.1"
AXE_DIR = Path(
    os.environ.get("NODECOURSE_AXE_DIR")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nodecourse" / f"axe-core-{AXE_VERSION}"
)
AXE_SCRIPT = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
NPM_TIMEOUT_S = 180

# configurable-http-proxy, the proxy JupyterHub starts in front of the hub and the learners' servers
# (tests/test_hub.py): npm's package at one exact version, installed the same way into a cache folder
# outside the repository (`python tests/browser_support.py install-chp`, as .ci/run does).
CHP_VERSION = "5.3.0"
CHP_DIR = Path(
    os.environ.get("NODECOURSE_CHP_DIR")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "nodecourse"
    / f"configurable-http-proxy-{CHP_VERSION}"
)
CHP_COMMAND = CHP_DIR / "node_modules" / ".bin" / "configurable-http-proxy"
SERVER_START_TIMEOUT_S = 120

# JupyterLab user settings for the test server: no news/update prompt over the course,
# no autosave (the run happens in a copy anyway), and every cell kept in the DOM so the
# explorers further down a notebook can be found.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none", "kernelShutdown": True},
}


def _npm_install(package: str, version: str, folder: Path, wanted: Path) -> Path:
    """``wanted`` (a file of npm's ``package@version``), installed with npm into ``folder`` if it is not
    there yet. Raises ``RuntimeError`` naming what is missing (npm, or the install's own error)."""
    if wanted.is_file():
        return wanted
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(f"npm is not installed (apt-get install npm) and {wanted} does not exist")
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--no-save", f"{package}@{version}"],
        capture_output=True,
        text=True,
        timeout=NPM_TIMEOUT_S,
    )
    if done.returncode != 0 or not wanted.is_file():
        raise RuntimeError(
            f"npm install {package}@{version} into {folder} failed (exit {done.returncode}): "
            f"{(done.stderr or done.stdout).strip()[-800:]}"
        )
    return wanted


def install_axe() -> Path:
    """``axe.min.js`` at :data:`AXE_VERSION`, installed with npm into :data:`AXE_DIR` if it is not there yet."""
    return _npm_install("axe-core", AXE_VERSION, AXE_DIR, AXE_SCRIPT)


def install_chp() -> Path:
    """The ``configurable-http-proxy`` command at :data:`CHP_VERSION`, installed with npm into
    :data:`CHP_DIR` if it is not there yet."""
    return _npm_install("configurable-http-proxy", CHP_VERSION, CHP_DIR, CHP_COMMAND)


def axe_violations(page, script: Path) -> list[dict]:
    """Run axe-core (``script``, injected as an inline script: no request leaves the page) on
    ``page`` with its default rules (WCAG 2.x A and AA, and best practices); each violation as
    ``{"id", "impact", "help", "nodes": [(selector, what to fix), ...]}``."""
    page.add_script_tag(path=str(script))
    version = page.evaluate("() => window.axe && window.axe.version")
    if version != AXE_VERSION:
        raise AssertionError(f"{script} is axe-core {version}, not the {AXE_VERSION} the tests pin")
    return page.evaluate(
        """async () => {
            const result = await axe.run(document, {resultTypes: ['violations']});
            return result.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => [n.target.join(' '), n.failureSummary]),
            }));
        }"""
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_course(dest: Path) -> Path:
    """A copy of the course's learner-facing files (what a fresh clone shows in JupyterLab):
    running lessons in the page never touches the repository's notebooks."""
    for name in ("notebooks", "exercises", "solutions", "docs"):  # lesson 0 links docs/ledger-full.md
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for name in ("pyproject.toml", "README.md"):  # pyproject.toml marks the folder as the course root
        if (REPO / name).is_file():
            shutil.copy2(REPO / name, dest / name)
    return dest


@dataclass
class LabServer:
    url: str
    token: str
    root: Path
    log: Path
    proc: subprocess.Popen

    def log_tail(self, n: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-n:]

    opened_url_file: Path

    def opened_url(self, timeout_s: float = 30) -> str:
        """The URL JupyterLab asked the browser to open at start (what a learner sees first)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.opened_url_file.is_file() and self.opened_url_file.read_text().strip():
                return self.opened_url_file.read_text().strip()
            time.sleep(0.2)
        raise AssertionError(f"JupyterLab opened no browser page:\n{self.log_tail()}")


@contextmanager
def lab_server(root: Path, workdir: Path, *, quick: bool = True) -> Iterator[LabServer]:
    """Start ``nodecourse lab`` on 127.0.0.1 on a free port with a known token, the course at
    ``root``; yield when ``/api/status`` answers; stop the whole process group by handle."""
    settings = workdir / "lab-settings"
    for rel, values in LAB_SETTINGS.items():
        path = settings / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **SUBPROCESS_ENV,
        "JUPYTER_RUNTIME_DIR": str(workdir / "runtime"),
        "JUPYTERLAB_WORKSPACES_DIR": str(workdir / "workspaces"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTER_CONFIG_DIR": str(workdir / "config"),
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    }
    if quick:
        env["NODECOURSE_QUICK"] = "1"
    log_path = workdir / "lab.log"
    log = open(log_path, "w")
    # The "browser" JupyterLab launches writes the URL it was given to a file: the test opens
    # exactly the page `nodecourse lab` opens for a learner (JupyterLab's redirect file, which
    # forwards to the start notebook with the token).
    opened = workdir / "opened-url.txt"
    browser = f"/bin/sh -c 'echo \"$0\" > {opened}' %s"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nodecourse.course.cli",
            "lab",
            "--root",
            str(root),
            "--ip",
            "127.0.0.1",
            "--port",
            str(port),
            "--",
            f"--IdentityProvider.token={token}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.browser={browser}",
        ],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: stopping it stops its kernels too
    )
    server = LabServer(f"http://127.0.0.1:{port}", token, root, log_path, proc, opened)

    def answers() -> bool:
        with urllib.request.urlopen(f"{server.url}/api/status?token={token}", timeout=5) as r:
            return r.status == 200

    try:
        wait_answering(proc, answers, "JupyterLab", SERVER_START_TIMEOUT_S, server.log_tail)
        yield server
    finally:
        stop_process_group(proc)
        log.close()


def wait_answering(proc: subprocess.Popen, answers, what: str, timeout_s: float, log_tail) -> None:
    """Wait until ``answers()`` is true (an ``OSError`` counts as not yet) for the server ``proc``
    started; raise ``RuntimeError`` with ``log_tail()`` when it exits first or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}:\n{log_tail()}")
        try:
            if answers():
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not answer within {timeout_s} s:\n{log_tail()}")
        time.sleep(0.5)


def unavailable(reason: str) -> None:
    """A browser test that cannot run: under CI=true a failure, elsewhere a skip naming ``reason``."""
    import pytest

    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser tests cannot run under CI=true: {reason}")
    pytest.skip(reason)


def shutdown_kernels(server: LabServer) -> None:
    """Delete every session and kernel of the server (between tests: one lesson's kernel at a time)."""
    headers = {"Authorization": f"token {server.token}"}
    for kind in ("sessions", "kernels"):
        with urllib.request.urlopen(
            urllib.request.Request(f"{server.url}/api/{kind}", headers=headers), timeout=30
        ) as r:
            items = json.load(r)
        for item in items:
            req = urllib.request.Request(f"{server.url}/api/{kind}/{item['id']}", headers=headers, method="DELETE")
            try:
                urllib.request.urlopen(req, timeout=60).close()
            except OSError:
                pass  # already gone with its session


def stop_process_group(proc: subprocess.Popen) -> None:
    """SIGTERM the process group started for ``proc``, then SIGKILL if it lingers."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def chromium(profile: Path) -> Iterator[object]:
    """A headless Chromium context (Debian's, never a downloaded one); closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1400, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


# ---------------------------------------------------------------------------
# page actions
# ---------------------------------------------------------------------------


def open_notebook(page, server: LabServer, rel_path: str) -> None:
    """Open ``rel_path`` (relative to the course root) in JupyterLab and wait for its kernel."""
    from playwright.sync_api import TimeoutError as PWTimeout

    # ?reset: a fresh workspace, so the tabs (and kernels) of earlier visits are not restored
    page.goto(f"{server.url}/lab/tree/{rel_path}?reset&token={server.token}")
    wait_for_notebook(page)
    # a kernel choice dialog, if any, or the kernel connected and idle, whichever comes first
    page.wait_for_function(
        f"""() => document.querySelector('.jp-Dialog .jp-mod-accept') || ({_KERNEL_IDLE_JS})()""",
        timeout=120_000,
        polling=100,
    )
    dialog = page.locator(".jp-Dialog .jp-mod-accept")
    if dialog.count():  # accept the proposed kernel as a learner would
        try:
            dialog.first.click(timeout=5_000)
        except PWTimeout:
            pass
    wait_kernel_connected_idle(page)
    wait_kernel_idle(page)


# The status bar's kernel item reads "<kernel name> | Idle" once the page's kernel connection is up
# and idle ("Starting", "Connecting", "Unknown" before). The notebook toolbar's execution indicator
# says "idle" from the start, before any kernel is there, so alone it proves nothing at open.
_KERNEL_IDLE_JS = """() => {
    const bar = document.querySelector('#jp-main-statusbar');
    const text = bar ? bar.innerText : '';
    return /\\| Idle\\b/.test(text) && !/No Kernel/.test(text);
}"""


def wait_kernel_connected_idle(page, timeout_ms: int = 120_000) -> None:
    """Wait until the status bar says the current notebook's kernel is connected and idle."""
    page.wait_for_function(_KERNEL_IDLE_JS, timeout=timeout_ms, polling=100)


def wait_for_notebook(page) -> None:
    page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell", state="visible")


def active_panel(page):
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").first


def wait_kernel_idle(page, timeout_ms: int = 120_000) -> None:
    page.wait_for_selector(
        ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator[data-status='idle']",
        state="attached",
        timeout=timeout_ms,
    )


_CURRENT_TAB = "#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel"


def current_tab(page) -> str:
    """The label of the main area's current tab (a document's file name)."""
    return page.locator(_CURRENT_TAB).first.inner_text().strip()


def wait_current_tab(page, name: str, timeout_ms: int = 60_000) -> None:
    page.wait_for_function(
        f"""name => {{
            const tab = document.querySelector({_CURRENT_TAB!r});
            return tab && tab.textContent.trim() === name;
        }}""",
        arg=name,
        timeout=timeout_ms,
    )


def activate_tab(page, name: str) -> None:
    label = page.locator(".lm-TabBar-tabLabel", has_text=name)
    page.locator("#jp-main-dock-panel .lm-TabBar-tab", has=label).first.click()
    wait_current_tab(page, name)


def close_current_tab(page) -> None:
    tabs = "#jp-main-dock-panel .lm-TabBar-tab"
    before = page.locator(tabs).count()
    page.locator(f"{tabs}.lm-mod-current .lm-TabBar-tabCloseIcon").first.click()
    # a dialog only if the document changed (the learner discards: the copy is never saved);
    # otherwise the tab goes at once: wait for whichever happens, not a fixed time for the dialog
    page.wait_for_function(
        "([sel, n]) => document.querySelector('.jp-Dialog') || document.querySelectorAll(sel).length < n",
        arg=[tabs, before],
        polling=100,
    )
    discard = page.locator(".jp-Dialog button", has_text=re.compile("Don.t Save|Discard"))
    if discard.count():
        discard.first.click()
        page.wait_for_function("([sel, n]) => document.querySelectorAll(sel).length < n", arg=[tabs, before])


def menu(page, top: str, item: str) -> None:
    """Click ``top`` in the menu bar, then ``item`` in the menu it opens."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(rf"^{re.escape(top)}$")).first.click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(rf"^{re.escape(item)}$")).first.click()


def run_all_cells(page, timeout_ms: int) -> None:
    """Run > Run All Cells, then wait until every code cell has an execution number (or one failed)."""
    from playwright.sync_api import TimeoutError as PWTimeout

    started = r"""() => {
        const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
        const first = panel && panel.querySelector('.jp-CodeCell .jp-InputPrompt');
        return first && /\[(\*|\d+)\]/.test(first.textContent);
    }"""
    for attempt in range(3):  # a click while the kernel is still connecting can be lost: check it started
        menu(page, "Run", "Run All Cells")
        try:
            page.wait_for_function(started, timeout=30_000, polling=250)
            break
        except PWTimeout:
            if attempt == 2:
                raise
    page.wait_for_function(
        """() => {
            const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
            if (!panel) return false;
            // an error stops Run All: the cells after it never get a number
            if (panel.querySelector(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']"))
                return true;
            const prompts = [...panel.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
            return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
        }""",
        timeout=timeout_ms,
        polling=200,
    )
    wait_kernel_idle(page, timeout_ms)


def run_code_cells(page, indexes: list[int], timeout_ms: int) -> None:
    """Run the active notebook's code cells ``indexes`` (0 = its first code cell), in order, as a
    learner does: click the cell, Shift+Enter, and wait for its execution number."""
    from playwright.sync_api import TimeoutError as PWTimeout

    done = r"""el => /\[\d+\]/.test(el.textContent)"""
    for i in indexes:
        cell = active_panel(page).locator(".jp-CodeCell").nth(i)
        cell.scroll_into_view_if_needed()
        prompt = cell.locator(".jp-InputPrompt").first
        for attempt in range(3):  # a key press while the kernel is still connecting can be lost
            prompt.click()
            page.keyboard.press("Shift+Enter")
            try:
                page.wait_for_function(
                    r"""el => /\[(\*|\d+)\]/.test(el.textContent)""",
                    arg=prompt.element_handle(),
                    timeout=30_000,
                    polling=100,
                )
                break
            except PWTimeout:
                if attempt == 2:
                    raise
        page.wait_for_function(done, arg=prompt.element_handle(), timeout=timeout_ms, polling=200)
    wait_kernel_idle(page, timeout_ms)


def error_outputs(page) -> list[str]:
    """Texts of the tracebacks shown in the active notebook (an error in any cell)."""
    return (
        active_panel(page)
        .locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']")
        .all_inner_texts()
    )


def explorer(page, class_name: str):
    """The explorer box whose Python class is ``class_name`` (see nodecourse.widgets._base)."""
    return active_panel(page).locator(f".nc-explorer-{class_name}").first


def status_text(box) -> str:
    return box.locator(".nc-status").first.inner_text().strip()


def select_option(box, control: str, label: str) -> None:
    """Pick ``label`` in the dropdown widget ``nc-control-<control>``."""
    select = box.locator(f".nc-control-{control} select").first
    # ipywidgets shows option labels with non-breaking spaces
    labels = [t.replace("\xa0", " ") for t in select.evaluate("s => [...s.options].map(o => o.text)")]
    if label not in labels:
        raise AssertionError(f"dropdown {control} has no option {label!r}; options: {labels}")
    select.select_option(index=labels.index(label))


def selected_option(box, control: str) -> str:
    select = box.locator(f".nc-control-{control} select").first
    return select.evaluate("s => s.options[s.selectedIndex].text").replace("\xa0", " ")


def wait_slider_enabled(box, control: str, timeout_ms: int = 180_000) -> None:
    """Wait until the slider ``nc-control-<control>`` takes input: an explorer disables its controls
    while it computes (and re-enables them just after drawing), and a disabled slider's readout
    ignores typing."""
    box.locator(f".nc-control-{control} .noUi-target:not([disabled])").first.wait_for(
        state="attached", timeout=timeout_ms
    )


def set_slider(box, control: str, text: str) -> None:
    """Type ``text`` into the slider's readout and press Enter, as a learner can in ipywidgets 8."""
    wait_slider_enabled(box, control)
    readout = box.locator(f".nc-control-{control} .widget-readout").first
    readout.click()
    readout.press("Control+a")
    readout.type(text)
    readout.press("Enter")


def press_on_slider(box, control: str, key: str) -> None:
    """Focus the slider's handle and press ``key`` (one step per arrow key, as with a keyboard)."""
    wait_slider_enabled(box, control)
    handle = box.locator(f".nc-control-{control} .noUi-handle").first
    handle.focus()
    handle.press(key)


def slider_readout(box, control: str) -> str:
    text = box.locator(f".nc-control-{control} .widget-readout").first.inner_text().strip()
    return text.replace("\u2212", "-")  # d3-format writes a typographic minus


def figure_signature(box) -> str:
    """What the figure shows, as text that changes when the figure does: a plotly figure's
    data and title (from the page's plot object), or a matplotlib image's data URL."""
    fig = box.locator(".nc-figure").first
    return fig.evaluate(
        """el => {
            const plot = el.querySelector('.js-plotly-plot');
            if (plot && (plot._fullData || plot.data)) {
                const title = (plot.layout && plot.layout.title && plot.layout.title.text) || '';
                const data = (plot._fullData || plot.data).map(t => [t.name, Array.from(t.y || [])]);
                return JSON.stringify({title, data});
            }
            const img = el.querySelector('img');
            return img ? img.src : '';
        }"""
    )


def plotly_traces(box) -> dict:
    """``{trace name: [y values]}`` of the explorer's plotly figure, as the page holds them."""
    # _fullData holds the decoded arrays (plotly sends numpy arrays base64-encoded in .data)
    return box.locator(".nc-figure .js-plotly-plot").first.evaluate(
        """el => Object.fromEntries((el._fullData || el.data).map(
               t => [t.name, Array.from(t.y || []).map(v => (v === null || v === undefined) ? null : Number(v))]))"""
    )


def wait_status_change(page, box, before: str, timeout_ms: int) -> str:
    """Wait until the explorer's result line differs from ``before`` and is not a progress note."""
    handle = box.locator(".nc-status").first.element_handle()
    page.wait_for_function(
        """([el, before]) => {
            const t = el.innerText.trim();
            return t && t !== before && !/…|\\.\\.\\.$/.test(t);
        }""",
        arg=[handle, before],
        timeout=timeout_ms,
        polling=250,
    )
    return status_text(box)


def wait_figure_change(page, box, before: str, timeout_ms: int) -> str:
    deadline = time.monotonic() + timeout_ms / 1000
    while time.monotonic() < deadline:
        sig = figure_signature(box)
        if sig and sig != before:
            return sig
        page.wait_for_timeout(250)
    raise AssertionError("the explorer's figure did not change")


def screenshot(box, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    box.scroll_into_view_if_needed()
    box.screenshot(path=str(path))
    return path


if __name__ == "__main__":  # `python tests/browser_support.py install-axe` (or install-chp), as .ci/run does
    installers = {"install-axe": install_axe, "install-chp": install_chp}
    if len(sys.argv) != 2 or sys.argv[1] not in installers:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(installers)}}} (got {sys.argv[1:]})")
    try:
        print(installers[sys.argv[1]]())
    except (RuntimeError, subprocess.TimeoutExpired) as err:
        sys.exit(f"[ci] {err}")
