"""Reading a PhysioNet 2012 set safely: its outcomes, its archive or folder, each record file.

:func:`iter_record_texts` (and :func:`iter_record_bytes` under it) hands out every record file of a
:class:`~nodecourse.data.physionet._sources.Source` that :mod:`nodecourse.data.physionet._sources`
found; :func:`read_outcomes` the outcomes file; :func:`fingerprint` (a :class:`ContentKey`) hashes
what a load reads, the key of the tensor cache.

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
"""

from __future__ import annotations

import hashlib
import io
import os
import posixpath
import stat
import tarfile
import zlib
from pathlib import Path
from typing import Iterator

from nodecourse.data.physionet._records import BadRecord, DamagedArchive, PhysioNetError
from nodecourse.data.physionet._sources import Source

RECORD_SIZE_LIMIT = 4 << 20
"""Bytes one record file may hold (set A's largest is 23 KB): a larger one is skipped unread."""
OUTCOMES_SIZE_LIMIT = 64 << 20
"""Bytes the outcomes file may hold (set A's is 79 KB)."""
ARCHIVE_SIZE_LIMIT = 1 << 30
"""Bytes the archive may hold (set A's is 6.3 MB); it is read into memory whole, then hashed and parsed."""


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
