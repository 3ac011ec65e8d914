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

What is read, and what is refused: only regular files whose real path lies
inside the data folder (the folder as given, itself possibly a link). A record
file that is a link leaving the folder is skipped as "outside the data folder",
one that is a FIFO, device or directory as "unreadable file", one over
:data:`RECORD_SIZE_LIMIT` as "too large"; each is checked with ``os.stat``
before it is opened, so nothing blocks and nothing is read without end. The
outcomes file, the archive and the ``set-a/`` folder must pass the same checks
or the load stops with :class:`PhysioNetError`. The members of an archive are
read in memory, never unpacked: links, devices and names that leave the folder
(absolute, or with ``..``) are skipped and counted the same way.

Why this module is long: it holds two halves that meet at the data folder, finding or downloading a set (the
order and the pinned sums above) and reading it safely (the checks above, an archive's members read in memory,
the fingerprint); moving the safe reading into a private module of its own is a split that is pending.
"""

from __future__ import annotations

import hashlib
import http.client
import io
import os
import posixpath
import stat
import tarfile
import urllib.request
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from nodecourse.data.physionet._records import BadRecord, DamagedArchive, DownloadError, PhysioNetError

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

RECORD_SIZE_LIMIT = 4 << 20
"""Bytes one record file may hold (set A's largest is 23 KB): a larger one is skipped unread."""
OUTCOMES_SIZE_LIMIT = 64 << 20
"""Bytes the outcomes file may hold (set A's is 79 KB)."""
ARCHIVE_SIZE_LIMIT = 1 << 30
"""Bytes the archive may hold (set A's is 6.3 MB); it is read into memory whole, then hashed and parsed."""

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


_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((what for test, what in _FILE_KINDS if test(mode)), "not a regular file")


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def read_inside(path: Path, root: Path, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them, if its real path is in ``root``.

    ``root`` is the resolved data folder. Raises :class:`BadRecord` with the reason
    "outside the data folder", "unreadable file" (not a regular file, or an OSError)
    or "too large"; the message names ``path`` and says what to do.
    """
    name = path.name
    try:
        # lstat first: only a link needs resolving (resolving every file costs a
        # system call per path component, 4,000 times over).
        mode = os.lstat(path).st_mode
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        if stat.S_ISLNK(mode):
            try:
                real = path.resolve(strict=True)
            except RuntimeError as exc:  # a link loop (Python < 3.13)
                raise BadRecord("unreadable file", f"{name}: {exc}") from None
            if not _inside(real, root):
                raise BadRecord(
                    "outside the data folder",
                    f"{name} is a link to {real}, outside the data folder {root}; the loader "
                    "reads only files inside it: replace the link by a copy of the file, or remove it",
                )
            # stat before open: opening a FIFO blocks, opening a device may do anything.
            mode = os.stat(real).st_mode
        else:
            real = path
            # O_NOFOLLOW: a link swapped in after the lstat is refused, not followed.
            flags |= getattr(os, "O_NOFOLLOW", 0)
        if not stat.S_ISREG(mode):
            raise BadRecord(
                "unreadable file",
                f"{name} is {_kind(mode)}, not a regular file; the loader reads regular files only: remove it",
            )
        # O_NONBLOCK: if a FIFO was swapped in after the stat, open returns at once
        # and the fstat below refuses it.
        fd = os.open(real, flags)
        with os.fdopen(fd, "rb") as fh:
            mode = os.fstat(fh.fileno()).st_mode
            if not stat.S_ISREG(mode):
                raise BadRecord("unreadable file", f"{name} is {_kind(mode)}, not a regular file; remove it")
            data = fh.read(limit + 1)
    except OSError as exc:  # missing, a dangling link, no permission
        raise BadRecord("unreadable file", f"{name}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise BadRecord(
            "too large",
            f"{name} holds more than {limit} bytes (the limit for this file); "
            "a PhysioNet record is tens of kilobytes: check that it is a record",
        )
    return data


def _data_root(source: Source) -> Path:
    return source.directory.resolve()


def read_set_file(source: Source, path: Path, limit: int) -> bytes:
    """A file the set cannot do without (outcomes, archive): as :func:`read_inside`, refusals raise
    :class:`PhysioNetError` naming the file and the fix."""
    try:
        return read_inside(path, _data_root(source), limit)
    except BadRecord as exc:
        raise PhysioNetError(
            f"cannot read {path}: {exc}. The loader needs it as a regular file inside "
            f"{source.directory}: copy the real file there, or pass path= the folder "
            "that holds the set"
        ) from None


def read_outcomes(source: Source) -> bytes:
    """The bytes of the set's outcomes file (checked as :func:`read_inside`)."""
    return read_set_file(source, source.outcomes, OUTCOMES_SIZE_LIMIT)


class ContentKey:
    """A hash of the bytes a load read: the tensor cache's key.

    Fed the outcomes file, then the archive whole or each record file (name and
    bytes, or the reason it was refused), in the order they are read. Unlike a
    key made of sizes and mtimes, it changes with any edit.
    """

    def __init__(self) -> None:
        self._h = hashlib.sha256()

    def add(self, name: str, data: bytes | BadRecord) -> None:
        body = data if isinstance(data, bytes) else f"refused: {data.reason}".encode()
        # Length-prefixed, so that no two sequences of files hash alike.
        self._h.update(f"{len(name)}:{name}:{len(body)}:".encode())
        self._h.update(body)

    def hexdigest(self) -> str:
        return self._h.hexdigest()[:16]


def _set_folder(source: Source) -> Path:
    """``directory/set-a``, refused with :class:`PhysioNetError` if it resolves outside the data folder."""
    folder = source.directory / source.set_name
    real = folder.resolve()
    if not _inside(real, _data_root(source)):
        raise PhysioNetError(
            f"{folder} is a link to {real}, outside the data folder {source.directory}; "
            f"the loader reads only files inside it: pass path={str(real.parent)!r} if "
            f"{source.outcomes.name} is there too, or replace the link by the folder"
        )
    return folder


def iter_record_bytes(source: Source, key: ContentKey | None = None) -> Iterator[tuple[str, bytes | BadRecord]]:
    """Yield (file name, bytes) for every record file of the set, in name order.

    Reads straight from the tar archive when there is one (nothing is unpacked).
    A record file that is refused (see the module docstring) or cannot be read
    yields a :class:`BadRecord` in place of its bytes. An archive that cannot
    be read to its end raises :class:`DamagedArchive`: records after the damage
    would be lost unseen. ``key``, if given, is fed exactly the bytes read.
    """
    archive = source.archive
    if archive is None:
        folder = _set_folder(source)
        root = _data_root(source)
        for p in sorted(folder.glob("*.txt")):
            try:
                data: bytes | BadRecord = read_inside(p, root, RECORD_SIZE_LIMIT)
            except BadRecord as exc:
                data = exc
            if key is not None:
                key.add(p.name, data)
            yield p.name, data
        return
    blob = read_set_file(source, archive, ARCHIVE_SIZE_LIMIT)
    if key is not None:
        key.add(archive.name, blob)
    yield from _archive_members(blob, archive)


def _archive_members(blob: bytes, archive: Path) -> list[tuple[str, bytes | BadRecord]]:
    """The ``*.txt`` members of the gzipped tar ``blob``, sorted by name; refusals as :class:`BadRecord`."""
    # Read the gzip stream front to back (seeking backwards in it decompresses
    # from the start again), then hand the files out in name order.
    out: list[tuple[str, bytes | BadRecord]] = []
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tf:
            for m in tf:
                if not m.name.endswith(".txt"):
                    continue  # the set-a/ directory entry, a README: not records
                out.append(_read_member(tf, m, archive.name))
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise DamagedArchive(
            f"{archive} is damaged: {type(exc).__name__}: {exc} (after {len(out)} record files); "
            f"download it again or pass a good copy of {archive.name} with path= / --data"
        ) from exc
    out.sort(key=lambda item: item[0])
    return out


def _read_member(tf: tarfile.TarFile, m: tarfile.TarInfo, archive_name: str) -> tuple[str, bytes | BadRecord]:
    parts = m.name.replace("\\", "/").split("/")
    if m.name.startswith("/") or ".." in parts:
        # Never unpacked, but a member an unpacker would write outside the folder
        # is no part of the set.
        return m.name, BadRecord(
            "outside the data folder",
            f"{archive_name} member {m.name!r} would unpack outside the set's folder "
            "(absolute, or through '..'); it is not read: rebuild the archive without it",
        )
    name = posixpath.basename(m.name)
    if not m.isreg():
        what = (
            f"a symbolic link to {m.linkname!r}"
            if m.issym()
            else f"a hard link to {m.linkname!r}"
            if m.islnk()
            else "a directory"
            if m.isdir()
            else "a FIFO (named pipe)"
            if m.isfifo()
            else "a device"
            if m.isdev()
            else f"of tar type {m.type!r}"
        )
        return name, BadRecord(
            "unreadable file",
            f"{archive_name} member {m.name} is {what}, not a regular file; the loader reads regular members only",
        )
    if m.size > RECORD_SIZE_LIMIT:
        return name, BadRecord(
            "too large",
            f"{archive_name} member {m.name} holds {m.size} bytes, over the "
            f"{RECORD_SIZE_LIMIT}-byte limit for a record; it is not read",
        )
    return name, tf.extractfile(m).read()


def iter_record_texts(source: Source, key: ContentKey | None = None) -> Iterator[tuple[str, str | BadRecord]]:
    """:func:`iter_record_bytes` decoded: undecodable bytes become U+FFFD, so that the
    parser reports the record as bad rather than guessing."""
    for name, data in iter_record_bytes(source, key):
        yield name, data if isinstance(data, BadRecord) else data.decode("utf-8", errors="replace")


def fingerprint(source: Source) -> str:
    """A short hash of the set's content (outcomes, then the archive or every record file).

    The key of the tensor cache: an edit that keeps a file's size and mtime still
    changes it. It reads what a load reads (a 6 MB archive, or 4,000 small files)
    with the same refusals, so it never blocks on a FIFO either.
    """
    key = ContentKey()
    key.add(source.outcomes.name, read_outcomes(source))
    if source.archive is not None:
        # The archive's bytes are the key: no need to decompress it here.
        key.add(source.archive.name, read_set_file(source, source.archive, ARCHIVE_SIZE_LIMIT))
    else:
        for _ in iter_record_bytes(source, key):
            pass
    return key.hexdigest()
