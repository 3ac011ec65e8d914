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

A directory "has" a set when it holds ``Outcomes-a.txt`` and either
``set-a.tar.gz`` or an unpacked ``set-a/`` folder (likewise for set-b).
"""
from __future__ import annotations

import hashlib
import http.client
import os
import tarfile
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from nodecourse.data.physionet.records import BadRecord, DamagedArchive, DownloadError

DATA_ENV = "NODECOURSE_DATA"
CACHE_ENV = "NODECOURSE_CACHE"
SETS = ("set-a", "set-b")
URL = "https://physionet.org/files/challenge-2012/1.0.0/"

SHA256 = {
    "set-a.tar.gz": "2048357345b41fd73c63f435b0341f1475bccd22836541474fc5d72319a1e99e",
    "Outcomes-a.txt": "2613ea60ccda29f87571a7d6b09ad130858a8ccd66325bd073365925026883c2",
}
"""Sums we pin ourselves (set A, release 1.0.0); the others come from PhysioNet's list."""
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


@dataclass(frozen=True)
class Source:
    """Where a set was found: ``kind`` is 'path', 'env', 'shared', 'download' or 'synthetic'."""

    kind: str
    directory: Path
    set_name: str

    @property
    def outcomes(self) -> Path:
        return self.directory / outcomes_name(self.set_name)

    @property
    def shown(self) -> str:
        """The folder as reports show it: the shared copy relative to the course folder
        (``../shared/physionet2012``, the same on every machine), others as they are."""
        if self.kind == "shared":
            return os.path.relpath(self.directory, REPO_ROOT)
        return str(self.directory)

    @property
    def archive(self) -> Path | None:
        p = self.directory / f"{self.set_name}.tar.gz"
        return p if p.is_file() else None


def has_set(directory: Path, set_name: str) -> bool:
    d = Path(directory)
    return (d / outcomes_name(set_name)).is_file() and (
        (d / f"{set_name}.tar.gz").is_file() or (d / set_name).is_dir())


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def locate(set_name: str = "set-a", path: str | os.PathLike | None = None,
           download: bool = False) -> Source | None:
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
                "there; pass the folder that holds them, or path=None to search the usual places")
        return Source("path", d, set_name)
    env = os.environ.get(DATA_ENV)
    if env and has_set(Path(env).expanduser(), set_name):
        return Source("env", Path(env).expanduser(), set_name)
    if has_set(SHARED_DIR, set_name):
        return Source("shared", SHARED_DIR, set_name)
    downloaded = cache_dir() / "physionet2012"
    if has_set(downloaded, set_name):
        return Source("download", downloaded, set_name)
    if download:
        return fetch(set_name, downloaded)
    return None


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
            raise DownloadError(f"the download of {name} was interrupted ({type(exc).__name__}: {exc}); "
                                "the partial file was removed; retry, or place a verified copy and pass "
                                "path=") from exc
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
    """Download a set from PhysioNet into ``directory``; verify it; None when there is no network.

    Every file must match a sha256 sum: ours (:data:`SHA256`) where we pin one,
    else the one in PhysioNet's ``SHA256SUMS.txt``; a file with no sum or a
    wrong one is deleted and :class:`DownloadError` raised. An interrupted
    transfer raises :class:`DownloadError` too, and leaves no partial file.
    """
    directory.mkdir(parents=True, exist_ok=True)
    names = (f"{set_name}.tar.gz", outcomes_name(set_name))
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
            raise DownloadError(f"no sha256 sum is known for {name} (none pinned, none in PhysioNet's "
                                f"{SUMS_FILE}); it was discarded unverified. Place a verified copy and pass path=")
        if sha256(target) != expected:
            target.unlink(missing_ok=True)
            raise DownloadError(f"the download of {name} does not match its known sha256 {expected}; "
                                "it was discarded. Retry, or place a verified copy and pass path=")
        if name.endswith(".tar.gz"):
            try:
                with tarfile.open(target, "r:gz") as tf:
                    if not any(m.name.endswith(".txt") for m in tf.getmembers()):
                        raise tarfile.TarError("no .txt records inside")
            except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
                target.unlink(missing_ok=True)
                raise DownloadError(f"the download of {name} is not a tar of records ({exc}); discarded") from exc
    return Source("download", directory, set_name)


def iter_record_texts(source: Source) -> Iterator[tuple[str, str | BadRecord]]:
    """Yield (file name, text) for every record file of the set, in name order.

    Reads straight from the tar archive when there is one (nothing is unpacked).
    Undecodable bytes become U+FFFD so that the parser reports the record as bad;
    a record file that cannot be read yields a :class:`BadRecord` ("unreadable file")
    in place of its text. An archive that cannot be read to its end raises
    :class:`DamagedArchive`: records after the damage would be lost unseen.
    """
    folder = source.directory / source.set_name
    if source.archive is None and folder.is_dir():
        for p in sorted(folder.glob("*.txt")):
            try:
                yield p.name, p.read_bytes().decode("utf-8", errors="replace")
            except OSError as exc:
                yield p.name, BadRecord("unreadable file", f"{p.name}: {exc.strerror or exc}")
        return
    # Read the gzip stream front to back (seeking backwards in it decompresses
    # from the start again), then hand the files out in name order.
    texts: list[tuple[str, str]] = []
    try:
        with tarfile.open(source.archive, "r:gz") as tf:
            for m in tf:
                if m.isfile() and m.name.endswith(".txt"):
                    texts.append((Path(m.name).name, tf.extractfile(m).read().decode("utf-8", errors="replace")))
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise DamagedArchive(
            f"{source.archive} is damaged: {type(exc).__name__}: {exc} (after {len(texts)} record files); "
            f"download it again or pass a good copy of {source.archive.name} with path= / --data") from exc
    texts.sort(key=lambda item: item[0])
    yield from texts


def fingerprint(source: Source) -> str:
    """A short content hash of the set's files, the key of the tensor cache."""
    h = hashlib.sha256()
    files = [source.outcomes]
    if source.archive is not None:
        files.append(source.archive)
    else:
        files += sorted((source.directory / source.set_name).glob("*.txt"))
    for f in files:
        st = f.stat()
        # Size and mtime for every file, content for the two headline files:
        # cheap, and any edit to a record changes its mtime.
        h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    h.update(sha256(source.outcomes).encode())
    return h.hexdigest()[:16]
