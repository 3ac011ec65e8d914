"""Packaging facts written once: the lock, what each install line installs, the versions, the licence.

constraints.txt is the lock (scripts/write_lock.py writes it from .venv): every
dependency at the version that executed the committed notebooks. These tests
check that it is complete and current, that `make course`, `make test` and
Binder install from it, and that `make course` brings no test-only tool.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

import nodecourse
from conftest import subprocess_timeout
from notebook_fixtures import REPO

LOCK = REPO / "constraints.txt"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
CUDA_ONLY = re.compile(r"^(nvidia-.*|triton)$")


def _write_lock_module():
    spec = importlib.util.spec_from_file_location("write_lock", REPO / "scripts" / "write_lock.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def locked_versions() -> dict[str, str]:
    """{canonical name: version} from the lock's ``name==version`` lines."""
    pins = {}
    for line in LOCK.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep and version.strip(), f"constraints.txt line {line!r} is not name==version"
            pins[canonicalize_name(name)] = version.strip()
    return pins


def _lock_header(key: str) -> str:
    found = re.findall(rf"^# {key}: (.+)$", LOCK.read_text(), re.M)
    assert len(found) == 1, f"constraints.txt must carry one '# {key}:' line"
    return found[0]


def _requirements(*groups: list[str]) -> list[Requirement]:
    return [Requirement(r) for group in groups for r in group]


def packages_only_tests_need() -> set[str]:
    """The canonical names in pyproject's ``test`` extra."""
    return {canonicalize_name(r.name) for r in _requirements(PROJECT["optional-dependencies"]["test"])}


def _torch_version_from_lock() -> str:
    pins = re.findall(r"^torch==([0-9.]+)\s*$", LOCK.read_text(), re.M)
    assert len(pins) == 1, "constraints.txt must pin torch exactly once, with no build tag"
    return pins[0]


# ---------------------------------------------------------------- the lock


def test_lock_pins_every_dependency_pyproject_names():
    pins = locked_versions()
    for req in _requirements(PROJECT["dependencies"], *PROJECT["optional-dependencies"].values()):
        name = canonicalize_name(req.name)
        assert name in pins, f"pyproject.toml requires {req} but the lock does not pin it: run `make lock`"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"the lock pins {name}=={pins[name]}, outside pyproject.toml's {req}"
        )


def test_lock_is_closed_under_the_requirements_of_what_it_pins():
    """Every requirement of every locked package that applies here (and of the extras asked of it) is locked."""
    pins = locked_versions()
    asked: dict[str, set[str]] = {}  # canonical name -> the extras something asks of it

    def ask(req: Requirement) -> None:
        asked.setdefault(canonicalize_name(req.name), set()).update(req.extras)

    for req in _requirements(PROJECT["dependencies"], *PROJECT["optional-dependencies"].values()):
        ask(req)
    for name in pins:
        for req in map(Requirement, metadata.distribution(name).requires or []):
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                ask(req)
    for name, extras in list(asked.items()):  # e.g. jsonschema[format-nongpl] brings fqdn, webcolors, ...
        for req in map(Requirement, metadata.distribution(name).requires or [] if extras else []):
            if req.marker is not None and any(req.marker.evaluate({"extra": e}) for e in extras):
                ask(req)
    missing = sorted(n for n in asked if n not in pins and n != "nodecourse" and not CUDA_ONLY.match(n))
    assert not missing, f"installed packages need {missing}, which the lock does not pin: run `make lock`"


def test_lock_matches_the_installed_environment():
    """The environment the tests run in is the lock's (torch's build tag aside)."""
    drift = {}
    for name, pinned in locked_versions().items():
        installed = Version(metadata.version(name)).public
        if installed != pinned:
            drift[name] = f"installed {installed}, locked {pinned}"
    assert not drift, (
        f"this environment differs from constraints.txt: {drift}; `make setup` installs the "
        "lock, `make lock` records the environment"
    )


def test_lock_writer_reproduces_the_committedlocked_versions():
    out = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "write_lock.py"), "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=subprocess_timeout(),
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_lock_writer_refuses_an_environment_that_lacks_a_dependency(tmp_path):
    write_lock = _write_lock_module()
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\ndependencies = ["numpy>=1", "no-such-package-here>=1"]\n')
    with pytest.raises(SystemExit, match="requires no-such-package-here>=1, which is not installed"):
        write_lock.installed_closure(write_lock.project_requirements(pyproject))
    pyproject.write_text('[project]\nname = "x"\ndependencies = ["numpy<1"]\n')
    with pytest.raises(SystemExit, match=r"requires numpy<1, but .* is installed"):
        write_lock.installed_closure(write_lock.project_requirements(pyproject))


def test_lock_leaves_the_torch_build_to_the_setup_script():
    """No build tag (+cpu) and nothing only a CUDA build brings: the lock installs on a GPU or a Mac too."""
    text = LOCK.read_text()
    assert "+" not in "".join(l for l in text.splitlines() if not l.startswith("#")), (
        "a pin carries a build tag (+cpu, +cu121): write the public version"
    )
    assert not [n for n in locked_versions() if CUDA_ONLY.match(n)], "the lock pins a CUDA-only package"
    _torch_version_from_lock()


def test_lock_names_the_python_it_needs_and_binder_runs_it():
    needed = Version(_lock_header("requires-python").removeprefix(">="))
    taken_on = Version(re.match(r"Python ([0-9.]+)", _lock_header("taken on")).group(1))
    assert taken_on >= needed
    binder = re.fullmatch(r"python-(\d+)\.(\d+)", (REPO / "binder" / "runtime.txt").read_text().strip())
    assert binder, "binder/runtime.txt must read python-X.Y"
    # Binder takes the newest patch release of X.Y: the same minor version the lock was taken on.
    assert (int(binder[1]), int(binder[2])) == (taken_on.major, taken_on.minor)
    for dist in locked_versions():
        spec = metadata.distribution(dist).metadata["Requires-Python"]
        if spec:
            assert SpecifierSet(spec).contains(needed, prereleases=True), (
                f"{dist} needs Python {spec}, but the lock says {needed} is enough"
            )


# ---------------------------------------------------------------- what each install line installs


def test_course_dependencies_bring_no_test_only_tool():
    write_lock = _write_lock_module()
    course = write_lock.installed_closure(_requirements(PROJECT["dependencies"]))
    leaked = packages_only_tests_need() & set(course)
    assert not leaked, f"`make course` would install test-only tools {sorted(leaked)} (through its dependencies)"


def _imported_top_names(source: str) -> set[str]:
    # IPython magics and shell lines are not Python.
    code = "\n".join("" if l.lstrip().startswith(("%", "!")) else l for l in source.splitlines())
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _lesson_and_library_imports() -> dict[str, str]:
    """{top-level module name: first file that imports it} over the library and every notebook."""
    found: dict[str, str] = {}
    for path in sorted((REPO / "nodecourse").rglob("*.py")):
        for name in _imported_top_names(path.read_text()):
            found.setdefault(name, str(path.relative_to(REPO)))
    for folder in ("notebooks", "exercises", "solutions"):
        for path in sorted((REPO / folder).glob("*.ipynb")):
            cells = json.loads(path.read_text())["cells"]
            for cell in cells:
                if cell["cell_type"] == "code":
                    for name in _imported_top_names("".join(cell["source"])):
                        found.setdefault(name, str(path.relative_to(REPO)))
    return found


def test_importing_nbformat_builds_no_parser_for_iris():
    """jsonschema (nbformat's validator) builds rfc3987-syntax's Lark parser whenever it is imported,
    if that package is installed: about 1 s of CPU in each process that reads a notebook. The lock
    keeps jsonschema below the releases that bring it (pyproject.toml says why)."""
    code = "import sys, nbformat; print(sorted(m for m in ('rfc3987_syntax', 'lark') if m in sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=subprocess_timeout()
    ).stdout
    assert loaded.strip() == "[]", f"importing nbformat loaded {loaded.strip()}: see jsonschema in pyproject.toml"


def test_lessons_and_library_import_only_course_dependencies():
    """What the library or a lesson imports is installed by `make course`, not only by the test extra."""
    write_lock = _write_lock_module()
    course = set(write_lock.installed_closure(_requirements(PROJECT["dependencies"])))
    providers = metadata.packages_distributions()
    imports = _lesson_and_library_imports()
    assert {"torch", "torchdiffeq", "torchdeq", "ipywidgets"} <= set(imports), "the import scan finds nothing"
    # An optional extra's package, imported in the one module that uses it (inside a function, or in a
    # module only its command imports, with an ImportError that names the extra): {module: (extra, file)}.
    optional = {
        "ray": ("cluster", "nodecourse/claims/_executors.py"),
        "nbgrader": ("class", "nodecourse/course/nbgrader_bridge.py"),
    }
    outside = {}
    for module, where in imports.items():
        if module in sys.stdlib_module_names or module == "nodecourse" or module not in providers:
            continue  # the standard library, the course itself, or nothing installed by that name
        if module in optional:
            extra, allowed = optional[module]
            assert where == allowed, f"{module} (the {extra!r} extra) is imported in {where}; only {allowed} may"
            assert any(r.startswith(module) for r in PROJECT["optional-dependencies"][extra]), (module, extra)
            continue
        dists = {canonicalize_name(d) for d in providers[module]}
        if not dists & course:
            outside[module] = f"{where} (provided by {sorted(dists)})"
    assert not outside, f"imported but not installed by `make course` (pyproject dependencies): {outside}"


def test_every_test_dependency_is_used():
    used_by = {
        "pytest-timeout": "timeout",
        "pytest-xdist": "pytest -n $(TEST_WORKERS)",
        "torchode": "torchode",
        "playwright": "playwright",
        "ruff": "bin/ruff check",
        "mypy": "bin/mypy",
        "torchcde": "import torchcde",
        "torchsde": "import torchsde",
        "ray": "import ray",
        "nbgrader": "from nbgrader.api import Gradebook",
        # the hub a class runs on (the `class` extra); nbgrader's exchange and formgrader run inside it
        "jupyterhub": "jupyterhub",
    }
    sources = "\n".join(
        p.read_text()
        for p in [*REPO.glob("tests/*.py"), *REPO.glob("benchmarks/*.py"), REPO / "pyproject.toml", REPO / "Makefile"]
    )
    for req in PROJECT["optional-dependencies"]["test"]:
        name = re.split(r"[<>=~ ]", req)[0]
        assert name in used_by, f"test dependency {name} is not known to this test; add where it is used"
        assert used_by[name] in sources, f"test dependency {name} is used nowhere"


def test_the_learners_self_check_reads_the_config_without_a_warning():
    """The learner's guide's self-check (`pytest --nbval exercises/...`) in the environment `make course` builds:
    pyproject's [tool.pytest.ini_options] names no option that only a test-extra plugin knows
    (pytest-timeout's ``timeout`` was one: "Unknown config option: timeout"). The test extra's plugins
    are switched off here (``-p no:NAME``), so this process sees the course's plugins only."""
    write_lock = _write_lock_module()
    course = set(write_lock.installed_closure(_requirements(PROJECT["dependencies"])))
    test_only = sorted(
        ep.name for ep in metadata.entry_points(group="pytest11") if canonicalize_name(ep.dist.name) not in course
    )
    assert "timeout" in test_only, test_only  # pytest-timeout is the test extra's, not the course's
    blocked = [arg for name in test_only for arg in ("-p", f"no:{name}")]
    guide = (REPO / "docs" / "learner.md").read_text(encoding="utf-8")
    command = re.search(r"`pytest --nbval (exercises/\S+\.ipynb)`", guide)
    assert command, "docs/learner.md no longer gives the self-check as `pytest --nbval exercises/....ipynb`"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", command[1], "--collect-only", "-q", "-p", "no:cacheprovider"]
        + blocked,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=subprocess_timeout(),
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "tests collected" in out, out[-2000:]
    assert "Unknown config option" not in out and "PytestConfigWarning" not in out, out[-2000:]


def _fake_venv(tmp_path):
    """A .venv whose python and nodecourse log their arguments and succeed (torch "installed")."""
    venv, log = tmp_path / "venv", tmp_path / "calls.log"
    (venv / "bin").mkdir(parents=True)
    for tool in ("python", "nodecourse", "ruff", "mypy"):
        exe = venv / "bin" / tool
        exe.write_text(f'#!/usr/bin/env bash\necho "{tool} $*" >> "{log}"\n')
        exe.chmod(0o755)
    return venv, log


@pytest.mark.parametrize(
    "target, extra", [("course", ""), ("test", "[test]"), ("test-fast", "[test]"), ("lint", "[test]")]
)
def test_make_targets_install_from_the_lock(tmp_path, target, extra):
    """`make course` installs `.` (no test extra) with the lock; the test targets install `.[test]`."""
    venv, log = _fake_venv(tmp_path)
    out = subprocess.run(
        ["make", "-s", target, f"VENV={venv}"], cwd=REPO, capture_output=True, text=True, timeout=subprocess_timeout()
    )
    assert out.returncode == 0, out.stdout + out.stderr
    installs = [l for l in log.read_text().splitlines() if "-m pip install" in l]
    assert len(installs) == 1, installs
    assert installs[0].endswith(f" -c constraints.txt -e .{extra}"), installs[0]
    assert (venv / f".nodecourse-installed{'-test' if extra else ''}").is_file(), "no stamp after the install"


def test_setup_script_refuses_a_python_older_than_the_lock_needs(tmp_path):
    venv, log = _fake_venv(tmp_path)
    # A python that answers the version check "too old" (exit 1) and everything else with success.
    (venv / "bin" / "python").write_text(
        f'#!/usr/bin/env bash\necho "python $*" >> "{log}"\n'
        'case "$*" in *version_info*) exit 1;; *python_version*) echo 3.9.0;; esac\n'
    )
    out = subprocess.run(
        ["bash", "scripts/setup_env.sh"],
        cwd=REPO,
        env={"VENV": str(venv), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1
    assert "runs Python 3.9.0, older than the" in out.stderr and _lock_header("requires-python")[2:] in out.stderr
    assert "-m pip install" not in log.read_text()


def test_setup_script_refuses_an_unknown_extra():
    out = subprocess.run(["bash", "scripts/setup_env.sh", "docs"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "unknown extra 'docs'" in out.stderr


def test_binder_installs_the_course_from_thelocked_versions():
    lines = [
        l.strip()
        for l in (REPO / "binder" / "requirements.txt").read_text().splitlines()
        if l.strip() and not l.startswith("#")
    ]
    constraints = [l.split(None, 1)[1] for l in lines if l.startswith("-c ")]
    # pip reads a -c path inside a requirements file relative to that file.
    assert [(REPO / "binder" / c).resolve() for c in constraints] == [LOCK], constraints
    requirements = [l for l in lines if not l.startswith("-")]
    assert sorted(requirements) == [".", "torch"], (
        f"binder/requirements.txt installs {requirements}: it should install torch and the course "
        "(`.`, no test extra), every version from the lock"
    )


# ---------------------------------------------------------------- versions and licence


def test_torch_version_is_written_only_in_thelocked_versions():
    version = _torch_version_from_lock()
    readers = {
        "scripts/setup_env.sh": (REPO / "scripts" / "setup_env.sh").read_text(),
        "binder/requirements.txt": (REPO / "binder" / "requirements.txt").read_text(),
    }
    for name, text in readers.items():
        assert version not in text, f"{name} repeats the torch version; read constraints.txt instead"
        assert "constraints.txt" in text, f"{name} does not read constraints.txt"


def test_setup_script_reads_the_version_it_installs():
    # The same sed expression the script runs, on the real file.
    script = (REPO / "scripts" / "setup_env.sh").read_text().splitlines()
    lines = [l for l in script if l.startswith(("LOCK=", "TORCH_VERSION="))]
    out = subprocess.run(
        ["bash", "-c", "\n".join(lines) + '\necho "$TORCH_VERSION"'],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=subprocess_timeout(),
    ).stdout.strip()
    assert out == _torch_version_from_lock()


def test_version_is_defined_once():
    assert "version" not in PROJECT and "version" in PROJECT["dynamic"]
    assert metadata.version("nodecourse") == nodecourse.__version__


def test_licence_is_an_spdx_expression_with_its_file():
    assert PROJECT["license"] == "MIT", "license must be an SPDX expression string (PEP 639)"
    assert PROJECT["license-files"] == ["LICENSE"]
    assert (REPO / "LICENSE").read_text().startswith("MIT License")
    setuptools = [Requirement(r) for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    # setuptools reads the SPDX form from 77 on; an older one rejects a string license.
    assert len(setuptools) == 1 and not setuptools[0].specifier.contains("76.9")


def test_built_metadata_carries_the_licence_expression(tmp_path):
    """setuptools (the one installed here) turns pyproject.toml into the metadata a wheel ships.

    Built from a copy of the files the metadata reads, so nothing is written into the checkout.
    """
    project = tmp_path / "project"
    (project / "nodecourse").mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "LICENSE", "nodecourse/__init__.py"):
        (project / name).write_bytes((REPO / name).read_bytes())
    code = "import sys, setuptools.build_meta as b; print(b.prepare_metadata_for_build_wheel(sys.argv[1]))"
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=subprocess_timeout(),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    meta = (tmp_path / out.stdout.strip().splitlines()[-1] / "METADATA").read_text()
    assert "License-Expression: MIT" in meta and "License-File: LICENSE" in meta
    assert not re.search(r"^License: ", meta, re.M), "the old free-text License field is still written"
    extras = re.findall(r'^Requires-Dist: (\S+?)[<>=~;].*extra == "test"', meta, re.M)
    assert {canonicalize_name(e) for e in extras} == packages_only_tests_need()
