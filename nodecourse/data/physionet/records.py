"""Parse PhysioNet 2012 record files (``Time,Parameter,Value``) into per-patient arrays.

One file is one ICU stay. Its first rows, at ``00:00``, are the general
descriptors (RecordID, Age, Gender, Height, ICUType, Weight); the rest are
time-stamped measurements of up to 37 variables. ``-1`` means "not recorded".

A record that cannot be trusted is never half-read: :func:`parse_record`
raises :class:`BadRecord` naming the reason, and the loader skips the file and
counts it (see :class:`LoadReport`).
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

VARIABLES: tuple[str, ...] = (
    "Albumin", "ALP", "ALT", "AST", "Bilirubin", "BUN", "Cholesterol", "Creatinine",
    "DiasABP", "FiO2", "GCS", "Glucose", "HCO3", "HCT", "HR", "K", "Lactate", "Mg",
    "MAP", "MechVent", "Na", "NIDiasABP", "NIMAP", "NISysABP", "PaCO2", "PaO2", "pH",
    "Platelets", "RespRate", "SaO2", "SysABP", "Temp", "TroponinI", "TroponinT",
    "Urine", "WBC", "Weight",
)
"""The 37 time-varying variables, in the order of the value columns."""

DESCRIPTORS: tuple[str, ...] = ("Age", "Gender", "Height", "ICUType", "Weight")
"""The static descriptors recorded at 00:00 (RecordID is kept separately)."""

HEADER = ("Time", "Parameter", "Value")
HORIZON_HOURS = 48.0
"""Records cover the first 48 hours after ICU admission."""

MISSING_VALUE = -1.0
"""The record format's marker for "not recorded"."""

_VAR_INDEX = {name: i for i, name in enumerate(VARIABLES)}
_DESCRIPTOR_NAMES = frozenset(("RecordID",) + DESCRIPTORS)


class BadRecord(ValueError):
    """A record file that the loader skips; ``reason`` is one of :data:`BAD_REASONS`."""

    def __init__(self, reason: str, detail: str):
        if reason not in BAD_REASONS:
            raise ValueError(f"unknown bad-record reason {reason!r}; valid: {BAD_REASONS}")
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class PhysioNetError(RuntimeError):
    """The set could not be loaded (or fetched); the message says what was looked for and the fix."""


class DamagedArchive(PhysioNetError):
    """An archive that cannot be read to its end (truncated, not gzip, not tar)."""


class EmptySet(PhysioNetError):
    """No usable record was found; the message says where the loader looked and what it skipped."""


class DownloadError(PhysioNetError):
    """A download that was interrupted or does not match its published checksum (nothing is kept)."""


BAD_REASONS = (
    "empty file",
    "unreadable file",
    "no header",
    "bad time stamp",
    "unknown parameter",
    "non-numeric value",
    "no record id",
    "no outcome",
    "bad outcome",
)


@dataclass
class Record:
    """One ICU stay, at full time resolution (minutes).

    - ``record_id``: int
    - ``times``: (n_obs,) float64 hours since admission, sorted, unique
    - ``values``: (n_obs, 37) float64, 0 where not observed (repeats at one time are averaged)
    - ``mask``: (n_obs, 37) bool, True where observed
    - ``static``: (5,) float64 descriptors in :data:`DESCRIPTORS` order, NaN where not recorded
    """

    record_id: int
    times: np.ndarray
    values: np.ndarray
    mask: np.ndarray
    static: np.ndarray


@dataclass
class LoadReport:
    """What a load read: where from, how many records, and which were skipped and why."""

    source: str
    location: str
    n_files: int = 0
    n_loaded: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file name, reason: detail)
    n_expected: int | None = None  # records the outcomes file lists
    missing: list[int] = field(default_factory=list)  # record ids listed there with no record file
    outcomes_name: str = "the outcomes file"

    @property
    def n_skipped(self) -> int:
        return len(self.skipped)

    @property
    def skipped_by_reason(self) -> dict[str, int]:
        return dict(Counter(reason.split(":", 1)[0] for _, reason in self.skipped))

    def summary(self) -> str:
        text = (f"PhysioNet 2012 from {self.source} ({self.location}): "
                f"{self.n_loaded} of {self.n_files} records loaded")
        if self.skipped:
            reasons = ", ".join(f"{n} {r}" for r, n in sorted(self.skipped_by_reason.items()))
            text += f"; skipped {self.n_skipped} bad record(s): {reasons}"
        if self.missing:
            text += (f"; MISSING {len(self.missing)} of the {self.n_expected} records {self.outcomes_name} "
                     f"lists (no record file; e.g. {', '.join(map(str, self.missing[:3]))})")
        return text


# Every valid time stamp, precomputed: parsing 1.7 M rows spends most of its
# time on time stamps otherwise.
_TIMES: dict[str, float] = {f"{h:02d}:{m:02d}": h + m / 60.0
                            for h in range(int(HORIZON_HOURS) + 1) for m in range(60)
                            if h + m / 60.0 <= HORIZON_HOURS}


def _parse_time(text: str) -> float:
    """'HH:MM' -> hours. Raises ValueError on anything else, or outside [0, 48] h."""
    t = _TIMES.get(text)
    if t is not None:
        return t
    hh, sep, mm = text.strip().partition(":")
    if not sep or not hh.isdigit() or not mm.isdigit() or len(mm) != 2 or int(mm) >= 60:
        raise ValueError(text)
    hours = int(hh) + int(mm) / 60.0
    if hours > HORIZON_HOURS:
        raise ValueError(text)
    return hours


def parse_record(text: str, name: str = "<record>") -> Record:
    """Parse the text of one record file; raise :class:`BadRecord` if it cannot be trusted."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise BadRecord("empty file", name)
    if tuple(c.strip() for c in lines[0].split(",")) != HEADER:
        raise BadRecord("no header", f"{name}: first line {lines[0][:40]!r}, expected 'Time,Parameter,Value'")

    record_id = None
    static = np.full(len(DESCRIPTORS), np.nan)
    seen_descriptor: set[str] = set()
    obs_t: list[float] = []
    obs_j: list[int] = []
    obs_v: list[float] = []
    in_header_block = True  # the descriptor rows at 00:00 before the first measurement
    var_index = _VAR_INDEX
    for lineno, line in enumerate(lines[1:], start=2):
        parts = line.split(",")
        if len(parts) != 3:
            raise BadRecord("non-numeric value", f"{name} line {lineno}: {line[:40]!r} has {len(parts)} fields")
        time_text, param, value_text = parts
        try:
            t = _parse_time(time_text)
        except ValueError:
            raise BadRecord("bad time stamp", f"{name} line {lineno}: {time_text!r}") from None
        try:
            value = float(value_text)
        except ValueError:
            raise BadRecord("non-numeric value", f"{name} line {lineno}: {param}={value_text!r}") from None
        if not math.isfinite(value):
            raise BadRecord("non-numeric value", f"{name} line {lineno}: {param}={value_text!r}")
        j = var_index.get(param)
        if j is None:
            param = param.strip()
            j = var_index.get(param)
        # Weight is both a descriptor (first 00:00 row) and a time-varying variable.
        if in_header_block:
            if t == 0.0 and param in _DESCRIPTOR_NAMES and param not in seen_descriptor:
                seen_descriptor.add(param)
                if param == "RecordID":
                    record_id = int(value)
                elif value != MISSING_VALUE:
                    static[DESCRIPTORS.index(param)] = value
                continue
            in_header_block = False
        if j is None:
            if param in _DESCRIPTOR_NAMES:
                continue  # a repeated descriptor row: not a measurement, harmless
            raise BadRecord("unknown parameter", f"{name} line {lineno}: {param!r}")
        if value == MISSING_VALUE:
            continue
        obs_t.append(t)
        obs_j.append(j)
        obs_v.append(value)
    if record_id is None:
        raise BadRecord("no record id", name)

    t_arr = np.asarray(obs_t, dtype=np.float64)
    times, row = np.unique(t_arr, return_inverse=True)
    j_arr = np.asarray(obs_j, dtype=np.int64)
    sums = np.zeros((len(times), len(VARIABLES)))
    counts = np.zeros((len(times), len(VARIABLES)))
    np.add.at(sums, (row, j_arr), np.asarray(obs_v, dtype=np.float64))
    np.add.at(counts, (row, j_arr), 1.0)
    mask = counts > 0
    values = np.where(mask, sums / np.maximum(counts, 1.0), 0.0)  # repeats at one time: averaged
    return Record(record_id, times, values, mask, static)


def parse_outcomes(text: str) -> dict[int, int]:
    """Parse ``Outcomes-X.txt``: RecordID -> In-hospital_death as written.

    A label other than 0 or 1 is returned as written: the loader skips that
    record as "bad outcome" (see :func:`check_label`)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise ValueError("the outcomes file is empty; expected a header "
                         "'RecordID,...,In-hospital_death' and one row per record")
    header = [c.strip() for c in lines[0].split(",")]
    if "RecordID" not in header or "In-hospital_death" not in header:
        raise ValueError(f"the outcomes file's header {lines[0]!r} lacks RecordID or In-hospital_death")
    i_id, i_death = header.index("RecordID"), header.index("In-hospital_death")
    out: dict[int, int] = {}
    for line in lines[1:]:
        parts = line.split(",")
        try:
            out[int(parts[i_id])] = int(parts[i_death])
        except (ValueError, IndexError):
            continue  # a malformed outcome row: that record will be skipped as "no outcome"
    return out


def check_label(label: int, record_id: int, outcomes_name: str) -> int:
    """``label`` if it is 0 or 1, else :class:`BadRecord` ("bad outcome")."""
    if label not in (0, 1):
        raise BadRecord("bad outcome", f"RecordID {record_id}: In-hospital_death = {label} in {outcomes_name}, "
                                       "expected 0 or 1")
    return label


def outcomes_header() -> str:
    return "RecordID,SAPS-I,SOFA,Length_of_stay,Survival,In-hospital_death"
