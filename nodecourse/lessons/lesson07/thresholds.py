"""Lesson 7's thresholds, declared before anything is measured: published figures where the papers give one,
the course's own (and why) where they do not."""

from __future__ import annotations

from nodecourse.claims import Threshold

__all__ = [
    "ADAPTIVE",
    "DEQ_COST",
    "DEQ_INFER_COST",
    "DEQ_TRAIN_COST",
    "DIAL",
    "MEMORY_GROWTH",
    "MEMORY_REDUCTION",
    "MISMATCH",
    "PARITY",
    "PARITY_IMAGES",
    "TEST_IMAGES",
]

TEST_IMAGES = 450
"""Test images of every seed's digits split (1797 images, a quarter held out; ``tests/test_lesson07.py`` checks it)."""
PARITY_IMAGES = 9
"""The parity margin in test images (9 of 450: 2.0 points)."""
PARITY_SCALE = "MNIST"
"""Where the test errors the row quotes were measured (Chen et al.'s MNIST table): not run here."""
PARITY = Threshold(
    f"Chen et al.'s MNIST test errors (unmatched sizes, no DEQ) are not measurable here and decide nothing. "
    f"The analogue on the digits: each model's accuracy deficit to the ResNet (ResNet minus model, paired per "
    f"seed) <= {PARITY_IMAGES} test "
    f"images of {TEST_IMAGES} ({100 * PARITY_IMAGES / TEST_IMAGES:.1f} points), by the whole 95 % interval over seeds",
    kind="course",
    value=100 * PARITY_IMAGES / TEST_IMAGES,
    why="no matched-size comparison of the four is published (Chen et al.'s MNIST table has no DEQ, and its "
    "ResNet has 0.60 M parameters against the ODE-Net's 0.22 M), so the row compares at matched size what the "
    "course trains. The margin is a whole number of test images (one is 0.22 points), chosen from the spread "
    "known before this threshold was set: in the earlier full run (5 seeds, 30 epochs) the paired deficits of "
    "the models nearest the ResNet had 95 % half-widths of 0.6 to 1.2 points, so a margin under about 1.5 "
    "points leaves a model at parity undecided at 5 seeds; 9 images (2.0 points) is the course's 'about the "
    "same' on this split, below the 3-point deficit the course would call a different accuracy",
)
MEMORY_GROWTH = Threshold(
    "bytes saved for backward: neural ODE and DEQ equal within 2 % across three depths while their work grows; "
    "ResNet and unrolled block grow by equal positive steps (within 5 %)",
    kind="course",
    why="the published figure is a complexity class (O(1) vs O(L)), not a number; saved bytes are set by the "
    "graph (no seed noise), so the tolerances only absorb bookkeeping bytes (2 %) and unequal increments "
    "(5 %)",
)

CONSTANT_SLACK, LINEAR_SLACK = 0.02, 0.05


MISMATCH = Threshold(
    "unrolled block: >= 5 points lost at the other step count with the worst mean (per-seed drops, 95 % "
    "interval); DEQ: accuracy moves by <= 1 point under a 100x tighter solve (per-seed |change|, 95 % interval)",
    kind="course",
    value=5.0,
    why="Ott et al. and Bai et al. state no number for this: 5 points (about 22 test images) is a drop no one "
    "would call the same function; 1 point (4-5 images) is the course's 'the same' for a re-solve of the "
    "same weights",
)


MISMATCH_DEQ_SLACK = 1.0


ADAPTIVE = Threshold(
    "per-input NFE of the trained neural ODE (each test input solved on its own, dopri5 at the training "
    "tolerance) differ across inputs: max - min >= 1 evaluation, per seed, by the whole 95 % interval",
    kind="course",
    value=1.0,
    why="the paper gives no number for 'adapts its evaluation strategy to each input'; any difference in the "
    "work spent on two inputs is adaptation, and one evaluation is the smallest difference a solver can make",
)


ADAPTIVE_OTHER = Threshold(
    "the same test at the other test-time tolerances of the dial sweep (1e-1 ... 1e-6), the same trained models",
    kind="course",
    value=1.0,
    why="the paper names no tolerance for its claim; a reading beside the main one (the model as trained)",
)


DEQ_COST_SCALE = "WikiText-103 and ImageNet"
"""Where the DEQ's published cost figures were measured (a Transformer on WikiText-103, a multiscale DEQ on
ImageNet): not run here, the digits analogue is judged instead."""

SEVERAL_TIMES = 3.0
"""The course's reading of "several times slower": at least 3x (two would be "twice"; both published figures,
3.1x and over 4x, are 'several' by this reading)."""

DEQ_TRAIN_COST = Threshold(
    f"DEQ training-step time / ResNet's >= {SEVERAL_TIMES:g} (per seed: medians of interleaved repeats; over "
    "seeds, the median's order-statistic interval, 5 seeds at least: timing ratios are heavy-tailed)",
    kind="course",
    value=SEVERAL_TIMES,
    why="the claim says 'several times slower'; the course reads 'several' as at least 3x (two would be "
    "'twice'). Bai et al. 2021's 3.1x (table 1, a DEQ-Transformer on WikiText-103) is shown beside it",
)


DEQ_INFER_COST = Threshold(
    f"DEQ inference time / ResNet's >= {SEVERAL_TIMES:g} (per seed: medians of interleaved repeats; over seeds, "
    "the median's order-statistic interval, 5 seeds at least: timing ratios are heavy-tailed)",
    kind="course",
    value=SEVERAL_TIMES,
    why="the claim says 'several times slower'; the course reads 'several' as at least 3x. Bai et al. 2021's "
    "'over 4x slower than ResNet-101' (sec. 3.2, ImageNet) is shown beside it",
)


DEQ_COST = Threshold(
    f"the published figures (3.1x training time on WikiText-103, over 4x at inference on ImageNet) are not "
    f"measurable here. The analogue, the trained digits DEQ over the trained ResNet at matched parameters: "
    f"training-time ratio >= {SEVERAL_TIMES:g} and inference-time ratio >= {SEVERAL_TIMES:g}, each judged on the "
    "median over seeds by its order-statistic interval (timing ratios are heavy-tailed: one seed's run slowed "
    "by another program must not decide). Verdict: the published part and the analogue's two parts combined "
    "(the published part is never decided)",
    kind="course",
    value=SEVERAL_TIMES,
    why="the published ratios are a Transformer's and a multiscale DEQ's, on GPUs, against other explicit "
    "networks; a digits DEQ on this CPU says nothing about their size, only whether a DEQ is 'several times' "
    "slower than its matched explicit peer, which the course reads as at least 3x (two would be 'twice')",
)


MEMORY_SCALE = "WikiText-103"
"""Where the DEQ's published memory saving was measured (language models): not run here."""

MUCH_LESS = 0.5
"""The course's reading of "much less memory": at most half (a saving of 50 % or more), the same reading as
'far fewer' evaluations (at least a 2x saving) in lesson 6's ``anderson-vs-picard``."""

MEMORY_REDUCTION = Threshold(
    f"the published 'up to 88 %' (WikiText-103 language models) is not measurable here. The analogue, one "
    f"training step on digits: the trained DEQ against the explicit peer that does the same work, the weight-tied "
    f"block unrolled for as many steps as the DEQ's forward solve takes (its forward iterations per input, median "
    f"over seeds, rounded up): 1 - DEQ/peer training memory >= {MUCH_LESS:.0%}, read on the bytes saved for "
    f"backward and on the measured peak (95 % interval over seeds), both needed. The ResNet and unrolled peers at "
    f"4, 8 and 16 blocks/steps are shown beside it and decide nothing. Verdict: the published part and the "
    f"analogue's parts combined (the published part is never decided)",
    kind="course",
    value=MUCH_LESS,
    why="88 % is Bai et al.'s best case over large language models; an explicit peer's memory grows with its "
    "depth, so on a toy the saving can be made any size by choosing the peer's depth. The peer is therefore "
    "fixed by the DEQ itself: the same block applied as many times as the solve applies it, kept for backward "
    "(what a DEQ avoids storing). 'Much less' is read as at most half, the course's reading of 'far fewer' "
    "elsewhere (a 2x saving)",
)


DIAL = Threshold(
    "at some test-time tolerance looser than training's (10x or 100x): forward NFE >= 20 % lower AND test "
    "accuracy <= 1 point lower than at the training tolerance, per seed, each by the whole 95 % interval",
    kind="course",
    value=1.0,
    why="Chen et al. (sec. 3, fig. 3) state the dial without a number: fig. 3a plots solver error, not "
    "accuracy, against NFE; 1 point (4-5 test images) is the course's 'little accuracy lost', and a cost "
    "saving under a fifth is not worth turning a dial for (NFE: time is proportional to it, fig. 3b)",
)


DIAL_SAVING = 0.20
