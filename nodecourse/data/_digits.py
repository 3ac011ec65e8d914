"""The 8x8 handwritten digits that ship with scikit-learn, as tensors.

``sklearn.datasets.load_digits`` needs no download: 1797 images of 8x8 pixels
(values 0..16), ten classes. :func:`load_digits` splits them with a seeded,
stratified split, standardises the pixels with statistics of the *training*
split only, and returns tensors on the device and dtype you ask for.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = [
    "N_CLASSES",
    "N_FEATURES",
    "DigitsSplit",
    "load_digits",
]

N_FEATURES = 64
N_CLASSES = 10


@dataclass
class DigitsSplit:
    """A train/test split of the digits.

    Attributes:
        x_train: ``(n_train, 64)`` standardised pixels.
        y_train: ``(n_train,)`` int64 labels 0..9.
        x_test: ``(n_test, 64)`` standardised with the training statistics.
        y_test: ``(n_test,)`` int64 labels.
        mean, std: ``(64,)`` the training statistics used for scaling.
    """

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    mean: torch.Tensor
    std: torch.Tensor

    @property
    def n_features(self) -> int:
        return self.x_train.shape[1]

    @property
    def n_classes(self) -> int:
        return N_CLASSES

    def __repr__(self) -> str:
        return (
            f"DigitsSplit(train={tuple(self.x_train.shape)}, test={tuple(self.x_test.shape)}, "
            f"dtype={self.x_train.dtype}, device={self.x_train.device})"
        )


def load_digits(
    *,
    test_size: float = 0.25,
    seed: int = 0,
    n_samples: int | None = None,
    device: str | torch.device | None = "cpu",
    dtype: torch.dtype = torch.float32,
) -> DigitsSplit:
    """Load scikit-learn's digits, split (stratified, seeded) and standardise them.

    Args:
        test_size: fraction of the images held out for testing, in (0, 1).
        seed: seed of the split (and of the subsample when ``n_samples`` is set).
        n_samples: use only this many images (a stratified subsample, for quick
            mode); ``None`` uses all 1797.
        device: where the tensors live (``"cpu"``, ``"cuda"``, ``"mps"``, ``"auto"``).
        dtype: a floating dtype for the pixels; labels are always int64.

    Returns:
        A :class:`DigitsSplit`. Pixels are scaled with the training split's
        mean and standard deviation (never the test split's), so no test
        information leaks into training.
    """
    from sklearn import datasets
    from sklearn.model_selection import train_test_split

    from nodecourse.config import resolve_device

    if not isinstance(test_size, (int, float)) or not 0.0 < float(test_size) < 1.0:
        raise ValueError(f"test_size={test_size!r}: give a fraction strictly between 0 and 1, e.g. 0.25")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype={dtype!r}: give a floating dtype such as torch.float32 or torch.float64")
    dev = resolve_device(device)

    bunch = datasets.load_digits()
    x, y = bunch.data, bunch.target
    if n_samples is not None:
        if not isinstance(n_samples, int) or not 4 * N_CLASSES <= n_samples <= len(y):
            raise ValueError(
                f"n_samples={n_samples!r}: give an int between {4 * N_CLASSES} and {len(y)}, or None for all"
            )
        if n_samples < len(y):
            x, _, y, _ = train_test_split(x, y, train_size=n_samples, stratify=y, random_state=seed)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=float(test_size), stratify=y, random_state=seed)
    mean = x_tr.mean(axis=0)
    # Corner pixels are always 0 in training; a floor on std keeps them at 0 instead of NaN.
    std = x_tr.std(axis=0).clip(min=1.0)

    def as_x(a):
        return torch.as_tensor((a - mean) / std, dtype=dtype, device=dev)

    def as_y(a):
        return torch.as_tensor(a, dtype=torch.int64, device=dev)

    return DigitsSplit(
        as_x(x_tr),
        as_y(y_tr),
        as_x(x_te),
        as_y(y_te),
        torch.as_tensor(mean, dtype=dtype, device=dev),
        torch.as_tensor(std, dtype=dtype, device=dev),
    )
