"""Lesson 9's declared settings: the course models the audit runs on, and the PhysioNet shift split."""

from __future__ import annotations

__all__ = [
    "COURSE_MODELS",
    "ICU_NAMES",
    "PHYSIONET_EPOCHS",
    "PHYSIONET_HIDDEN",
    "PHYSIONET_QUICK_PATIENTS",
    "PHYSIONET_QUICK_SHIFT",
    "SHIFT_ICU_TYPE",
    "TRAIN_ICU_TYPES",
]

COURSE_MODELS = ("digits-ode", "digits-deq", "physionet-odernn")
ICU_NAMES = {1: "coronary care", 2: "cardiac surgery recovery", 3: "medical", 4: "surgical"}
TRAIN_ICU_TYPES = (1, 2, 4)
SHIFT_ICU_TYPE = 3
PHYSIONET_QUICK_PATIENTS = 600  # training-unit patients in quick mode (lesson 5's quick size)
PHYSIONET_QUICK_SHIFT = 200  # shifted patients in quick mode
PHYSIONET_EPOCHS = {"quick": 3, "full": 20}  # `nodecourse physionet`'s budgets
PHYSIONET_HIDDEN = {"quick": 32, "full": 64}
