"""The environment report behind ``nodecourse check``.

One line per item: Python, torch, the devices it sees and the CPU threads the
course uses (:func:`nodecourse.config.thread_choice`), the notebook stack
(JupyterLab, ipywidgets and the JupyterLab widget manager, nbval), the data
(PhysioNet found, or the synthetic stand-in) and the mode (quick or full).
Items marked essential make ``nodecourse check`` exit non-zero when missing.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

# Distribution name -> why the course needs it. All essential.
ESSENTIAL_PACKAGES: dict[str, str] = {
    "torch": "the library and every lesson",
    "torchdiffeq": "the reference solver the lessons compare against",
    "numpy": "arrays in the lessons",
    "scikit-learn": "the digits data set",
    "matplotlib": "static figures",
    "plotly": "interactive figures",
    "ipywidgets": "the lessons' widgets",
    "jupyterlab": "running the course (`nodecourse lab`)",
    "nbval": "the grader and the notebook tests",
    "nbformat": "the grader and the exercise builder",
    "tqdm": "progress bars",
}

WIDGET_MANAGER = "@jupyter-widgets/jupyterlab-manager"


@dataclass
class Item:
    """One line of the report."""

    name: str
    value: str
    ok: bool
    essential: bool
    fix: str = ""


def package_version(dist: str) -> str | None:
    """The installed version of a distribution, or None when it is not installed."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def widget_manager_dirs() -> list[Path]:
    """Folders where JupyterLab would find the ipywidgets manager extension."""
    try:
        from jupyter_core.paths import jupyter_path
    except ImportError:
        return []
    found = []
    for base in jupyter_path("labextensions"):
        candidate = Path(base) / WIDGET_MANAGER
        if (candidate / "package.json").is_file():
            found.append(candidate)
    return found


def _torch_items() -> list[Item]:
    items = []
    try:
        import torch

        from nodecourse.config import available_devices
    except ImportError as exc:
        return [Item("devices", f"unknown ({exc})", False, True, "install torch (scripts/setup_env.sh)")]
    devices = available_devices()
    detail = ", ".join(devices)
    if torch.cuda.is_available():
        detail += f" (cuda: {torch.cuda.get_device_name(0)}, {torch.cuda.device_count()} device(s))"
    items.append(Item("devices", detail, True, True))
    from nodecourse.config import thread_choice

    try:
        choice = thread_choice().describe()
    except ValueError as exc:  # a bad NODECOURSE_THREADS: say so, with the fix
        return items + [Item("torch threads", f"{torch.get_num_threads()} (torch's default)", False, False, str(exc))]
    items.append(Item("torch threads", choice, True, False))
    return items


#: The lessons that load PhysioNet 2012 set A, and so run on the synthetic stand-in when it is not found
#: (lesson 5 trains on it; lesson 9 audits an ODE-RNN trained on it). ``tests/test_check_standin.py``
#: checks this against the lesson notebooks' code.
PHYSIONET_LESSONS = ("5", "9", "11")


def standin_note() -> str:
    """What runs on the synthetic stand-in when set A is not found: every lesson that loads it, by number."""
    *rest, last = PHYSIONET_LESSONS
    lessons = f"lessons {', '.join(rest)} and {last}" if rest else f"lesson {last}"
    return f"not found: {lessons} (and their ledger rows) use the synthetic stand-in"


def _data_item() -> Item:
    try:
        from nodecourse.data import physionet
    except ImportError:
        return Item("PhysioNet 2012", "loader not installed in this version", True, False)
    locate = getattr(physionet, "locate", None)
    if locate is None:
        return Item("PhysioNet 2012", "loader has no locate(); cannot tell", True, False)
    try:
        where = locate()
    except Exception as exc:  # a report must not crash on a broken data folder
        return Item(
            "PhysioNet 2012",
            f"error while looking: {type(exc).__name__}: {exc}",
            False,
            False,
            "check NODECOURSE_DATA or the data folder",
        )
    if where:
        directory = getattr(where, "directory", where)
        label = f"{getattr(where, 'set_name', '')} found at {directory}".strip()
        kind = getattr(where, "kind", None)
        return Item("PhysioNet 2012", label + (f" ({kind})" if kind else ""), True, False)
    return Item(
        "PhysioNet 2012",
        standin_note(),
        True,
        False,
        "set NODECOURSE_DATA to a folder with set-a/ (see the lesson) for the real data",
    )


def _course_item() -> Item:
    from nodecourse.course.paths import find_course_root

    root = find_course_root()
    if root is None:
        return Item(
            "course folder",
            "not found from here",
            True,
            False,
            "cd into the course folder to run `nodecourse lab` and the grader",
        )
    lessons = len(list((root / "notebooks").glob("*.ipynb")))
    exercises = len(list((root / "exercises").glob("*.ipynb")))
    return Item("course folder", f"{root} ({lessons} lessons, {exercises} exercises)", True, False)


def collect() -> list[Item]:
    """Gather the report's items (imports nothing heavy that the course does not need anyway)."""
    from nodecourse.config import mode_name

    items = [
        Item(
            "python",
            f"{platform.python_version()} ({sys.executable})",
            sys.version_info >= (3, 11),
            True,
            "use Python 3.11 or newer",
        ),
        Item("platform", platform.platform(), True, False),
    ]
    for dist, why in ESSENTIAL_PACKAGES.items():
        version = package_version(dist)
        items.append(
            Item(
                dist,
                version or "MISSING",
                version is not None,
                True,
                f"needed for {why}; run scripts/setup_env.sh (or pip install {dist})",
            )
        )
    if package_version("torch") is not None:
        items += _torch_items()
    jlw = package_version("jupyterlab_widgets")
    items.append(
        Item(
            "jupyterlab_widgets",
            jlw or "MISSING",
            jlw is not None,
            True,
            "widgets will not render in JupyterLab; pip install jupyterlab_widgets",
        )
    )
    managers = widget_manager_dirs()
    items.append(
        Item(
            "widget manager",
            str(managers[0]) if managers else "NOT FOUND",
            bool(managers),
            True,
            "JupyterLab cannot render widgets; reinstall jupyterlab_widgets in this environment",
        )
    )
    items.append(_course_item())
    items.append(_data_item())
    items.append(Item("mode", f"{mode_name()} (NODECOURSE_QUICK=1 selects quick mode)", True, False))
    return items


def format_report(items: list[Item]) -> str:
    """Aligned lines: status, name, value, and the fix for anything missing."""
    width = max(len(i.name) for i in items)
    lines = []
    for i in items:
        status = "ok  " if i.ok else ("MISS" if i.essential else "warn")
        lines.append(f"[{status}] {i.name.ljust(width)}  {i.value}")
        if not i.ok and i.fix:
            lines.append(f"       {''.ljust(width)}  -> {i.fix}")
    missing = [i.name for i in items if i.essential and not i.ok]
    lines.append("environment ready" if not missing else f"NOT READY: missing {', '.join(missing)}")
    return "\n".join(lines)


def main() -> int:
    """Print the report; 0 when every essential item is present, 1 otherwise."""
    items = collect()
    print(format_report(items))
    return 0 if all(i.ok for i in items if i.essential) else 1
