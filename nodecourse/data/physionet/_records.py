"""Parse PhysioNet 2012 record files (``Time,Parameter,Value``) into per-patient arrays.

One file is one ICU stay. Its first rows, at ``00:00``, are the general
descriptors (RecordID, Age, Gender, Height, ICUType, Weight); the rest are
time-stamped measurements of up to 37 variables. ``-1`` means "not recorded".

A record that cannot be trusted is never half-read: :func:`parse_record`
raises :class:`BadRecord` naming the reason, and the loader skips the file and
counts it (see :class:`LoadReport`). Values must be plain decimals
(``73``, ``-1``, ``7.35``, ``1.2e3``) within float32's finite range, the
dtype the tensors are stored in; a RecordID must be written in digits.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "BAD_REASONS",
    "DESCRIPTORS",
    "HORIZON_HOURS",
    "VARIABLES",
    "BadRecord",
    "ConflictingOutcomes",
    "DamagedArchive",
    "DownloadError",
    "EmptySet",
    "LoadReport",
    "PhysioNetError",
    "Record",
    "parse_record",
]

VARIABLES: tuple[str, ...] = (
    "Albumin",
    "ALP",
    "ALT",
    "AST",
    "Bilirubin",
    "BUN",
    "Cholesterol",
    "Creatinine",
    "DiasABP",
    "FiO2",
    "GCS",
    "Glucose",
    "HCO3",
    "HCT",
    "HR",
    "K",
    "Lactate",
    "Mg",
    "MAP",
    "MechVent",
    "Na",
    "NIDiasABP",
    "NIMAP",
    "NISysABP",
    "PaCO2",
    "PaO2",
    "pH",
    "Platelets",
    "RespRate",
    "SaO2",
    "SysABP",
    "Temp",
    "TroponinI",
    "TroponinT",
    "Urine",
    "WBC",
    "Weight",
)
"""The 37 time-varying variables, in the order of the value columns."""

DESCRIPTORS: tuple[str, ...] = ("Age", "Gender", "Height", "ICUType", "Weight")
"""The static descriptors recorded at 00:00 (RecordID is kept separately)."""

HEADER = ("Time", "Parameter", "Value")
HORIZON_HOURS = 48.0
"""Records cover the first 48 hours after ICU admission."""

MISSING_VALUE = -1.0
"""The record format's marker for "not recorded"."""

FLOAT32_MAX = float(np.finfo(np.float32).max)
"""The largest value a record may hold: the tensors are float32, and a larger one would become inf."""

_VAR_INDEX = {name: i for i, name in enumerate(VARIABLES)}
_DESCRIPTOR_NAMES = frozenset(("RecordID",) + DESCRIPTORS)
# float() also accepts '1_000', 'infinity', and Arabic-Indic or full-width digits;
# the record format is plain ASCII decimals, so anything else is a bad value.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_RECORD_ID = re.compile(r"[0-9]+")
_LABEL = re.compile(r"[+-]?[0-9]+")  # 0 or 1; others are read, then refused as "bad outcome"
_INT64_MAX = 2**63 - 1


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
    """A download that was interrupted or does not match its checksum (the pinned one, or for set B
    the host's own), with nothing kept."""


class ConflictingOutcomes(PhysioNetError):
    """The outcomes file gives one RecordID two different labels: which is right cannot be guessed."""


BAD_REASONS = (
    "empty file",
    "unreadable file",
    "no header",
    "bad time stamp",
    "unknown parameter",
    "non-numeric value",
    "out-of-range value",
    "no record id",
    "bad record id",
    "duplicate record id",
    "no outcome",
    "bad outcome",
    "outside the data folder",
    "too large",
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
        text = f"PhysioNet 2012 from {self.source} ({self.location}): {self.n_loaded} of {self.n_files} records loaded"
        if self.skipped:
            reasons = ", ".join(f"{n} {r}" for r, n in sorted(self.skipped_by_reason.items()))
            text += f"; skipped {self.n_skipped} bad record(s): {reasons}"
        if self.missing:
            text += (
                f"; MISSING {len(self.missing)} of the {self.n_expected} records {self.outcomes_name} "
                f"lists (no record file; e.g. {', '.join(map(str, self.missing[:3]))})"
            )
        return text

    def examples(self, limit: int = 5) -> str:
        """The first ``limit`` skipped files with their reasons, one per line (for warnings)."""
        lines = [f"  {name}: {why}" for name, why in self.skipped[:limit]]
        if self.n_skipped > limit:
            lines.append(f"  ... and {self.n_skipped - limit} more (data.report.skipped lists them all)")
        return "\n".join(lines)


# Every valid time stamp, precomputed: parsing 1.7 M rows spends most of its
# time on time stamps otherwise.
_TIMES: dict[str, float] = {
    f"{h:02d}:{m:02d}": h + m / 60.0
    for h in range(int(HORIZON_HOURS) + 1)
    for m in range(60)
    if h + m / 60.0 <= HORIZON_HOURS
}


def _parse_time(text: str) -> float:
    """'HH:MM' -> hours. Raises ValueError on anything else, or outside [0, 48] h."""
    t = _TIMES.get(text)
    if t is not None:
        return t
    hh, sep, mm = text.strip().partition(":")
    # isdigit() is True for non-ASCII digits too ('\u0661'); the format writes ASCII only.
    if not sep or not text.isascii() or not hh.isdigit() or not mm.isdigit() or len(mm) != 2 or int(mm) >= 60:
        raise ValueError(text)
    hours = int(hh) + int(mm) / 60.0
    if hours > HORIZON_HOURS:
        raise ValueError(text)
    return hours


# Set A holds 1.7 M values but only about 7,600 distinct strings: remembering the
# ones already checked makes the strict check cheaper than float() on every row.
_VALUES: dict[str, float] = {}
_VALUES_LIMIT = 200_000


def _parse_value(value_text: str, param: str, where: str) -> float:
    """A plain decimal within float32's range, else :class:`BadRecord` naming ``where`` and ``param``."""
    value = _VALUES.get(value_text)
    if value is not None:
        return value
    stripped = value_text.strip()
    if not _DECIMAL.fullmatch(stripped):
        raise BadRecord(
            "non-numeric value",
            f"{where}: {param}={value_text!r} is not a plain decimal number "
            "(digits, an optional point and exponent, e.g. 73 or 7.35e1); "
            "correct the value or remove the row",
        )
    value = float(stripped)
    if not abs(value) <= FLOAT32_MAX:  # also catches 1e999, which float() turns into inf
        raise BadRecord(
            "out-of-range value",
            f"{where}: {param}={value_text!r} is outside float32's finite range "
            f"(|x| <= {FLOAT32_MAX:.4g}), the dtype the tensors are stored in; "
            "correct the value or remove the row",
        )
    if len(_VALUES) >= _VALUES_LIMIT:
        _VALUES.clear()
    _VALUES[value_text] = value
    return value


def _parse_record_id(value_text: str, where: str) -> int:
    """A RecordID written in digits that fits int64, else :class:`BadRecord` ("bad record id")."""
    stripped = value_text.strip()
    if not _RECORD_ID.fullmatch(stripped):
        # float() would read '140001.5' as 140001 and '1e30' as an id no int64 holds.
        raise BadRecord(
            "bad record id",
            f"{where}: RecordID={value_text!r} is not a whole number written in "
            "digits (e.g. 132539); correct the RecordID row",
        )
    rid = int(stripped)
    if rid > _INT64_MAX:
        raise BadRecord(
            "bad record id", f"{where}: RecordID={value_text!r} is too large for an int64 id; correct the RecordID row"
        )
    return rid


def parse_record(text: str, name: str = "<record>") -> Record:
    """Parse the text of one record file; raise :class:`BadRecord` if it cannot be trusted.

    A value that is not a plain decimal is a "non-numeric value", one beyond float32's
    finite range an "out-of-range value"; a RecordID not written in digits, or two
    different RecordIDs in one file, a "bad record id".
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise BadRecord("empty file", name)
    if tuple(c.strip() for c in lines[0].split(",")) != HEADER:
        raise BadRecord("no header", f"{name}: first line {lines[0][:40]!r}, expected 'Time,Parameter,Value'")

    record_id = None
    record_id_line = 0
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
        value = _parse_value(value_text, param, f"{name} line {lineno}")
        j = var_index.get(param)
        if j is None:
            param = param.strip()
            j = var_index.get(param)
        # Weight is both a descriptor (first 00:00 row) and a time-varying variable.
        if in_header_block:
            if t == 0.0 and param in _DESCRIPTOR_NAMES and param not in seen_descriptor:
                seen_descriptor.add(param)
                if param == "RecordID":
                    record_id, record_id_line = _parse_record_id(value_text, f"{name} line {lineno}"), lineno
                elif value != MISSING_VALUE:
                    static[DESCRIPTORS.index(param)] = value
                continue
            in_header_block = False
        if j is None:
            if param == "RecordID" and record_id is not None:
                again = _parse_record_id(value_text, f"{name} line {lineno}")
                if again != record_id:  # which patient is this? neither answer can be trusted
                    raise BadRecord(
                        "bad record id",
                        f"{name} line {lineno}: RecordID {record_id} was given on "
                        f"line {record_id_line}, and RecordID={value_text!r} here; "
                        "keep the file's one RecordID row",
                    )
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


def parse_outcomes(text: str, name: str = "the outcomes file") -> dict[int, int]:
    """Parse ``Outcomes-X.txt`` (called ``name`` in errors): RecordID -> In-hospital_death as written.

    A label other than 0 or 1 is returned as written: the loader skips that
    record as "bad outcome" (see :func:`check_label`). A RecordID listed twice
    with the same label is accepted (the repeat says nothing new; the other
    columns are not read); listed twice with different labels it raises
    :class:`ConflictingOutcomes` naming the RecordID, both lines and ``name``.
    """
    numbered = [(i, ln.strip()) for i, ln in enumerate(text.splitlines(), start=1) if ln.strip()]
    if not numbered:
        raise ValueError(f"{name} is empty; expected a header 'RecordID,...,In-hospital_death' and one row per record")
    header_line = numbered[0][1]
    header = [c.strip() for c in header_line.split(",")]
    if "RecordID" not in header or "In-hospital_death" not in header:
        raise ValueError(f"the header of {name}, {header_line[:80]!r}, lacks RecordID or In-hospital_death")
    i_id, i_death = header.index("RecordID"), header.index("In-hospital_death")
    out: dict[int, int] = {}
    first_line: dict[int, int] = {}
    for lineno, line in numbered[1:]:
        parts = line.split(",")
        try:
            id_text, label_text = parts[i_id].strip(), parts[i_death].strip()
        except IndexError:
            continue  # a malformed outcome row: that record will be skipped as "no outcome"
        # int() would also read '140_001' or non-ASCII digits; the file writes plain ones.
        if not _RECORD_ID.fullmatch(id_text) or not _LABEL.fullmatch(label_text):
            continue
        rid, label = int(id_text), int(label_text)
        if rid in out and out[rid] != label:
            raise ConflictingOutcomes(
                f"{name} lists RecordID {rid} twice with different In-hospital_death {out[rid]} "
                f"(line {first_line[rid]}) and {label} (line {lineno}); delete the wrong row "
                "(an identical repeat is accepted)"
            )
        out[rid] = label
        first_line.setdefault(rid, lineno)
    return out


def check_label(label: int, record_id: int, outcomes_name: str) -> int:
    """``label`` if it is 0 or 1, else :class:`BadRecord` ("bad outcome")."""
    if label not in (0, 1):
        raise BadRecord(
            "bad outcome", f"RecordID {record_id}: In-hospital_death = {label} in {outcomes_name}, expected 0 or 1"
        )
    return label


def outcomes_header() -> str:
    return "RecordID,SAPS-I,SOFA,Length_of_stay,Survival,In-hospital_death"
