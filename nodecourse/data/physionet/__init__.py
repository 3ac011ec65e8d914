"""PhysioNet/CinC Challenge 2012: irregularly sampled ICU time series and in-hospital mortality.

Public surface::

    from nodecourse.data import physionet
    data = physionet.load("set-a", quantization=1.0)   # PhysioNetSet on a 1-hour grid
    print(data.report.summary())                       # where from, how many, what was skipped
    parts = data.split(test=0.2, seed=0)               # by patient, stratified, seeded
    norm = physionet.Normalizer.fit(parts["train"])    # statistics from the training split only
    train, test = norm.transform(parts["train"]), norm.transform(parts["test"])

Where the data comes from: :func:`locate` (explicit path > ``NODECOURSE_DATA`` >
``../shared/physionet2012`` > a download when ``download=True`` (set A checked against pinned sums; set B
reported unverified) >
the synthetic generator, with a loud warning). Bad records are skipped and
counted in ``data.report`` and named in a :class:`BadRecordWarning`: a value
that is not a plain decimal or lies beyond float32's range, a link leaving the
data folder, a FIFO or device, an oversized file, and both files of a RecordID
that two files claim (so that one patient cannot land in train and test).
Records the outcomes file lists but no record file holds are counted there too
(``report.missing``) and warned about. A damaged archive raises
:class:`DamagedArchive`, an outcomes file that gives one RecordID two labels
:class:`ConflictingOutcomes`, a set with no usable record :class:`EmptySet`, a
failed or unverifiable download :class:`DownloadError` (all
:class:`PhysioNetError`). The parsed tensors are cached under
``$NODECOURSE_CACHE`` (default ``~/.cache/nodecourse``), never in the
repository, keyed by a hash of the bytes read (any edit is seen), as plain
tensors read back with ``torch.load(weights_only=True)``: a file planted there
cannot run code.
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import torch

from nodecourse.data.physionet import _dataset, _records, _sources
from nodecourse.data.physionet._dataset import *  # noqa: F403
from nodecourse.data.physionet._dataset import PhysioNetSet, check_quantization, densify
from nodecourse.data.physionet._records import *  # noqa: F403
from nodecourse.data.physionet._records import (
    BadRecord,
    EmptySet,
    LoadReport,
    Record,
    check_label,
    parse_outcomes,
    parse_record,
)
from nodecourse.data.physionet._safe_read import ContentKey, fingerprint, iter_record_texts, read_outcomes
from nodecourse.data.physionet._sources import *  # noqa: F403
from nodecourse.data.physionet._sources import DATA_ENV, SHARED_DIR, Source, cache_dir, check_set_name
from nodecourse.data.physionet._sources import locate as _locate
from nodecourse.data.physionet._synthetic import write_synthetic

__all__ = [
    *_dataset.__all__,
    *_records.__all__,
    *_sources.__all__,
    "SyntheticDataWarning",
    "load",
    "locate",
    "synthetic",
    "MissingRecordWarning",
    "BadRecordWarning",
]

PARSER_VERSION = 3  # bump when parsing or the cached layout changes (3: strict values, refusals)


class SyntheticDataWarning(UserWarning):
    """Raised as a warning whenever the synthetic stand-in is used instead of real data."""


class BadRecordWarning(UserWarning):
    """Some record files were skipped; the report lists them."""


class MissingRecordWarning(BadRecordWarning):
    """The outcomes file lists records that no record file holds (a cut archive, a partial copy)."""


def locate(set_name: str = "set-a", path: str | os.PathLike | None = None, download: bool = False) -> Source | None:
    """Where ``set_name`` would be read from, or None when only the synthetic fallback is left."""
    return _locate(set_name, path, download)


def synthetic(
    n_patients: int = 4000, *, set_name: str = "set-a", seed: int = 0, directory: str | os.PathLike | None = None
) -> Source:
    """Write (once) a synthetic set in PhysioNet's file format and return its :class:`Source`.

    The files go to ``directory`` or to the cache (``synthetic/<set>-n<N>-s<seed>``).
    """
    check_set_name(set_name)
    d = Path(directory) if directory is not None else cache_dir() / "synthetic" / f"{set_name}-n{n_patients}-s{seed}"
    if not (d / f"Outcomes-{set_name[-1]}.txt").is_file():
        write_synthetic(d, set_name, n_patients, seed)
    return Source("synthetic", d, set_name)


def _warn_synthetic(set_name: str) -> None:
    msg = (
        f"\n{'!' * 72}\nPhysioNet {set_name} was NOT found: using the SYNTHETIC stand-in.\n"
        f"Numbers measured on it say nothing about the real benchmark.\n"
        f"To use the real data, pass path=..., set {DATA_ENV}=DIR, place it at {SHARED_DIR},\n"
        f"or call load(..., download=True) where a network exists.\n{'!' * 72}"
    )
    warnings.warn(msg, SyntheticDataWarning, stacklevel=3)


def parse_source(
    source: Source, progress: bool = False, key: ContentKey | None = None
) -> tuple[list[Record], list[int], LoadReport]:
    """Parse every record of ``source``; skip and count the bad ones; count the missing ones.

    Two record files with one RecordID are both skipped ("duplicate record id"),
    naming each other. ``key``, if given, is fed the bytes read (the cache key).
    Raises :class:`EmptySet` when no record is usable, saying where it looked and
    what it skipped, and :class:`ConflictingOutcomes` when the outcomes file gives
    one RecordID two labels.
    """
    outcomes_bytes = read_outcomes(source)
    if key is not None:
        key.add(source.outcomes.name, outcomes_bytes)
    outcomes = parse_outcomes(outcomes_bytes.decode("utf-8", errors="replace"), str(source.outcomes))
    report = LoadReport(source.kind, source.shown, n_expected=len(outcomes), outcomes_name=source.outcomes.name)
    records: list[Record] = []
    names: list[str] = []
    labels: list[int] = []
    seen: set[int] = set()
    texts = iter_record_texts(source, key)
    if progress:
        from tqdm.auto import tqdm

        texts = tqdm(texts, desc=f"parsing {source.set_name}", unit="record", leave=False)
    for name, text in texts:
        report.n_files += 1
        stem = Path(name).stem
        if stem.isdigit():
            seen.add(int(stem))
        try:
            if isinstance(text, BadRecord):
                raise text
            rec = parse_record(text, name)
            seen.add(rec.record_id)
            if rec.record_id not in outcomes:
                raise BadRecord("no outcome", f"{name}: RecordID {rec.record_id} not in {source.outcomes.name}")
            label = check_label(outcomes[rec.record_id], rec.record_id, source.outcomes.name)
        except BadRecord as exc:
            report.skipped.append((name, str(exc)))
            continue
        records.append(rec)
        names.append(name)
        labels.append(label)
    records, labels = _drop_duplicate_ids(records, names, labels, report)
    report.n_loaded = len(records)
    report.missing = sorted(set(outcomes) - seen)
    if not records:
        where = source.archive or (source.directory / source.set_name)
        what = (
            f"found {report.n_files} record file(s), all skipped ({report.summary()})"
            if report.n_files
            else "found no record files (*.txt)"
        )
        raise EmptySet(
            f"no usable PhysioNet {source.set_name} record in {where}: {what}; "
            f"{source.outcomes.name} lists {len(outcomes)} record(s). Pass the folder holding "
            f"{source.set_name}.tar.gz (or {source.set_name}/*.txt) and {source.outcomes.name}"
        )
    return records, labels, report


def _drop_duplicate_ids(
    records: list[Record], names: list[str], labels: list[int], report: LoadReport
) -> tuple[list[Record], list[int]]:
    """Skip every record whose RecordID another file also holds; each skip names all the files."""
    files: dict[int, list[str]] = {}
    for rec, name in zip(records, names):
        files.setdefault(rec.record_id, []).append(name)
    if all(len(v) == 1 for v in files.values()):
        return records, labels
    kept_records, kept_labels = [], []
    for rec, name, label in zip(records, names, labels):
        where = files[rec.record_id]
        if len(where) == 1:
            kept_records.append(rec)
            kept_labels.append(label)
            continue
        # Keeping either would be a guess, and keeping both lets one patient
        # land in train and in test.
        if len(set(where)) == 1:
            place = f"{name} appears twice" if len(where) == 2 else f"{name} appears {len(where)} times"
        else:
            place = "it is in " + " and ".join(where)
        report.skipped.append(
            (
                name,
                str(
                    BadRecord(
                        "duplicate record id",
                        f"RecordID {rec.record_id}: {place}; all copies skipped. Keep the one "
                        "file that holds this patient and remove the others",
                    )
                ),
            )
        )
    return kept_records, kept_labels


def cache_file(source: Source, quantization: float, key: str | None = None) -> Path:
    """Where the parsed tensors of ``source`` on grid ``quantization`` are cached.

    ``key`` is the content hash (:func:`fingerprint`, computed when not given).
    """
    key = f"{source.set_name}-{key or fingerprint(source)}-q{quantization:g}-v{PARSER_VERSION}"
    return cache_dir() / "physionet" / f"{key}.pt"


def load(
    set_name: str = "set-a",
    *,
    path: str | os.PathLike | None = None,
    quantization: float = 1.0,
    download: bool = False,
    cache: bool = True,
    allow_synthetic: bool = True,
    synthetic_patients: int = 4000,
    progress: bool = True,
    verbose: bool = True,
) -> PhysioNetSet:
    """Load one PhysioNet 2012 set as a :class:`PhysioNetSet` on a grid of ``quantization`` hours.

    Args:
        set_name: "set-a" or "set-b".
        path: a folder holding ``set-a.tar.gz`` (or ``set-a/``) and ``Outcomes-a.txt``; an explicit
            path that lacks them raises.
        quantization: grid spacing in hours (1/60 to 48). Observations are moved to the nearest
            grid time; repeats in one cell are averaged.
        download: fetch from PhysioNet when no local copy exists (set A checked against sums pinned
            here; set B only against the host's own sums, so reported unverified).
        cache: keep the parsed tensors under the cache folder, keyed by the files' fingerprint.
        allow_synthetic: when nothing real is found, fall back to the synthetic stand-in (with a
            :class:`SyntheticDataWarning`); False raises FileNotFoundError instead.
        synthetic_patients: size of that stand-in.
    """
    check_set_name(set_name)
    q = check_quantization(quantization)
    source = locate(set_name, path, download)
    if source is None:
        if not allow_synthetic:
            raise FileNotFoundError(
                f"PhysioNet {set_name} not found (no path, no {DATA_ENV}, nothing at {SHARED_DIR}); "
                "pass path=..., download=True, or allow_synthetic=True"
            )
        _warn_synthetic(set_name)
        source = synthetic(synthetic_patients, set_name=set_name)
    cached = cache_file(source, q) if cache else None
    data = None
    if cached is not None and cached.is_file():
        try:
            # weights_only: tensors, numbers, strings, lists and dicts only; a planted
            # pickle that would run code is refused (and the cache rebuilt).
            data = _from_cache(torch.load(cached, weights_only=True), source)
        except Exception:  # a stale, truncated or planted cache is rebuilt, never trusted
            data = None
    if data is None:
        start = time.perf_counter()
        read = ContentKey()
        records, labels, report = parse_source(source, progress=progress, key=read)
        data = densify(records, labels, q, report)
        if verbose:
            print(f"parsed in {time.perf_counter() - start:.1f} s")
        if cache:
            # Keyed by the bytes this parse read, not those hashed before it: a
            # file edited in between is never cached under its old content's key.
            cached = cache_file(source, q, read.hexdigest())
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(".tmp")
            torch.save(_to_cache(data), tmp)
            tmp.replace(cached)
    if data.report.missing or data.report.skipped:
        category = MissingRecordWarning if data.report.missing else BadRecordWarning
        text = data.report.summary()
        if data.report.skipped:
            text += "\n" + data.report.examples()
        warnings.warn(text, category, stacklevel=2)
    if verbose:
        print(data.report.summary())
    return data


def _to_cache(d: PhysioNetSet) -> dict:
    r = d.report
    return {
        "times": d.times,
        "values": d.values,
        "mask": d.mask.bool(),
        "static": d.static,
        "labels": d.labels,
        "record_ids": d.record_ids,
        "quantization": d.quantization,
        "report": {
            "n_files": r.n_files,
            "n_loaded": r.n_loaded,
            "skipped": [list(x) for x in r.skipped],
            "n_expected": r.n_expected,
            "missing": list(r.missing),
            "outcomes_name": r.outcomes_name,
        },
    }


def _from_cache(blob: dict, source: Source) -> PhysioNetSet:
    rep = blob["report"]
    report = LoadReport(
        source.kind,
        source.shown,
        rep["n_files"],
        rep["n_loaded"],
        [tuple(s) for s in rep["skipped"]],
        rep["n_expected"],
        list(rep["missing"]),
        rep["outcomes_name"],
    )
    static = blob["static"]
    return PhysioNetSet(
        blob["times"],
        blob["values"],
        blob["mask"].float(),
        static,
        blob["labels"],
        blob["record_ids"],
        (~torch.isnan(static)).float(),
        report,
        blob["quantization"],
    )
