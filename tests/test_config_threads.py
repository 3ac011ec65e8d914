"""The course's CPU thread choice (nodecourse.config.thread_choice), read from fake cgroup trees.

Order: NODECOURSE_THREADS, then OMP_NUM_THREADS, then one thread (the course's small
models) capped by the CPUs the process may use: its affinity and the container's
cgroup quota (v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from nodecourse import config
from notebook_fixtures import REPO


def _affinity() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _v2_tree(tmp_path, *, root_max: str | None, leaf_max: str | None, leaf="/user.slice/session-1"):
    """A cgroup v2 mount with this process in ``leaf`` and limits at the root and/or the leaf."""
    root = tmp_path / "cgroup"
    leaf_dir = root.joinpath(*leaf.strip("/").split("/"))
    leaf_dir.mkdir(parents=True)
    if root_max is not None:
        (root / "cpu.max").write_text(root_max + "\n")
    if leaf_max is not None:
        (leaf_dir / "cpu.max").write_text(leaf_max + "\n")
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text(f"0::{leaf}\n")
    return {"cgroup_root": root, "proc_self_cgroup": proc}


def _v1_tree(tmp_path, *, quota: int, period: int, controller="cpu,cpuacct", rel="/docker/abc"):
    """A cgroup v1 mount as a container sees it: its own cgroup at the controller's root,
    while /proc/self/cgroup names the host-side path (which does not exist inside)."""
    root = tmp_path / "cgroup"
    base = root / controller
    base.mkdir(parents=True)
    (base / "cpu.cfs_quota_us").write_text(f"{quota}\n")
    (base / "cpu.cfs_period_us").write_text(f"{period}\n")
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text(f"12:memory:{rel}\n4:{controller}:{rel}\n0::/\n")
    return {"cgroup_root": root, "proc_self_cgroup": proc}


def test_cgroup_v2_quota_is_read_and_the_smallest_limit_up_the_tree_wins(tmp_path):
    tree = _v2_tree(tmp_path, root_max="max 100000", leaf_max="150000 100000")
    assert config.cgroup_cpu_quota(**tree)[0] == pytest.approx(1.5)
    tree = _v2_tree(tmp_path / "b", root_max="50000 100000", leaf_max="300000 100000")
    cpus, how = config.cgroup_cpu_quota(**tree)
    assert cpus == pytest.approx(0.5) and "cgroup v2" in how
    unlimited = _v2_tree(tmp_path / "c", root_max="max 100000", leaf_max=None)
    assert config.cgroup_cpu_quota(**unlimited)[0] is None


def test_cgroup_v1_quota_is_read(tmp_path):
    cpus, how = config.cgroup_cpu_quota(**_v1_tree(tmp_path, quota=250000, period=100000))
    assert cpus == pytest.approx(2.5) and "cgroup v1" in how
    no_limit = _v1_tree(tmp_path / "b", quota=-1, period=100000, controller="cpu")
    assert config.cgroup_cpu_quota(**no_limit)[0] is None


def test_usable_cpus_is_the_quota_rounded_up_capped_by_affinity(tmp_path):
    if _affinity() < 2:
        pytest.skip("needs an affinity of at least two CPUs to see the quota cap it")
    one = _v2_tree(tmp_path, root_max=None, leaf_max="100000 100000")
    assert config.usable_cpus(**one)[0] == 1
    one_and_a_half = _v1_tree(tmp_path / "b", quota=150000, period=100000)
    assert config.usable_cpus(**one_and_a_half)[0] == 2
    huge = _v2_tree(tmp_path / "c", root_max="6400000 100000", leaf_max=None)  # 64 CPUs of quota
    assert config.usable_cpus(**huge)[0] == _affinity()


def test_thread_choice_order_explicit_then_omp_then_course_default(tmp_path):
    tree = _v2_tree(tmp_path, root_max="200000 100000", leaf_max=None)  # 2 CPUs of quota
    usable = min(2, _affinity())
    default = config.thread_choice(environ={}, **tree)
    assert default.threads == config.SMALL_MODEL_THREADS == 1
    assert default.source == "course default" and default.cpus == usable
    assert "cgroup v2" in default.describe() and "NODECOURSE_THREADS=auto" in default.describe()

    assert config.course_threads(environ={"OMP_NUM_THREADS": "3"}, **tree) == 3
    assert config.course_threads(environ={"OMP_NUM_THREADS": "4,2"}, **tree) == 4
    both = {"OMP_NUM_THREADS": "3", "NODECOURSE_THREADS": "2"}
    assert config.thread_choice(environ=both, **tree).source == "NODECOURSE_THREADS"
    assert config.course_threads(environ=both, **tree) == 2
    # auto: every CPU the quota and affinity allow, not the cores the machine shows
    assert config.course_threads(environ={"NODECOURSE_THREADS": "auto"}, **tree) == usable
    with pytest.warns(UserWarning, match="OMP_NUM_THREADS='lots'"):
        assert config.course_threads(environ={"OMP_NUM_THREADS": "lots"}, **tree) == 1


@pytest.mark.parametrize("bad", ["0", "-2", "two", "2,2"])
def test_a_bad_explicit_setting_names_the_variable_the_value_and_the_fix(tmp_path, bad):
    tree = _v2_tree(tmp_path, root_max=None, leaf_max=None)
    with pytest.raises(ValueError, match=rf"NODECOURSE_THREADS='{bad}'.*positive integer.*auto"):
        config.thread_choice(environ={"NODECOURSE_THREADS": bad}, **tree)


@pytest.mark.slow
def test_use_course_threads_sets_torch_and_the_environment_of_child_processes():
    """In a fresh interpreter (torch's thread pool is per process): torch starts with its
    default, use_course_threads() sets the course's count and exports OMP_NUM_THREADS."""
    code = (
        "import os, torch\n"
        "from nodecourse.config import use_course_threads\n"
        "n = use_course_threads()\n"
        "print(n, torch.get_num_threads(), os.environ['OMP_NUM_THREADS'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "NODECOURSE_THREADS")}
    env["PYTHONPATH"] = str(REPO)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    assert out == ["1", "1", "1"], out
    env["NODECOURSE_THREADS"] = "2"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    assert out == ["2", "2", "2"], out


def test_nodecourse_check_shows_the_choice():
    from nodecourse.course import envcheck

    items = {i.name: i for i in envcheck.collect()}
    assert "torch threads" in items
    assert str(config.course_threads()) in items["torch threads"].value
    assert "usable CPUs" in items["torch threads"].value


def test_every_lesson_and_exercise_applies_the_course_threads_in_its_first_code_cell():
    import nbformat

    notebooks = (
        sorted((REPO / "notebooks").glob("*.ipynb"))
        + sorted((REPO / "solutions").glob("*.ipynb"))
        + sorted((REPO / "exercises").glob("*.ipynb"))
    )
    missing = []
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "code")
        if "use_course_threads()" not in first.source or "set_num_threads" in first.source:
            missing.append(str(path.relative_to(REPO)))
    assert not missing, f"first code cell does not call use_course_threads() (or pins threads itself): {missing}"


@pytest.mark.slow
def test_the_nodecourse_command_applies_the_course_threads():
    """`nodecourse <command>` runs its work (claims, physionet, grading's kernels) with the course's
    count, not torch's default (the number of cores the machine shows)."""
    code = (
        "import os, sys, torch\n"
        "from nodecourse.course.cli import main\n"
        "default = torch.get_num_threads()\n"
        "main(['build', '--check', '--solutions', sys.argv[1], '--exercises', sys.argv[2]])\n"
        "print('threads', default, torch.get_num_threads(), os.environ.get('OMP_NUM_THREADS'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "NODECOURSE_THREADS")}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run(
        [sys.executable, "-c", code, str(REPO / "solutions"), str(REPO / "exercises")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("threads ")]
    assert line, proc.stdout + proc.stderr
    _, default, applied, omp = line[0].split()
    assert (applied, omp) == ("1", "1"), f"torch default {default}, after the CLI {applied}, OMP {omp}"
