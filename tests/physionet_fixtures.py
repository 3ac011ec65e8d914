"""Small synthetic PhysioNet sets for the tests (written by the tests, never the real data)."""

from __future__ import annotations

import warnings

import pytest

from nodecourse.data import physionet
from nodecourse.data.physionet import _sources as sources

SET_A = sources.SHARED_DIR
"""Where the tests that need the real PhysioNet 2012 set A read it: ``../shared/physionet2012`` beside the
checkout, the copy the course's own runs use (a clone elsewhere has none: those tests skip, saying so)."""

needs_set_a = pytest.mark.skipif(
    not sources.has_set(SET_A, "set-a"),
    reason=f"needs the real PhysioNet 2012 set A (Outcomes-a.txt and set-a.tar.gz or set-a/) in {SET_A}, "
    "../shared/physionet2012 beside the checkout, and it is not there",
)
"""Skip a test that reads the real set A when ``../shared/physionet2012`` does not hold it."""


def synthetic_set(directory, n_patients: int, *, seed: int, quantization: float):
    """A raw synthetic set of ``n_patients`` on a grid of ``quantization`` hours, cached under ``directory``."""
    src = physionet.synthetic(n_patients, seed=seed, directory=directory)
    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as mp:
        warnings.simplefilter("ignore")
        mp.setenv("NODECOURSE_CACHE", str(directory / "cache"))
        return physionet.load(path=src.directory, quantization=quantization, progress=False, verbose=False)
