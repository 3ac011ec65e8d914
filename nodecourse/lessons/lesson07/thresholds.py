"""Lesson 7's thresholds, declared before anything is measured: published figures where the papers give one,
the course's own (and why) where they do not."""

from __future__ import annotations

from nodecourse.claims import Threshold

TEST_IMAGES = 450
"""Test images of every seed's digits split (1797 images, a quarter held out; ``tests/test_lesson07.py`` checks it)."""
PARITY_IMAGES = 9
"""The parity margin in test images (9 of 450: 2.0 points)."""
PARITY = Threshold(
    f"each model's accuracy deficit to the ResNet (ResNet minus model, paired per seed) <= {PARITY_IMAGES} test "
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


DEQ_TRAIN_COST = Threshold(
    "DEQ training-step time / ResNet's >= 3.1 (per seed: medians of interleaved repeats; over seeds, the median's "
    "order-statistic interval, 5 seeds at least: timing ratios are heavy-tailed)",
    kind="published",
    value=3.1,
    why="Bai et al. 2021, table 1: DEQ-Transformer t_train 3.1x a Transformer-XL",
)


DEQ_INFER_COST = Threshold(
    "DEQ inference time / ResNet's >= 4 (per seed: medians of interleaved repeats; over seeds, the median's "
    "order-statistic interval, 5 seeds at least: timing ratios are heavy-tailed)",
    kind="published",
    value=4.0,
    why="Bai et al. 2021, sec. 3.2: a multiscale DEQ is over 4x slower than ResNet-101 on ImageNet",
)


DEQ_COST = Threshold(
    f"training-time ratio >= {DEQ_TRAIN_COST.value:g} (Bai et al. 2021, table 1) and inference-time ratio >= "
    f"{DEQ_INFER_COST.value:g} (sec. 3.2), DEQ over the ResNet at matched parameters, each judged on the median over "
    "seeds by its order-statistic interval (timing ratios are heavy-tailed: one seed's run slowed by another "
    "program must not decide)",
    kind="published",
)


MEMORY_REDUCTION = Threshold(
    "best case over the declared explicit peers (ResNet at matched parameters, and the unrolled block, each "
    "at 4, 8 and 16 blocks/steps): 1 - DEQ/peer training memory >= 88 %, read on the bytes saved for backward "
    "and on the measured peak (95 % interval over seeds)",
    kind="published",
    value=0.88,
    why="Bai et al. 2019: 'up to 88 %' less memory than explicit peers (the best case of its comparisons)",
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
