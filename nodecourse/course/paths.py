"""Where the course lives on disk: the folder with notebooks/, exercises/ and solutions/."""

from __future__ import annotations

import re
from pathlib import Path


def find_course_root(start: Path | str | None = None) -> Path | None:
    """The course's root directory: the first of ``start`` (default cwd) and its parents,
    then the directory above the imported package, that holds ``notebooks/`` and the
    ``nodecourse`` package or a pyproject naming it. None when there is none."""
    candidates: list[Path] = []
    here = Path(start if start is not None else Path.cwd()).resolve()
    candidates += [here, *here.parents]
    candidates.append(Path(__file__).resolve().parents[2])
    for root in candidates:
        if not (root / "notebooks").is_dir():
            continue
        if (root / "nodecourse" / "__init__.py").is_file():
            return root
        pyproject = root / "pyproject.toml"
        if pyproject.is_file() and re.search(r'^name\s*=\s*"nodecourse"', pyproject.read_text(encoding="utf-8"), re.M):
            return root
    return None
