"""Uploaded images: an ``.npz`` archive or a folder of PNGs with its ``labels.csv``, each size checked before it is read.

An ``.npz`` is read member by member: the shape and dtype each ``.npy`` header declares are
checked (:mod:`audit_core.common.limits`) before a byte of the array is decompressed, and
objects (pickles) are never loaded. The pixels and labels are then validated once
(:func:`audit_core.fabrication.images.validate_images`).
"""

from __future__ import annotations

import csv
import io
import math
import tokenize
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import numpy as np

from audit_core.common import limits
from audit_core.common.errors import InputError
from audit_core.fabrication.images import ImageData, split_roles, validate_images

__all__ = ["load_npz", "load_npz_images", "load_png_folder"]

_NPZ_KEYS = ("images", "labels", "is_member")
_NPY_MAGIC = b"\x93NUMPY"


def _npy_header(stream: io.IOBase | IO[bytes], key: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype declared by one .npy member, read from its header alone."""
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
    except (ValueError, OSError, EOFError, SyntaxError, tokenize.TokenError, zipfile.BadZipFile) as exc:
        reason = "its header is garbled" if isinstance(exc, SyntaxError | tokenize.TokenError) else exc
        raise InputError(f"The array '{key}' in the .npz file is not a valid NumPy array ({reason}).") from None
    return tuple(int(d) for d in shape), dtype


def _check_declared(key: str, shape: tuple[int, ...], dtype: np.dtype, stored: int) -> None:
    """Refuse an array by what its header declares, before a byte of it is read."""
    if dtype.hasobject:
        raise InputError(
            "The .npz file holds Python objects (pickles), which are never loaded; save plain numeric arrays."
        )
    if dtype.kind not in "biuf":
        raise InputError(f"The array '{key}' holds {dtype} values; it must hold numbers.")
    n_values = math.prod(shape)
    nbytes = n_values * dtype.itemsize
    if shape and key in ("labels", "is_member") and shape[0] > limits.MAX_IMAGES:
        raise InputError(f"The array '{key}' has {shape[0]:,} entries; at most {limits.MAX_IMAGES:,} images are accepted.")
    if key == "images":
        if shape and shape[0] > limits.MAX_IMAGES:
            raise InputError(f"The .npz file holds {shape[0]:,} images; at most {limits.MAX_IMAGES:,} are accepted.")
        if n_values > limits.MAX_PIXEL_VALUES:
            raise InputError(
                f"The images hold {n_values:,} pixel values; at most {limits.MAX_PIXEL_VALUES:,} are accepted "
                "(use fewer or smaller images)."
            )
    if nbytes > limits.MAX_ARRAY_MB * 1024 * 1024:
        raise InputError(
            f"The array '{key}' would take {nbytes / 2**20:,.0f} MB; at most {limits.MAX_ARRAY_MB:,} MB are accepted."
        )
    if nbytes > stored:
        raise InputError(
            f"The array '{key}' claims shape {shape} but the file holds only {stored:,} bytes of it; "
            "the file is truncated or forged."
        )


def _load_npz_arrays(source: str | Path | bytes | io.IOBase, keys: Sequence[str] = _NPZ_KEYS) -> dict[str, np.ndarray]:
    """Read only ``keys`` from an .npz, each after its declared size and type have been checked.

    Nothing is decompressed before the checks, so a small archive that inflates to
    gigabytes (a zip bomb) or a header claiming 10^12 images is refused at once.
    """
    if isinstance(source, bytes | bytearray):
        source = io.BytesIO(source)
    opened = open(source, "rb") if isinstance(source, str | Path) else source  # closed below
    try:
        head = opened.read(8)
        opened.seek(0)
        if head.startswith(_NPY_MAGIC):
            raise InputError(
                "The file is a single .npy array, not an .npz archive; save the arrays together with "
                "np.savez('data.npz', images=..., labels=..., is_member=...)."
            )
        if not head.startswith(b"PK"):
            raise InputError("The file is not a NumPy .npz archive (a zip of .npy arrays); save it with np.savez.")
        try:
            archive = zipfile.ZipFile(opened)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            raise InputError(f"The file could not be read as a NumPy .npz archive ({exc}).") from None
        out: dict[str, np.ndarray] = {}
        with archive:
            names = set(archive.namelist())
            missing = [k for k in keys if f"{k}.npy" not in names]
            if missing:
                needs = ", ".join(repr(k) for k in keys[:-1]) + f" and {keys[-1]!r}"
                raise InputError(f"The .npz file lacks the array(s) {', '.join(missing)}; it needs {needs}.")
            for key in keys:
                info = archive.getinfo(f"{key}.npy")
                try:
                    with archive.open(info) as member:
                        shape, dtype = _npy_header(member, key)
                        _check_declared(key, shape, dtype, info.file_size)
                    with archive.open(info) as member:
                        out[key] = np.lib.format.read_array(member, allow_pickle=False)
                except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, tokenize.TokenError) as exc:
                    if isinstance(exc, InputError):
                        raise
                    raise InputError(f"The array '{key}' in the .npz file could not be read ({exc}).") from None
        return out
    finally:
        if opened is not source:
            opened.close()


def load_npz(
    source: str | Path | bytes | io.IOBase,
    *,
    n_classes: int | None = None,
    reference_fraction: float = 0.5,
    seed: int = 0,
    name: str = "upload",
) -> ImageData:
    """Read images + labels + member mask from a ``.npz`` (keys ``images``, ``labels``, ``is_member``).

    ``np.load`` runs with ``allow_pickle=False``: an archive holding objects is refused.
    Half of the non-members (``reference_fraction``) become the reference pool.
    """
    arrays = _load_npz_arrays(source)
    images, labels, k = validate_images(arrays["images"], arrays["labels"], n_classes=n_classes)
    mask = np.asarray(arrays["is_member"]).reshape(-1)
    if mask.size != labels.size:
        raise InputError(f"The member mask has {mask.size} entries for {labels.size} images; give one per image.")
    role = split_roles(mask, reference_fraction=reference_fraction, seed=seed)
    return ImageData(images=images, labels=labels, role=role, n_classes=k, name=name)


def load_npz_images(
    source: str | Path | bytes | io.IOBase, *, n_classes: int | None = None
) -> tuple[np.ndarray, np.ndarray, int]:
    """Images and labels without a member mask (keys ``images`` and ``labels``), checked as :func:`load_npz` checks them.

    Returns ``(images NCHW float32, labels, n_classes)``
    (:func:`~audit_core.fabrication.images.validate_images`); the model audit's members and population
    come as two such files (their membership is which file they are in).
    """
    arrays = _load_npz_arrays(source, keys=("images", "labels"))
    return validate_images(arrays["images"], arrays["labels"], n_classes=n_classes)


def load_png_folder(
    folder: str | Path,
    *,
    csv_name: str = "labels.csv",
    n_classes: int | None = None,
    reference_fraction: float = 0.5,
    seed: int = 0,
) -> ImageData:
    """Read a folder of PNGs plus a CSV with columns ``file``, ``label``, ``is_member``."""
    from PIL import Image

    folder = Path(folder)
    table = folder / csv_name
    if not table.exists():
        raise InputError(f"No {csv_name} in {folder}; add a CSV with columns file, label, is_member.")
    with table.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if not rows or not {"file", "label", "is_member"} <= set(rows[0]):
        raise InputError(f"{csv_name} must have the columns file, label and is_member.")
    images, labels, mask = [], [], []
    for row in rows:
        path = (folder / row["file"]).resolve()
        if folder.resolve() not in path.parents or not path.exists():
            raise InputError(f"Image {row['file']!r} listed in {csv_name} is not in the folder.")
        with Image.open(path) as im:
            arr = np.asarray(im.convert("L" if im.mode in ("L", "1", "P", "I") else "RGB"), dtype=np.float32) / 255.0
        images.append(arr)
        try:
            labels.append(int(row["label"]))
            mask.append(int(row["is_member"]))
        except ValueError:
            raise InputError(f"Row for {row['file']!r}: label and is_member must be whole numbers.") from None
    if len({a.shape for a in images}) != 1:
        raise InputError("The PNG images have different sizes; resize them to one size.")
    x, y, k = validate_images(np.stack(images), np.asarray(labels), n_classes=n_classes)
    role = split_roles(np.asarray(mask), reference_fraction=reference_fraction, seed=seed)
    return ImageData(images=x, labels=y, role=role, n_classes=k, name=folder.name)
