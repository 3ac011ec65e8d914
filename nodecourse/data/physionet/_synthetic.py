"""A synthetic stand-in for PhysioNet 2012, written in the same file format.

Used when the real data is nowhere to be found (a learner on Binder). Each
patient has a hidden severity ``s ~ N(0, 1)``; mortality is a logistic function
of severity and age (about 14 % deaths, as in set A); severity shifts a dozen
variables, increasingly over the 48 hours, and makes labs more frequent.
Observation counts per variable follow set A's averages. It is a teaching
fixture with a learnable signal, not a model of ICU physiology: numbers
measured on it say nothing about the real benchmark.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from nodecourse.data.physionet._records import VARIABLES, outcomes_header

# name: (mean, sd, observations per patient in set A, severity effect in sd units)
PROFILE: dict[str, tuple[float, float, float, float]] = {
    "Albumin": (2.9, 0.65, 0.6, -0.4),
    "ALP": (116, 60, 0.77, 0.0),
    "ALT": (150, 120, 0.8, 0.2),
    "AST": (180, 150, 0.8, 0.3),
    "Bilirubin": (1.8, 1.5, 0.8, 0.3),
    "BUN": (27, 15, 2.5, 0.6),
    "Cholesterol": (156, 45, 0.08, 0.0),
    "Creatinine": (1.5, 0.9, 2.5, 0.5),
    "DiasABP": (59, 12, 36, -0.3),
    "FiO2": (0.55, 0.15, 7.4, 0.4),
    "GCS": (11.4, 3.5, 14.4, -0.9),
    "Glucose": (141, 50, 2.3, 0.2),
    "HCO3": (23, 4.5, 2.4, -0.4),
    "HCT": (30.7, 5, 3.6, -0.1),
    "HR": (87, 15, 56, 0.4),
    "K": (4.1, 0.6, 2.7, 0.2),
    "Lactate": (2.9, 2.0, 2.0, 0.7),
    "Mg": (2.0, 0.4, 2.5, 0.0),
    "MAP": (80, 14, 36, -0.4),
    "MechVent": (1.0, 0.0, 7.8, 0.0),
    "Na": (139, 5, 2.4, 0.1),
    "NIDiasABP": (58, 13, 24, -0.2),
    "NIMAP": (77, 13, 23.7, -0.3),
    "NISysABP": (119, 21, 24, -0.3),
    "PaCO2": (40, 8, 5.1, 0.0),
    "PaO2": (148, 70, 5.1, -0.2),
    "pH": (7.39, 0.07, 5.4, -0.4),
    "Platelets": (190, 95, 2.6, -0.3),
    "RespRate": (19.6, 5, 13.8, 0.4),
    "SaO2": (96.6, 3.5, 2.0, -0.2),
    "SysABP": (119, 22, 36, -0.3),
    "Temp": (37.0, 0.8, 20.6, 0.1),
    "TroponinI": (7, 10, 0.11, 0.2),
    "TroponinT": (1.2, 2.5, 0.53, 0.2),
    "Urine": (116, 100, 33, -0.5),
    "WBC": (12.7, 6, 2.3, 0.3),
    "Weight": (83, 23, 30.6, 0.0),
}
_LIMITS = {"GCS": (3, 15), "pH": (6.8, 7.8), "SaO2": (50, 100), "FiO2": (0.21, 1.0), "MechVent": (1, 1)}
assert set(PROFILE) == set(VARIABLES)


def write_synthetic(directory: Path, set_name: str = "set-a", n_patients: int = 4000, seed: int = 0) -> Path:
    """Write ``n_patients`` record files and an outcomes file under ``directory``; return it.

    Layout as PhysioNet's: ``directory/set-a/NNNNNN.txt`` and ``directory/Outcomes-a.txt``.
    """
    if isinstance(n_patients, bool) or not isinstance(n_patients, int) or n_patients < 1:
        raise ValueError(f"n_patients={n_patients!r}: give a positive integer")
    rng = np.random.default_rng(seed)
    folder = Path(directory) / set_name
    folder.mkdir(parents=True, exist_ok=True)
    first_id = 132539 if set_name == "set-a" else 142675
    outcome_rows = [outcomes_header()]
    for i in range(n_patients):
        rid = first_id + i
        s = rng.standard_normal()
        age = float(np.clip(rng.normal(64, 17), 15, 90))
        logit = -2.2 + 1.3 * s + 0.03 * (age - 64)
        death = int(rng.random() < 1 / (1 + math.exp(-logit)))
        lines = [
            "Time,Parameter,Value",
            f"00:00,RecordID,{rid}",
            f"00:00,Age,{age:.0f}",
            f"00:00,Gender,{int(rng.random() < 0.56)}",
            f"00:00,Height,{rng.normal(170, 10):.1f}" if rng.random() < 0.53 else "00:00,Height,-1",
            f"00:00,ICUType,{rng.integers(1, 5)}",
            f"00:00,Weight,{rng.normal(83, 23):.1f}" if rng.random() < 0.92 else "00:00,Weight,-1",
        ]
        rows: list[tuple[int, str, float]] = []
        for name, (mean, sd, per_patient, effect) in PROFILE.items():
            rate = per_patient * math.exp(0.15 * s if per_patient < 8 else 0.0)
            n = rng.poisson(rate)
            minutes = np.sort(rng.integers(1, 48 * 60 + 1, size=n))
            progress = 0.5 + minutes / (48 * 60)  # severity shows more as the stay goes on
            vals = mean + sd * (effect * s * progress + 0.6 * rng.standard_normal(n))
            lo, hi = _LIMITS.get(name, (0.0, math.inf))
            vals = np.clip(vals, lo, hi)
            rows += [(int(m), name, float(v)) for m, v in zip(minutes, vals)]
        rows.sort(key=lambda r: r[0])
        lines += [f"{m // 60:02d}:{m % 60:02d},{name},{v:.4g}" for m, name, v in rows]
        (folder / f"{rid}.txt").write_text("\n".join(lines) + "\n")
        outcome_rows.append(f"{rid},-1,-1,-1,-1,{death}")
    (Path(directory) / f"Outcomes-{set_name[-1]}.txt").write_text("\n".join(outcome_rows) + "\n")
    return Path(directory)
