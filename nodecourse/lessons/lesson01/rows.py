"""Ledger row of lesson 1: ``resnet-euler``."""

from __future__ import annotations

from dataclasses import asdict

import torch

from nodecourse.claims import Measurement, Threshold, claim
from nodecourse.lessons.lesson01.config import BASELINE_FACTOR, FULL, QUICK, ULPS
from nodecourse.lessons.lesson01.findings import ResnetEulerFindings
from nodecourse.lessons.lesson01.studies import resnet_vs_euler

__all__ = ["measure"]


@claim(
    id="resnet-euler",
    claim="A residual update z + f(z) is one Euler step with Δt = 1",
    source="Chen et al. 2018 (Neural ODEs), sec. 1; Haber & Ruthotto 2017",
    published="identical by construction",
    lesson="01",
    threshold=Threshold(
        f"max |ResNet − Euler| <= {ULPS} ulp of the output's scale, in float32 and float64, while the midpoint "
        f"baseline differs by more than {BASELINE_FACTOR:g} times that",
        kind="published",
        why="the published figure is exact identity; 100 ulp allows only the order of summation to differ",
    ),
)
def measure(quick: bool) -> Measurement:
    c = QUICK if quick else FULL
    runs = [resnet_vs_euler(c.dim, c.n_blocks, c.batch, dt, c.seed) for dt in (torch.float32, torch.float64)]
    f = ResnetEulerFindings.from_runs(runs)
    return Measurement(f.measured(), f.verdict, {"runs": [asdict(r) for r in runs]})
