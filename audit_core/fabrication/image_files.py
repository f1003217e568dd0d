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
import os
import stat
import tokenize
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import numpy as np

from audit_core.common import limits
from audit_core.common.errors import InputError
from audit_core.common.model_files import MAX_ZIP_MEMBERS, zip_members
from audit_core.fabrication.images import ImageData, split_roles, validate_images

__all__ = ["load_npz", "load_npz_images", "load_png_folder", "png_folder_files"]

_NPZ_KEYS = ("images", "labels", "is_member")
_NPY_MAGIC = b"\x93NUMPY"
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


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
        opened.seek(0, io.SEEK_END)
        opened.seek(max(0, opened.tell() - 65_557))
        declared = zip_members(opened.read())
        opened.seek(0)
        if declared is not None and declared > MAX_ZIP_MEMBERS:
            raise InputError(f"The .npz file is a zip of {declared:,} members; it needs three arrays (at most "
                             f"{MAX_ZIP_MEMBERS:,} members are accepted).")  # fmt: skip
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
    """Read a folder of PNGs plus a CSV with columns ``file``, ``label``, ``is_member``.

    Everything in the folder is the user's and may be hostile, so each step is bounded and
    refuses in one sentence: ``labels.csv`` must be a regular UTF-8 CSV file of at most
    :data:`~audit_core.common.limits.MAX_LABELS_MB`, every row a file, a label and a mask, at most
    :data:`~audit_core.common.limits.MAX_IMAGES` rows (counted before any image is opened); each
    listed image a regular file inside the folder (no link out of it, no folder, FIFO or device),
    at most :data:`~audit_core.common.limits.MAX_PNG_MB`, read as PNG only (no other decoder), its
    declared size checked against the side bounds before its pixels are decompressed (a 30000x30000
    bomb is refused from its header), and every pixel value counted against
    :data:`~audit_core.common.limits.MAX_PIXEL_VALUES`. A PNG that does not decode (truncated, a
    broken IDAT stream, text named ``.png``) names its file.
    """
    folder = Path(folder)
    rows = _label_rows(folder, csv_name)
    images, labels, mask = [], [], []
    values = 0
    for line, (file, label, member) in rows:
        path = _listed_image(folder, file, csv_name, line)
        arr = _read_png(path, file)
        values += arr.size
        if values > limits.MAX_PIXEL_VALUES:
            raise InputError(f"The PNG images hold more than {limits.MAX_PIXEL_VALUES:,} pixel values; use fewer or "
                             "smaller images.")  # fmt: skip
        images.append(arr)
        try:
            labels.append(int(label))
            mask.append(int(member))
        except ValueError:
            raise InputError(f"Row {line} of {csv_name} ({_shown(file)}): label and is_member must be whole "
                             "numbers.") from None  # fmt: skip
    if len({a.shape for a in images}) != 1:
        raise InputError("The PNG images have different sizes or colour modes; give them one size and one mode.")
    x, y, k = validate_images(np.stack(images), np.asarray(labels), n_classes=n_classes)
    role = split_roles(np.asarray(mask), reference_fraction=reference_fraction, seed=seed)
    return ImageData(images=x, labels=y, role=role, n_classes=k, name=folder.name)


def png_folder_files(folder: str | Path, *, csv_name: str = "labels.csv") -> list[Path]:
    """The files a PNG folder's CSV lists, in its order, each checked as :func:`load_png_folder` checks it (for the
    report's SHA-256 over the CSV and the images)."""
    folder = Path(folder)
    return [_listed_image(folder, file, csv_name, line) for line, (file, _, _) in _label_rows(folder, csv_name)]


def _shown(name: str, limit: int = 60) -> str:
    """A file name from the CSV, quoted, cut, as one line."""
    text = repr(name)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def _regular_file(path: Path) -> os.stat_result | None:
    """``os.stat`` of ``path`` (links followed), None when there is nothing there or it cannot be reached."""
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def _label_rows(folder: Path, csv_name: str) -> list[tuple[int, tuple[str, str, str]]]:
    """``(line, (file, label, is_member))`` for every row of the folder's CSV, each checked; nothing is opened yet."""
    table = folder / csv_name
    st = _regular_file(table)
    if st is None:
        raise InputError(f"No {csv_name} in {folder.name}; add a CSV with columns file, label, is_member.")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{csv_name} in {folder.name} is not a regular file; give a CSV with columns file, label, "
                         "is_member.")  # fmt: skip
    if st.st_size > limits.MAX_LABELS_MB * 2**20:
        raise InputError(f"{csv_name} is larger than {limits.MAX_LABELS_MB} MB; at most {limits.MAX_IMAGES:,} images "
                         "are accepted.")  # fmt: skip
    raw = table.read_bytes()[: limits.MAX_LABELS_MB * 2**20 + 1]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{csv_name} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at position {exc.start:,}); "
                         "save it as UTF-8.") from None  # fmt: skip
    if "\x00" in text:
        raise InputError(f"{csv_name} holds NUL bytes, so it is not a CSV text file; save it as UTF-8 CSV.")
    try:
        parsed = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise InputError(f"{csv_name} could not be read as CSV ({exc}).") from None
    header = [h.strip() for h in parsed[0]] if parsed else []
    needed = ("file", "label", "is_member")
    if not set(needed) <= set(header):
        raise InputError(f"{csv_name} must have the columns file, label and is_member in its first row.")
    where = [header.index(c) for c in needed]
    rows: list[tuple[int, tuple[str, str, str]]] = []
    for line, row in enumerate(parsed[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue  # a blank line
        if len(row) != len(header):
            raise InputError(f"Row {line} of {csv_name} has {len(row)} field{'s' * (len(row) != 1)} but the header "
                             f"has {len(header)}; give every image its file, label and is_member.")  # fmt: skip
        rows.append((line, (row[where[0]].strip(), row[where[1]].strip(), row[where[2]].strip())))
        if len(rows) > limits.MAX_IMAGES:
            raise InputError(f"{csv_name} lists more than {limits.MAX_IMAGES:,} images; upload a sample.")
    if not rows:
        raise InputError(f"{csv_name} lists no image; add a row per PNG (file, label, is_member).")
    return rows


def _listed_image(folder: Path, file: str, csv_name: str, line: int) -> Path:
    """The image a row names: a regular file inside the folder (links resolved), of a bounded size."""
    if not file:
        raise InputError(f"Row {line} of {csv_name} names no file.")
    try:
        path = (folder / file).resolve()
        inside = folder.resolve() in path.parents
    except (OSError, RuntimeError, ValueError):  # a loop of links, a NUL byte in the name
        inside = False
    st = _regular_file(path) if inside else None
    if st is None:
        raise InputError(f"Image {_shown(file)} listed in {csv_name} is not in the folder.")
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"Image {_shown(file)} listed in {csv_name} is a folder, not a PNG file.")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"Image {_shown(file)} listed in {csv_name} is not a regular file (a pipe or a device).")
    if st.st_size > limits.MAX_PNG_MB * 2**20:
        raise InputError(f"Image {_shown(file)} is larger than {limits.MAX_PNG_MB} MB; images of at most "
                         f"{limits.IMAGE_SIDE.high:.0f}x{limits.IMAGE_SIDE.high:.0f} pixels are accepted.")  # fmt: skip
    return path


def _read_png(path: Path, file: str) -> np.ndarray:
    """One PNG as float32 in [0, 1]: (height, width) for grey, (height, width, 3) for colour; its declared size is
    checked before a pixel is decompressed."""
    import warnings

    from PIL import Image

    side = limits.IMAGE_SIDE
    with path.open("rb") as fh:
        head = fh.read(24)
    if not head.startswith(_PNG_MAGIC) or head[12:16] != b"IHDR":
        raise InputError(f"Image {_shown(file)} is not a readable PNG (it is not a PNG image).")
    width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    if not (side.low <= width <= side.high and side.low <= height <= side.high):  # from the header: no bomb inflated
        raise InputError(f"Image {_shown(file)} is {width:,}x{height:,} pixels; height and width must each be from "
                         f"{side.low:.0f} to {side.high:.0f} (resize the images).")  # fmt: skip
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path, formats=["PNG"]) as im:
                if im.size != (width, height):  # pragma: no cover - Pillow reads the same header
                    raise InputError(f"Image {_shown(file)} has an inconsistent PNG header.")
                if im.mode in ("I", "I;16", "I;16B", "I;16L"):  # 16-bit grey
                    return np.asarray(im, dtype=np.float64).astype(np.float32) / 65535.0
                grey = im.mode in ("L", "1", "P", "LA", "F")
                return np.asarray(im.convert("L" if grey else "RGB"), dtype=np.float32) / 255.0
    except InputError:
        raise
    except Exception as exc:  # Pillow's decoders raise many kinds (OSError, SyntaxError, ValueError, zlib errors)
        reason = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, Image.UnidentifiedImageError):
            reason = "it is not a PNG image"
        raise InputError(f"Image {_shown(file)} is not a readable PNG ({reason[:120]}).") from None
