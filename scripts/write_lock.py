"""Write constraints.txt, the course's lock: the exact version of every dependency.

Run as ``make lock`` (``.venv/bin/python scripts/write_lock.py``). The lock is
taken from the environment this interpreter runs in (the course's ``.venv``),
not from a fresh resolve: that environment is the one that executed the
committed notebooks and passed the tests, so a learner who installs from the
lock gets what was checked. A fresh resolve would pick whatever is newest on
the day, which nothing has run yet. To move a version: install it into
``.venv``, re-execute the notebooks (``make notebooks``) and run the tests,
then ``make lock``.

What is written: every distribution that ``pyproject.toml`` requires (the
course's dependencies and every extra), and everything those require in
turn, as ``name==version``; pip reads the file with ``-c``, so a pin is used
only when something asks for that package. Left out on purpose:

* torch's build tag (``2.13.0+cpu`` is written ``torch==2.13.0``): which build
  a machine gets (CPU, CUDA, macOS) is chosen by ``scripts/setup_env.sh``;
* the packages only a CUDA build of torch brings (``nvidia-*``, ``triton``),
  whose versions that build pins itself;
* nodecourse itself.

``--check`` writes nothing and exits 1 when constraints.txt differs from what
would be written (the environment and the lock have drifted apart).
"""

from __future__ import annotations

import argparse
import platform
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "constraints.txt"
PROJECT = "nodecourse"
CUDA_ONLY = re.compile(r"^(nvidia-.*|triton)$")
"""Distributions that only a CUDA build of torch pulls in; that build pins them itself."""
PYTHON_MINORS = range(8, 20)


def project_requirements(pyproject: Path = REPO / "pyproject.toml") -> list[Requirement]:
    """The course's dependencies and those of every extra, as written in ``pyproject``."""
    project = tomllib.loads(pyproject.read_text())["project"]
    written = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        written.extend(extra)
    return [Requirement(r) for r in written]


def _applies(req: Requirement, extras: frozenset[str]) -> bool:
    """Whether ``req`` (a line of some distribution's metadata) holds here, for the extras asked of it."""
    if req.marker is None:
        return True
    return any(req.marker.evaluate({"extra": e}) for e in (extras or {""}))


def installed_closure(roots: list[Requirement]) -> dict[str, metadata.Distribution]:
    """Every installed distribution ``roots`` need, directly or not, by canonical name.

    Raises SystemExit naming the package when one is missing or its installed
    version does not satisfy what asks for it: the environment does not match
    ``pyproject.toml``, and a lock taken from it would be wrong.
    """
    found: dict[str, metadata.Distribution] = {}
    extras_seen: dict[str, frozenset[str]] = {}
    todo = [(r, "pyproject.toml") for r in roots if _applies(r, frozenset())]
    while todo:
        req, asked_by = todo.pop()
        name = canonicalize_name(req.name)
        try:
            dist = found.get(name) or metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            raise SystemExit(
                f"[lock] {asked_by} requires {req}, which is not installed in {sys.prefix}; "
                "run `make test` (installs the course and its test extra) first"
            ) from None
        if not req.specifier.contains(dist.version, prereleases=True):
            raise SystemExit(
                f"[lock] {asked_by} requires {req}, but {dist.version} is installed; "
                "install a matching version into the environment, then lock again"
            )
        extras = extras_seen.get(name, frozenset()) | frozenset(req.extras)
        if name in found and extras == extras_seen.get(name):
            continue
        found[name], extras_seen[name] = dist, extras
        todo.extend(
            (Requirement(line), dist.metadata["Name"])
            for line in dist.requires or []
            if _applies(Requirement(line), extras)
        )
    found.pop(PROJECT, None)
    return found


def oldest_python(dists: list[metadata.Distribution]) -> str:
    """The oldest Python 3 version that every one of ``dists`` accepts ("3.11.5").

    Tried in order: each ``3.N`` and every lower bound the packages write
    (soupsieve's ``>=3.11.5`` makes 3.11.0 too old and 3.11.5 enough).
    """
    specs = [SpecifierSet(d.metadata["Requires-Python"] or "") for d in dists]
    bounds = {Version(c.version) for s in specs for c in s if c.operator in (">=", "~=")}
    for candidate in sorted(bounds | {Version(f"3.{minor}") for minor in PYTHON_MINORS}):
        if candidate.major == 3 and all(s.contains(candidate, prereleases=True) for s in specs):
            return str(candidate)
    raise SystemExit("[lock] no Python 3 version satisfies every locked package's Requires-Python")


def lock_text(closure: dict[str, metadata.Distribution]) -> str:
    """The lock file's text: a header, then one ``name==version`` per line in name order."""
    kept = {n: d for n, d in closure.items() if not CUDA_ONLY.match(n)}
    builds = sorted(f"{n} {d.version}" for n, d in kept.items() if Version(d.version).local)
    header = [
        "# The course's lock: the exact version of every dependency (pyproject.toml's, every extra's,",
        "# and theirs), as installed in the environment that executed the committed notebooks.",
        "# Written by `make lock` (scripts/write_lock.py); do not edit by hand: install a new version",
        "# into .venv, run `make notebooks` and `make test`, then `make lock`.",
        "# Read with -c by scripts/setup_env.sh (`make course`, `make test`) and binder/requirements.txt.",
        "# torch is written without its build tag: setup_env.sh installs the CPU or CUDA build;",
        "# packages only a CUDA build brings (nvidia-*, triton) are never pinned here.",
        f"# taken on: Python {platform.python_version()}, {sys.platform} {platform.machine()}"
        + (f"; installed builds: {', '.join(builds)}" if builds else ""),
        f"# requires-python: >={oldest_python(list(kept.values()))}",
    ]
    pins = [f"{n}=={Version(d.version).public}" for n, d in sorted(kept.items())]
    return "\n".join(header + pins) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if constraints.txt differs from this environment"
    )
    args = parser.parse_args(argv)
    closure = installed_closure(project_requirements())
    text = lock_text(closure)
    strays = sorted(
        {canonicalize_name(d.metadata["Name"]) for d in metadata.distributions()} - set(closure) - {PROJECT, "pip"}
    )
    if args.check:
        if LOCK.read_text() == text:
            print(f"[lock] {LOCK.name} matches this environment ({len(closure)} packages)")
            return 0
        print(
            f"[lock] {LOCK.name} differs from this environment: run `make lock` "
            "(or `make setup` to bring the environment back to the lock)",
            file=sys.stderr,
        )
        return 1
    LOCK.write_text(text)
    pins = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    print(f"[lock] wrote {LOCK.name}: {pins} pins")
    if strays:
        print(f"[lock] installed but required by nothing in pyproject.toml, so not locked: {', '.join(strays)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
