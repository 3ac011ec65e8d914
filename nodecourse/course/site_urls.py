"""The repository's address, the one setting of the site, and what is made from it: Binder links
(:func:`binder_url`), links into the repository's web view (:func:`source_url`) and the README's
Binder badge (:func:`binder_badge`, rewritten by ``nodecourse site --update-readme``). The address
is ``Repository`` in pyproject.toml's ``[project.urls]``, written there once.
"""

from __future__ import annotations

import tomllib
import urllib.parse
from pathlib import Path

START_NOTEBOOK = "notebooks/00_start_here.ipynb"
BINDER = "https://mybinder.org"
BADGE_PREFIX = f"[![Binder]({BINDER}/badge_logo.svg)]("


def repository_url(root: Path) -> str:
    """``Repository`` of ``[project.urls]`` in ``root``/pyproject.toml, without a trailing slash or ``.git``."""
    urls = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"].get("urls", {})
    url = urls.get("Repository")
    if not url:
        raise ValueError(
            f"{root / 'pyproject.toml'} has no Repository in [project.urls]: add "
            'Repository = "https://github.com/OWNER/NAME"'
        )
    return url.rstrip("/").removesuffix(".git")


def binder_url(repo_url: str, path: str | None = None, ref: str = "HEAD") -> str:
    """The mybinder.org address that builds ``repo_url`` at ``ref`` and opens ``path`` in JupyterLab.

    GitHub (``v2/gh/OWNER/NAME``) and GitLab (``v2/gl/...``) addresses get Binder's short forms;
    any other git address its generic one (``v2/git/<quoted URL>``)."""
    parts = urllib.parse.urlsplit(repo_url)
    slug = parts.path.strip("/")
    if parts.netloc == "github.com" and slug.count("/") == 1:
        base = f"{BINDER}/v2/gh/{slug}/{ref}"
    elif parts.netloc == "gitlab.com" and slug:
        base = f"{BINDER}/v2/gl/{urllib.parse.quote(slug, safe='')}/{ref}"
    else:
        base = f"{BINDER}/v2/git/{urllib.parse.quote(repo_url, safe='')}/{ref}"
    return base if path is None else f"{base}?labpath={urllib.parse.quote(path, safe='')}"


def source_url(repo_url: str, path: str) -> str:
    """The address of ``path`` in the repository's web view (GitHub's and GitLab's spelling)."""
    middle = "/-/blob/HEAD/" if urllib.parse.urlsplit(repo_url).netloc == "gitlab.com" else "/blob/HEAD/"
    return repo_url + middle + path


def binder_badge(root: Path) -> str:
    """The README's Binder badge line: lesson 0 of the repository named in pyproject.toml."""
    return f"{BADGE_PREFIX}{binder_url(repository_url(root), START_NOTEBOOK)})"


def readme_badge(root: Path) -> str | None:
    """The Binder badge line the README has now (None when it has none)."""
    for line in (root / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith(BADGE_PREFIX):
            return line
    return None


def update_readme_badge(root: Path) -> bool:
    """Write :func:`binder_badge` over the README's badge line; True when the README changed."""
    readme = root / "README.md"
    text = readme.read_text(encoding="utf-8")
    old = readme_badge(root)
    if old is None:
        raise ValueError(f"{readme} has no line starting with {BADGE_PREFIX!r} to update")
    new = binder_badge(root)
    if old == new:
        return False
    readme.write_text(text.replace(old, new, 1), encoding="utf-8")
    return True
