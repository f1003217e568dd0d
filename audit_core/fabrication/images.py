"""Images with labels and a membership split: :class:`ImageData`, validated once (:func:`validate_images`).

Uploaded images (:mod:`audit_core.fabrication.image_files`) and the bundled sets
(:mod:`audit_core.fabrication.bundled`) end here: images NCHW float32 in [0, 1], int64
labels, and a role per image (member / evaluation non-member / reference pool, :func:`split_roles`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from audit_core.common import limits
from audit_core.common.errors import InputError

__all__ = ["ImageData", "LabelledImages", "split_roles", "validate_images", "with_model_classes"]


@dataclass(frozen=True)
class ImageData:
    """Images with labels and a membership split.

    Attributes
    ----------
    images : np.ndarray
        float32, shape (n, channels, height, width), values in [0, 1].
    labels : np.ndarray
        int64 class labels in ``0 .. n_classes - 1``.
    role : np.ndarray
        int8 per image: 1 = member (trained on by the audited model), 0 = evaluation
        non-member, 2 = reference pool (non-members set aside to train the reference
        models of LiRA / RMIA; never scored).
    n_classes : int
    name : str
    """

    images: np.ndarray
    labels: np.ndarray
    role: np.ndarray
    n_classes: int
    name: str

    @property
    def shape(self) -> tuple[int, int, int]:
        """(channels, height, width) of one image."""
        return tuple(int(s) for s in self.images.shape[1:])  # type: ignore[return-value]

    @property
    def members(self) -> np.ndarray:
        """Indices of members."""
        return np.flatnonzero(self.role == 1)

    @property
    def non_members(self) -> np.ndarray:
        """Indices of evaluation non-members."""
        return np.flatnonzero(self.role == 0)

    @property
    def reference(self) -> np.ndarray:
        """Indices of the reference pool."""
        return np.flatnonzero(self.role == 2)

    def group(self, rows: np.ndarray) -> LabelledImages:
        """The images at ``rows`` (indices, e.g. :attr:`members`) with their labels."""
        return LabelledImages(self.images[rows], self.labels[rows])


class LabelledImages(NamedTuple):
    """Images (n, channels, height, width) with their labels: one group the audit attacks or scores."""

    images: np.ndarray
    labels: np.ndarray

    def take(self, rows: np.ndarray) -> LabelledImages:
        """The images at ``rows`` (positions in this group) with their labels."""
        return LabelledImages(self.images[rows], self.labels[rows])


def _as_nchw(images: np.ndarray) -> np.ndarray:
    """Accept (n, h, w), (n, h, w, c) with c in {1, 3} or (n, c, h, w)."""
    if images.ndim == 3:
        return images[:, None]
    if images.ndim == 4:
        if images.shape[1] in (1, 3):
            return images
        if images.shape[-1] in (1, 3):
            return np.transpose(images, (0, 3, 1, 2))
    raise InputError(
        f"Images have shape {images.shape}; expected (n, height, width), (n, height, width, "
        "channels) or (n, channels, height, width) with 1 or 3 channels."
    )


def validate_images(
    images: np.ndarray, labels: np.ndarray, *, n_classes: int | None = None
) -> tuple[np.ndarray, np.ndarray, int]:
    """Check and normalise images and labels; return (images NCHW float32, labels, n_classes).

    The sizes are bounded in :mod:`audit_core.common.limits` (images, side, classes), each
    checked before any copy of the data is made.

    Raises
    ------
    InputError
        Different lengths, scalar or non-integer or out-of-range labels, non-finite
        pixels, pixels outside [0, 1], too few or too many images, images smaller
        or larger than the side bounds, more classes than supported.
    """
    images, labels = np.asarray(images), np.asarray(labels)
    _check_counts(images, labels)
    return (_pixels(images), *_class_indices(labels, n_classes))


def _check_counts(images: np.ndarray, labels: np.ndarray) -> None:
    """Numeric arrays, one flat label per image, an image count within the bounds."""
    if images.dtype == object or labels.dtype == object:
        raise InputError("Images and labels must be numeric arrays, not Python objects.")
    if labels.ndim != 1:
        raise InputError(
            f"The labels have shape {labels.shape}; give them as a flat list with one integer label per image."
        )
    if images.ndim == 0 or images.shape[0] != labels.shape[0]:
        n_img = images.shape[0] if images.ndim else 0
        raise InputError(f"There are {n_img} images but {labels.shape[0]} labels; give exactly one integer label per image.")
    if images.shape[0] < limits.MIN_IMAGES:
        raise InputError(f"Only {images.shape[0]} images were given; the audit needs at least {limits.MIN_IMAGES}.")
    if images.shape[0] > limits.MAX_IMAGES:
        raise InputError(f"{images.shape[0]:,} images is over the limit of {limits.MAX_IMAGES:,}; upload a sample.")
    if not np.issubdtype(images.dtype, np.number) or np.issubdtype(images.dtype, np.complexfloating):
        raise InputError("Images must hold numbers (pixel values in [0, 1]).")


def _pixels(images: np.ndarray) -> np.ndarray:
    """The images NCHW float32: sides and pixel count within the bounds, every value finite and in [0, 1]."""
    images = _as_nchw(images)
    side = limits.IMAGE_SIDE
    height, width = images.shape[2], images.shape[3]
    if not (side.low <= height <= side.high and side.low <= width <= side.high):
        raise InputError(
            f"The images are {height}x{width} pixels; height and width must each be from {side.low:.0f} to "
            f"{side.high:.0f} (resize them)."
        )
    if images.size > limits.MAX_PIXEL_VALUES:
        raise InputError(
            f"The images hold {images.size:,} pixel values; at most {limits.MAX_PIXEL_VALUES:,} are accepted "
            "(use fewer or smaller images)."
        )
    images = images.astype(np.float32)
    if not np.all(np.isfinite(images)):
        raise InputError("Some pixel values are NaN or infinite; replace them with values in [0, 1].")
    lo, hi = float(images.min()), float(images.max())
    if lo < 0.0 or hi > 1.0:
        raise InputError(
            f"Pixel values range from {lo:g} to {hi:g}; scale them to [0, 1] (for 8-bit images divide by 255)."
        )
    return images


def _class_indices(labels: np.ndarray, n_classes: int | None) -> tuple[np.ndarray, int]:
    """The labels as int64 class indices and the number of classes (``n_classes``, else the largest label + 1, at
    least 2): whole numbers from 0, below ``n_classes`` or the bound on classes."""
    if np.issubdtype(labels.dtype, np.bool_) or not np.issubdtype(labels.dtype, np.number):
        raise InputError("Labels must be whole numbers 0, 1, 2, ... (one class index per image).")
    if np.issubdtype(labels.dtype, np.floating) or np.issubdtype(labels.dtype, np.complexfloating):
        with np.errstate(invalid="ignore"):
            whole = np.all(np.isfinite(labels)) and np.all(labels == np.round(labels))
        if not whole or np.issubdtype(labels.dtype, np.complexfloating):
            raise InputError("Labels must be whole numbers 0, 1, 2, ... (one class index per image).")
    max_classes = limits.MAX_CLASSES if n_classes is None else int(n_classes)
    low, high = labels.min(), labels.max()
    shown = (lambda v: f"{int(v):,}") if np.issubdtype(labels.dtype, np.integer) else (lambda v: f"{float(v):,g}")
    if low < 0 or high >= max_classes:
        if n_classes is None:
            raise InputError(
                f"Labels range from {shown(low)} to {shown(high)}; class indices must lie in 0..{limits.MAX_CLASSES - 1} "
                f"(at most {limits.MAX_CLASSES:,} classes)."
            )
        raise InputError(
            f"Labels range from {shown(low)} to {shown(high)} but the model has {max_classes} classes; "
            f"labels must lie in 0..{max_classes - 1}."
        )
    labels = labels.astype(np.int64)
    k = int(labels.max()) + 1 if n_classes is None else int(n_classes)
    return labels, max(k, 2)


def split_roles(
    is_member: np.ndarray, *, reference_fraction: float = 0.5, seed: int
) -> np.ndarray:
    """Split non-members into evaluation non-members (0) and a reference pool (2).

    Members keep role 1. ``reference_fraction`` of the non-members (at random) go to the
    reference pool used to train offline LiRA / RMIA reference models.
    """
    is_member = np.asarray(is_member)
    if is_member.ndim != 1:
        raise InputError("The member mask must be one 0/1 value per image.")
    if is_member.dtype != bool:
        if not np.all(np.isin(is_member, (0, 1))):
            raise InputError("The member mask must hold only 0 (non-member) and 1 (member).")
        is_member = is_member.astype(bool)
    n_mem = int(is_member.sum())
    if n_mem == 0 or n_mem == is_member.size:
        which = "members" if n_mem else "non-members"
        raise InputError(
            f"The member mask marks every image as one of the {which}; the audit needs both members "
            "(mask 1) and non-members (mask 0)."
        )
    if min(n_mem, is_member.size - n_mem) < 10:
        raise InputError("The audit needs at least 10 members and 10 non-members.")
    rng = np.random.default_rng(seed)
    role = np.where(is_member, 1, 0).astype(np.int8)
    non = np.flatnonzero(~is_member)
    n_ref = round(reference_fraction * non.size)
    if n_ref:
        role[rng.choice(non, size=n_ref, replace=False)] = 2
    return role



def with_model_classes(data: ImageData, n_classes: int) -> ImageData:
    """Give ``data`` the model's number of classes; refuse labels the model cannot output."""
    if int(data.labels.max()) >= n_classes:
        raise InputError(
            f"Labels go up to {int(data.labels.max())} but the model has {n_classes} classes; "
            f"labels must lie in 0..{n_classes - 1}."
        )
    return dataclasses.replace(data, n_classes=int(n_classes))
