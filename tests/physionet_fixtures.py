"""Small synthetic PhysioNet sets for the tests (written by the tests, never the real data)."""

from __future__ import annotations

import warnings

import pytest

from nodecourse.data import physionet


def synthetic_set(directory, n_patients: int, *, seed: int, quantization: float):
    """A raw synthetic set of ``n_patients`` on a grid of ``quantization`` hours, cached under ``directory``."""
    src = physionet.synthetic(n_patients, seed=seed, directory=directory)
    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as mp:
        warnings.simplefilter("ignore")
        mp.setenv("NODECOURSE_CACHE", str(directory / "cache"))
        return physionet.load(path=src.directory, quantization=quantization, progress=False, verbose=False)
