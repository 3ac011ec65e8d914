"""Where PhysioNet 2012 comes from: a local copy, a verified download, or nothing.

Order (first that has the set wins):

1. an explicit ``path`` argument;
2. the environment variable ``NODECOURSE_DATA``;
3. ``../shared/physionet2012`` beside the project's checkout;
4. a download from PhysioNet when ``download=True`` and a network exists;
   every file fetched is checked against a sha256 sum (ours for set A, the
   ``SHA256SUMS.txt`` PhysioNet publishes beside the files for the rest) and
   a file with no sum, a wrong sum or an interrupted transfer is discarded
   with a :class:`DownloadError`;
5. otherwise nothing: the caller falls back to the synthetic generator, loudly.

Verified and unverified downloads. Only a sum pinned here (:data:`SHA256`, set
A's) verifies a file: ``SHA256SUMS.txt`` comes from the host that serves the
files, so matching it shows the transfer arrived whole, not that the file is
the one the course was built on. A downloaded set any of whose files lacks a
pinned sum (set B today), or no longer matches it, is reported as an
UNVERIFIED download: :attr:`Source.unverified` says why for each file,
:attr:`Source.shown` (and so the load report) says so, and an
:class:`UnverifiedDownloadWarning` gives the files' sums to compare with a copy
one trusts. Pinning set B's sums in :data:`SHA256` makes it verified.

Why the standard library and not pooch. The download is two files from one
URL, each written through a ``.part`` file, checked against its sum and
discarded on any doubt (:func:`fetch`). Pooch (with ``requests``) does the
same, but reports the three outcomes the loader must tell apart as
exceptions of other libraries: no network (``requests.ConnectionError``: fall
back to the synthetic set), a broken transfer (``ChunkedEncodingError`` and
others: :class:`DownloadError`) and a wrong sum (``ValueError``), which would
have to be sorted back into these; and it would be one more package in every
learner's install for a path the course seldom takes (the set is usually on
disk). Move to pooch when there are mirrors, retries or many files to fetch.

A directory "has" a set when it holds ``Outcomes-a.txt`` and either
``set-a.tar.gz`` or an unpacked ``set-a/`` folder (likewise for set-b).

What is read, and what is refused (only regular files inside the data folder, within size
limits; an archive's members read in memory, never unpacked) is the business of
:mod:`nodecourse.data.physionet._safe_read`, which reads what this module finds.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import tarfile
import urllib.request
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path

from nodecourse.data.physionet._records import DownloadError

__all__ = ["DATA_ENV", "SHARED_DIR", "Source", "UnverifiedDownloadWarning"]

DATA_ENV = "NODECOURSE_DATA"
CACHE_ENV = "NODECOURSE_CACHE"
SETS = ("set-a", "set-b")
URL = "https://physionet.org/files/challenge-2012/1.0.0/"

SHA256 = {
    "set-a.tar.gz": "2048357345b41fd73c63f435b0341f1475bccd22836541474fc5d72319a1e99e",
    "Outcomes-a.txt": "2613ea60ccda29f87571a7d6b09ad130858a8ccd66325bd073365925026883c2",
}
"""Sums we pin ourselves (set A, release 1.0.0): the only ones that verify a download. The others
come from PhysioNet's list, served by the same host, and leave the download unverified."""
SUMS_FILE = "SHA256SUMS.txt"

REPO_ROOT = Path(__file__).resolve().parents[3]
SHARED_DIR = REPO_ROOT.parent / "shared" / "physionet2012"


def cache_dir() -> Path:
    """``$NODECOURSE_CACHE`` or ``~/.cache/nodecourse``: parsed tensors, downloads, synthetic sets."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "nodecourse"


def check_set_name(set_name: str) -> str:
    if set_name not in SETS:
        raise ValueError(f"set_name={set_name!r} is not a PhysioNet 2012 set; use one of {SETS}")
    return set_name


def outcomes_name(set_name: str) -> str:
    return f"Outcomes-{set_name[-1]}.txt"


def downloaded_files(set_name: str) -> tuple[str, str]:
    """The files a download of ``set_name`` fetches: the archive and the outcomes."""
    return f"{set_name}.tar.gz", outcomes_name(set_name)


class UnverifiedDownloadWarning(UserWarning):
    """A downloaded set has a file that no sum pinned here vouches for (see the module docstring)."""


@dataclass(frozen=True)
class Source:
    """Where a set was found: ``kind`` is 'path', 'env', 'shared', 'download' or 'synthetic'.

    ``unverified``: for a download, one line per file that no pinned sum vouches
    for ("set-b.tar.gz: no sha256 pinned here"); empty when every file matched
    its sum in :data:`SHA256`, and for the other kinds (not downloaded here).
    """

    kind: str
    directory: Path
    set_name: str
    unverified: tuple[str, ...] = ()

    @property
    def outcomes(self) -> Path:
        return self.directory / outcomes_name(self.set_name)

    @property
    def verified(self) -> bool | None:
        """For a download: True when every file matched a sha256 pinned here, else False.
        None for a set found on disk or the synthetic one, which were not downloaded here."""
        return None if self.kind != "download" else not self.unverified

    @property
    def shown(self) -> str:
        """The folder as reports show it: the shared copy relative to the course folder
        (``../shared/physionet2012``, the same on every machine), others as they are;
        an unverified download says so and why."""
        if self.kind == "shared":
            return os.path.relpath(self.directory, REPO_ROOT)
        if self.unverified:
            return f"{self.directory}; UNVERIFIED download: {'; '.join(self.unverified)}"
        return str(self.directory)

    @property
    def archive(self) -> Path | None:
        p = self.directory / f"{self.set_name}.tar.gz"
        return p if p.is_file() else None


def has_set(directory: Path, set_name: str) -> bool:
    d = Path(directory)
    return (d / outcomes_name(set_name)).is_file() and ((d / f"{set_name}.tar.gz").is_file() or (d / set_name).is_dir())


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def locate(set_name: str = "set-a", path: str | os.PathLike | None = None, download: bool = False) -> Source | None:
    """Find ``set_name`` (see the module docstring for the order); None when nowhere.

    An explicit ``path`` that does not hold the set is an error, not a silent fallback.
    """
    check_set_name(set_name)
    if path is not None:
        d = Path(path).expanduser()
        if not has_set(d, set_name):
            raise FileNotFoundError(
                f"path={str(path)!r} does not hold PhysioNet {set_name}: expected "
                f"{outcomes_name(set_name)} and {set_name}.tar.gz (or an unpacked {set_name}/) "
                "there; pass the folder that holds them, or path=None to search the usual places"
            )
        return Source("path", d, set_name)
    env = os.environ.get(DATA_ENV)
    if env and has_set(Path(env).expanduser(), set_name):
        return Source("env", Path(env).expanduser(), set_name)
    if has_set(SHARED_DIR, set_name):
        return Source("shared", SHARED_DIR, set_name)
    downloaded = cache_dir() / "physionet2012"
    if has_set(downloaded, set_name):
        return downloaded_source(downloaded, set_name)
    if download:
        return fetch(set_name, downloaded)
    return None


def unpinned(directory: Path, set_name: str) -> tuple[str, ...]:
    """The downloaded files of ``set_name`` in ``directory`` that no sum in :data:`SHA256` vouches for,
    one line each saying why (no pinned sum, not there to check, or a different sum)."""
    why = []
    for name in downloaded_files(set_name):
        pinned, path = SHA256.get(name), directory / name
        if pinned is None:
            why.append(f"{name}: no sha256 pinned here")
        elif not path.is_file():  # is_file: a FIFO or device in its place is not read
            why.append(f"{name}: not there to check against its pinned sha256")
        elif sha256(path) != pinned:
            why.append(f"{name}: differs from its pinned sha256")
    return tuple(why)


def downloaded_source(directory: Path, set_name: str) -> Source:
    """The :class:`Source` of a set downloaded into ``directory``, checked against the pinned sums;
    an unverified one is announced with an :class:`UnverifiedDownloadWarning`."""
    source = Source("download", directory, set_name, unpinned(directory, set_name))
    if source.unverified:
        there = [directory / n for n in downloaded_files(set_name) if (directory / n).is_file()]
        sums = ", ".join(f"{p.name} {sha256(p)}" for p in there) or "no downloaded file is there"
        warnings.warn(
            f"PhysioNet {set_name} in {directory} is an UNVERIFIED download ({'; '.join(source.unverified)}). "
            f"A file with no pinned sum was checked only against PhysioNet's {SUMS_FILE}, which the same host "
            "serves: that shows the transfer arrived whole, not that the file is the one the course was built "
            f"on. sha256 of the files there: {sums}. Compare them with sums from a source you trust, then pin "
            "them in nodecourse.data.physionet._sources.SHA256 (as set A's are); or place a verified copy and "
            "pass path=",
            UnverifiedDownloadWarning,
            stacklevel=3,
        )
    return source


def _download(name: str, target: Path, timeout: float) -> bool:
    """Fetch ``URL + name`` into ``target`` through a ``.part`` file; False when there is no network.

    A transfer that breaks after it started raises :class:`DownloadError`; the
    ``.part`` file is removed whatever happens.
    """
    partial = target.with_name(target.name + ".part")
    try:
        try:
            resp = urllib.request.urlopen(URL + name, timeout=timeout)
        except OSError:  # URLError, refused, unreachable, timed out: no network, the caller falls back
            return False
        try:
            with open(partial, "wb") as out:
                for chunk in iter(lambda: resp.read(1 << 20), b""):
                    out.write(chunk)
        except (OSError, http.client.HTTPException) as exc:
            raise DownloadError(
                f"the download of {name} was interrupted ({type(exc).__name__}: {exc}); "
                "the partial file was removed; retry, or place a verified copy and pass "
                "path="
            ) from exc
        finally:
            close = getattr(resp, "close", None)
            if close is not None:
                close()
        partial.replace(target)
        return True
    finally:
        partial.unlink(missing_ok=True)


def _published_sums(directory: Path, timeout: float) -> dict[str, str]:
    """PhysioNet's ``SHA256SUMS.txt`` for the release, as {file name: sum} ({} without network)."""
    target = directory / SUMS_FILE
    if not _download(SUMS_FILE, target, timeout):
        return {}
    sums = {}
    for line in target.read_text(encoding="utf-8", errors="replace").splitlines():
        parts = line.split()
        if len(parts) == 2 and len(parts[0]) == 64:
            sums[parts[1].lstrip("*").lstrip("./")] = parts[0].lower()
    return sums


def fetch(set_name: str, directory: Path, timeout: float = 30.0) -> Source | None:
    """Download a set from PhysioNet into ``directory``; check it; None when there is no network.

    Every file must match a sha256 sum: ours (:data:`SHA256`) where we pin one,
    else the one in PhysioNet's ``SHA256SUMS.txt``; a file with no sum or a
    wrong one is deleted and :class:`DownloadError` raised. An interrupted
    transfer raises :class:`DownloadError` too, and leaves no partial file.
    A set checked only against ``SHA256SUMS.txt`` comes back unverified
    (:attr:`Source.unverified`, and an :class:`UnverifiedDownloadWarning`).
    """
    directory.mkdir(parents=True, exist_ok=True)
    names = downloaded_files(set_name)
    published: dict[str, str] | None = None
    for name in names:
        target = directory / name
        expected = SHA256.get(name)
        if expected is None:
            if published is None:
                published = _published_sums(directory, timeout)
            expected = published.get(name)
        if not _download(name, target, timeout):
            return None
        if expected is None:
            target.unlink(missing_ok=True)
            raise DownloadError(
                f"no sha256 sum is known for {name} (none pinned, none in PhysioNet's "
                f"{SUMS_FILE}); it was discarded unverified. Place a verified copy and pass path="
            )
        if sha256(target) != expected:
            target.unlink(missing_ok=True)
            raise DownloadError(
                f"the download of {name} does not match its known sha256 {expected}; "
                "it was discarded. Retry, or place a verified copy and pass path="
            )
        if name.endswith(".tar.gz"):
            try:
                with tarfile.open(target, "r:gz") as tf:
                    if not any(m.name.endswith(".txt") for m in tf.getmembers()):
                        raise tarfile.TarError("no .txt records inside")
            except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
                target.unlink(missing_ok=True)
                raise DownloadError(f"the download of {name} is not a tar of records ({exc}); discarded") from exc
    return downloaded_source(directory, set_name)
