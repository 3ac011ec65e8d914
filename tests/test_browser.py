"""JupyterLab in a real browser: `nodecourse lab` serves a notebook with an ipywidgets
slider, headless Chromium (driven by Playwright) runs all cells, and the slider renders.

This is what a learner does first; it fails when the widget manager extension
is missing or broken, which no headless kernel test can see. A screenshot is
kept in test-artifacts/ (git-ignored).
"""
from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from notebook_fixtures import REPO, SUBPROCESS_ENV, write

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--disable-quic", "--no-first-run",
]
ARTIFACTS = REPO / "test-artifacts"
SERVER_START_TIMEOUT_S = 120
WIDGET_TIMEOUT_MS = 120_000

pytestmark = [
    pytest.mark.browser,
    pytest.mark.timeout(420),  # the whole test, server start included, is bounded
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} not found (apt-get install chromium)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _widget_notebook():
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        new_markdown_cell("# Widget smoke test\nA slider must render below."),
        new_code_cell(
            "import ipywidgets as widgets\n"
            "slider = widgets.IntSlider(value=3, min=0, max=10, description='steps')\n"
            "slider"
        ),
        new_code_cell("print('kernel ran; slider value', slider.value)"),
    ]
    return nb


@pytest.fixture
def lab_server(tmp_path):
    """`nodecourse lab` on 127.0.0.1 with a token, in a tmp course folder; always killed."""
    root = tmp_path / "course"
    write(_widget_notebook(), root / "notebooks" / "00_start_here.ipynb")
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **SUBPROCESS_ENV,
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
    }
    log = open(tmp_path / "lab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "nodecourse.course.cli", "lab", "--root", str(root), "--no-browser",
         "--ip", "127.0.0.1", "--port", str(port), "--",
         f"--IdentityProvider.token={token}", "--ServerApp.port_retries=0"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the finalizer kills server and kernels together
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with {proc.returncode}:\n{(tmp_path / 'lab.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer within {SERVER_START_TIMEOUT_S} s:\n"
                            f"{(tmp_path / 'lab.log').read_text()[-3000:]}")
            time.sleep(1)
        yield {"url": url, "token": token, "root": root, "log": tmp_path / "lab.log"}
    finally:
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        log.close()


def test_widget_renders_in_jupyterlab(lab_server, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "browser_widget.png"
    with sync_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
            headless=True, viewport={"width": 1280, "height": 800},
        )
        try:
            page = context.new_page()
            page.set_default_timeout(WIDGET_TIMEOUT_MS)
            page.goto(f"{lab_server['url']}/lab/tree/notebooks/00_start_here.ipynb?token={lab_server['token']}")
            page.wait_for_selector(".jp-Notebook .jp-Cell", state="visible")
            # JupyterLab may ask which kernel to start; a learner accepts the proposed one.
            try:
                page.locator(".jp-Dialog .jp-mod-accept").click(timeout=20_000)
            except sync_api.TimeoutError:
                pass
            page.wait_for_selector(".jp-StatusBar-TextItem:has-text('Idle')", state="visible")
            # Run > Run All Cells, through the menu as a learner would.
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            try:
                page.wait_for_selector(".jp-OutputArea-output .widget-slider", state="visible")
                page.wait_for_selector("text=kernel ran; slider value 3", state="visible")
            finally:
                page.screenshot(path=str(shot), full_page=True)
            slider = page.locator(".jp-OutputArea-output .widget-slider").first
            assert "steps" in slider.inner_text()
            # a key press moves the slider to 4, and the kernel's model sees it
            slider.locator(".noUi-handle").first.focus()
            page.keyboard.press("ArrowRight")
            page.wait_for_selector(".jp-OutputArea-output .widget-readout:has-text('4')", state="visible")
            page.locator(".jp-CodeCell .jp-InputArea-editor", has_text="kernel ran").first.click()
            page.keyboard.press("Shift+Enter")
            page.wait_for_selector("text=kernel ran; slider value 4", state="visible")
            page.screenshot(path=str(shot), full_page=True)
            assert page.locator(".jp-OutputArea-output .jupyter-widgets").count() >= 1
            # the widget manager reports a broken model as text; there must be none
            assert page.locator("text=Error displaying widget").count() == 0
            assert page.locator("text=Loading widget...").count() == 0
        finally:
            context.close()
    assert shot.is_file() and shot.stat().st_size > 0
