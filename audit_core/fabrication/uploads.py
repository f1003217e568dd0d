"""The user's files: uploaded images (an ``.npz`` or a folder of PNGs) and the audited model (safetensors weights
or a trusted TorchScript file), each with the report's line for it (its SHA-256 as given, ``sha256sum`` of the file)."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

from torch import nn

from audit_core.common.errors import InputError
from audit_core.common.report import InputSummary
from audit_core.fabrication.image_files import load_npz, load_png_folder, png_folder_files
from audit_core.fabrication.images import ImageData
from audit_core.fabrication.inference import Device
from audit_core.fabrication.model_files import load_safetensors_model, load_torchscript_model

__all__ = ["load_images", "load_model"]

_PNG_LABELS = "labels.csv"
"""The table of a PNG folder: columns file, label, is_member."""


def load_images(images: str | Path | bytes, images_name: str | None, *, seed: int) -> tuple[ImageData, InputSummary]:
    """Uploaded images and their report line: a folder of PNGs with ``labels.csv``
    (:func:`~audit_core.fabrication.image_files.load_png_folder`), or an ``.npz`` file or its bytes
    (:func:`~audit_core.fabrication.image_files.load_npz`)."""
    if isinstance(images, str | Path) and Path(images).is_dir():
        folder = Path(images)
        data = load_png_folder(folder, csv_name=_PNG_LABELS, seed=seed)
        if images_name is not None:
            data = dataclasses.replace(data, name=images_name)
        detail = f"PNG folder, {data.n_classes} classes, {data.members.size} members"
        return data, _folder_summary(data.name, folder, data.labels.size, detail)
    src, name = _file_source(images, "image", images_name)
    data = load_npz(src, seed=seed, name=name)
    return data, _file_summary(name, src, data.labels.size, f"{data.n_classes} classes, {data.members.size} members")


def load_model(
    model: str | Path | bytes,
    model_name: str | None,
    *,
    model_format: str,
    architecture: str,
    trusted: bool,
    in_channels: int,
    device: Device = None,
) -> tuple[nn.Module, InputSummary]:
    """The uploaded model and its report line: safetensors weights of ``architecture``, or a TorchScript file
    (``model_format`` ``"torchscript"``, loaded only when ``trusted``)."""
    src, name = _file_source(model, "model", model_name)
    if model_format == "torchscript":
        loaded = load_torchscript_model(src, trusted=trusted, device=device)
    else:
        loaded = load_safetensors_model(src, arch=architecture, in_channels=in_channels, device=device)
    return loaded, _file_summary(name, src, 0, architecture if model_format == "safetensors" else model_format)


def _file_source(source: str | Path | bytes, what: str, name: str | None) -> tuple[Path | bytes, str]:
    """``(source, name)``: bytes as given, or a path that must be an existing file."""
    if isinstance(source, bytes | bytearray):
        return bytes(source), name or what
    path = Path(source)
    if not path.is_file():
        raise InputError(f"The {what} file {path} does not exist.")
    return path, name or path.name


def _hash_file(h: Any, path: Path) -> None:
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)


def _file_summary(name: str, source: Path | bytes, rows: int, detail: str) -> InputSummary:
    """The report's line for an uploaded file: its SHA-256 as given (``sha256sum`` of the file)."""
    h = hashlib.sha256()
    if isinstance(source, bytes):
        h.update(source)
    else:
        _hash_file(h, source)
    return InputSummary(name, rows, 0, h.hexdigest(), detail)


def _folder_summary(name: str, folder: Path, rows: int, detail: str) -> InputSummary:
    """The report's line for a PNG folder: one SHA-256 over ``labels.csv`` and then each image it lists, in its order."""
    h = hashlib.sha256()
    _hash_file(h, folder / _PNG_LABELS)
    for image in png_folder_files(folder, csv_name=_PNG_LABELS):
        _hash_file(h, image)
    return InputSummary(name, rows, 0, h.hexdigest(), detail)
