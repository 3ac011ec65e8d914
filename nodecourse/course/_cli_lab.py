"""``nodecourse lab``: JupyterLab started in the course folder at lesson 0, with the course's
``bin`` folder first on its ``PATH`` and a refusal of any address other than loopback unless
``--allow-remote`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from nodecourse.course._cli_usage import course_root_or_exit

START_NOTEBOOK = Path("notebooks") / "00_start_here.ipynb"
#: The path of lesson 0 in JupyterLab: the server's default URL under ``nodecourse lab``.
START_URL = "/lab/tree/" + START_NOTEBOOK.as_posix()


def course_bin_dir() -> str:
    """The folder of the Python running the course (``.venv/bin``): where ``nodecourse`` is.

    ``sys.executable`` is taken as it is, symlinks not resolved, since a venv's
    python is a link to the base interpreter, whose folder has no ``nodecourse``.
    """
    return os.path.dirname(sys.executable)


def lab_environment(environ: dict | None = None) -> dict:
    """The environment of the JupyterLab server: ``environ`` (default ``os.environ``) with
    :func:`course_bin_dir` first on ``PATH``, so that ``nodecourse grade ...`` works in
    JupyterLab's terminals and notebooks' ``!`` commands as the lessons spell it."""
    env = dict(os.environ if environ is None else environ)
    bin_dir = course_bin_dir()
    rest = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != bin_dir]
    env["PATH"] = os.pathsep.join([bin_dir, *rest])
    return env


def _terminal_shell(environ: dict) -> list[str]:
    """The shell of JupyterLab's terminals: the user's, *not* as a login shell.

    Started without a terminal (``make course``, Binder), JupyterLab runs ``$SHELL -l``,
    and a login shell reads /etc/profile, which on Debian-like systems sets PATH
    from scratch and drops the course's bin folder. An interactive shell keeps the
    server's PATH (and still reads ~/.bashrc).
    """
    shell = environ.get("SHELL") or shutil.which("bash") or shutil.which("sh") or "sh"
    return [shell]


# The options through which JupyterLab can be told its address: ours, and jupyter's own
# spellings passed through after `--` (they would otherwise bypass the loopback check).
_IP_OPTIONS = ("--ip", "--ServerApp.ip", "--NotebookApp.ip")


def is_loopback(address: str) -> bool:
    """Whether ``address`` is a loopback address: 127.0.0.0/8, ::1 or ``localhost``.

    Only an address (or ``localhost``) counts: an empty string, ``0.0.0.0``, ``::`` and
    any host name other than ``localhost`` mean (or may resolve to) a network interface.
    """
    import ipaddress

    text = address.strip().strip("[]")  # [::1], as URLs spell IPv6
    if text.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


def _requested_addresses(args: argparse.Namespace, extra: Sequence[str]) -> list[tuple[str, str]]:
    """Every (option, address) the server would be given: ``--ip`` and jupyter's own spellings in ``extra``."""
    found = [("--ip", args.ip)] if args.ip is not None else []
    items = list(extra)
    for i, item in enumerate(items):
        for name in _IP_OPTIONS:
            if item.startswith(name + "="):
                found.append((name, item.split("=", 1)[1]))
            elif item == name and i + 1 < len(items):
                found.append((name, items[i + 1]))
    return found


def remote_access_error(args: argparse.Namespace, extra: Sequence[str]) -> str | None:
    """The message refusing a non-loopback address without ``--allow-remote``; None when allowed."""
    if getattr(args, "allow_remote", False):
        return None
    for name, address in _requested_addresses(args, extra):
        if not is_loopback(address):
            shown = "every network interface" if address.strip() in ("", "0.0.0.0", "::", "*") else address
            return (
                f"error: {name}={address!r} would make the server listen on {shown}, not only on this "
                "computer (valid without --allow-remote: 127.0.0.0/8, ::1 or localhost). That exposes a "
                "JupyterLab server that runs any code as this user, with this user's files, to anyone who "
                "can reach this machine on the network; its token is the only protection. To keep it "
                f"local, drop {name} or give {name}=127.0.0.1; to expose it on purpose, add --allow-remote."
            )
    return None


def lab_command(args: argparse.Namespace, extra: Sequence[str]) -> list[str]:
    """The JupyterLab command line ``nodecourse lab`` runs (in the course root)."""
    root = course_root_or_exit(args.root)
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={root}"]
    if not any("terminado_settings" in e for e in extra):  # the user's own choice wins
        shell = json.dumps({"shell_command": _terminal_shell(dict(os.environ))})
        cmd.append(f"--ServerApp.terminado_settings={shell}")
    if (root / START_NOTEBOOK).is_file():
        # The server's URLs land on lesson 0: the one JupyterLab prints (…/lab/tree/…?token=…) and
        # `/` (what `jupyter server list` prints) through the default URL; the page it opens in a
        # local browser through the file to run (relative to root_dir).
        cmd.append(f"--LabApp.default_url={START_URL}")
        cmd.append(str(START_NOTEBOOK))
    if args.port is not None:
        cmd.append(f"--port={args.port}")
    if args.ip is not None:
        cmd.append(f"--ip={args.ip}")
    if args.no_browser:
        cmd.append("--no-browser")
    # Jupyter refuses to start as root without this flag (containers, Binder-like hosts).
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in extra:
        cmd.append("--allow-root")
    cmd.extend(extra)
    return cmd


def run_lab(args: argparse.Namespace, extra: Sequence[str]) -> int:
    refused = remote_access_error(args, extra)
    if refused is not None:
        print(refused, file=sys.stderr)
        return 2
    remote = [a for _, a in _requested_addresses(args, extra) if not is_loopback(a)]
    if remote:  # allowed on purpose: still say what it means, once, before the server starts
        print(
            f"warning: --allow-remote: JupyterLab will listen on {remote[0] or 'every interface'!r}; anyone "
            "who can reach it and has the token can run code as this user",
            file=sys.stderr,
        )
    cmd = lab_command(args, extra)
    root = course_root_or_exit(args.root)
    if args.dry_run:
        print(shlex.join(cmd))
        return 0
    if not (root / START_NOTEBOOK).is_file():
        print(f"warning: {root / START_NOTEBOOK} not found; opening the file browser instead", file=sys.stderr)
    print(
        f"Starting JupyterLab. It prints a URL ending in {START_URL}?token=... below: open that URL (it "
        "opens lesson 0), or paste the token into the login page's 'Password or token' box. In its terminal "
        "(File > New > "
        f"Terminal), `nodecourse` is on the PATH ({course_bin_dir()}).",
        file=sys.stderr,
        flush=True,
    )
    server = subprocess.Popen(cmd, cwd=root, env=lab_environment())

    def forward(signum, frame):
        """Stopping `nodecourse lab` stops JupyterLab (and its kernels) instead of orphaning it."""
        server.send_signal(signum)

    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), forward)
    while True:
        try:
            return server.wait()
        except KeyboardInterrupt:  # Ctrl-C reaches JupyterLab too; it asks, then shuts down
            continue
