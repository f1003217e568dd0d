"""The model audit's image path: safetensors weights of the fabrication page's architectures, images in .npz files.

- the model: safetensors weights (never a pickle) of ``small_cnn`` or ``resnet18``
  (:mod:`audit_core.fabrication.architectures`). The architecture, the input channels and the
  number of classes are read from the weights: the architecture whose parameter names and
  shapes the file fits exactly (:func:`~audit_core.fabrication.model_files.load_safetensors_model`
  checks every one, :func:`~audit_core.fabrication.architectures.architecture_of` confirms it);
- the members and the population: ``.npz`` files with ``images`` and ``labels`` (no member mask:
  membership is which file a record is in), validated as the fabrication page validates uploads
  (:func:`~audit_core.fabrication.image_files.load_npz_images`);
- the reference models are of the uploaded architecture, trained here as one batch
  (:func:`~audit_core.fabrication.training.train_models`) on the rows of a
  :class:`~audit_core.model.design.Design`, on the GPU when there is one (CPU otherwise, one
  thread: the same inputs and seed give the same numbers).
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from audit_core.common.errors import InputError
from audit_core.common.runtime import ProgressFn
from audit_core.model.design import Design
from audit_core.model.reference import ReferenceModels, score_model, summarise

__all__ = [
    "ImageModel",
    "ImageSet",
    "check_images",
    "duplicated",
    "load_image_model",
    "probabilities",
    "read_images",
    "read_records",
    "train_image_reference",
]

_IMAGE_SUFFIXES = (".npz", ".npy")
_HEADS = {"small_cnn": "fc2.bias", "resnet18": "linear.bias"}
"""The last layer's bias of each architecture: its length is the number of classes."""


@dataclass(frozen=True)
class ImageSet:
    """Labelled images from one .npz file: ``images`` (n, channels, height, width) float32 in [0, 1], int ``labels``."""

    images: np.ndarray
    labels: np.ndarray
    name: str

    def __len__(self) -> int:
        return int(self.labels.size)

    def describe(self) -> str:
        c, h, w = self.images.shape[1:]
        return f"{len(self):,} images, {c} channel(s) of {h}x{w}"


def read_images(source: Any, name: str) -> ImageSet:
    """An :class:`ImageSet` from an .npz path or its bytes; one sentence (naming the file) for anything refused."""
    from audit_core.fabrication.image_files import load_npz_images

    if isinstance(source, str | Path) and not Path(source).is_file():
        raise InputError(f"'{name}': there is no file at '{source}'; check the path.")
    try:
        images, labels, _ = load_npz_images(source if isinstance(source, str | Path) else io.BytesIO(bytes(source)))
    except InputError as exc:
        raise InputError(f"'{name}': {exc}") from None
    return ImageSet(images=images, labels=labels, name=name)


def read_records(source: Any, name: str) -> Any:
    """The members' or the population's records: an :class:`ImageSet` for ``.npz`` (or ``.npy``), else a table."""
    if Path(name).suffix.lower() in _IMAGE_SUFFIXES:
        return read_images(source, name)
    from audit_core.common.table_files import read_table

    return read_table(source, name=name)


@dataclass(frozen=True)
class ImageModel:
    """A loaded image classifier and what its weights say about it."""

    module: Any  # torch.nn.Module, in eval mode, on the audit's device
    architecture: str
    in_channels: int
    n_classes: int
    sha256: str

    def description(self) -> str:
        return f"{self.architecture} (safetensors), {self.in_channels} input channel(s), {self.n_classes} classes"


def _weights_shape(data: bytes, name: str) -> tuple[int, dict[str, int]]:
    """Input channels (``conv1.weight``) and each architecture's head size, from the weights' header."""
    from safetensors import SafetensorError
    from safetensors.torch import load as st_load

    try:
        state = st_load(data)
    except (SafetensorError, ValueError, RuntimeError, OSError) as exc:
        raise InputError(f"Model '{name}' is not a valid safetensors file ({str(exc).splitlines()[0]}).") from None
    conv = state.get("conv1.weight")
    if conv is None or conv.ndim != 4:
        raise InputError(f"Model '{name}' holds weights of neither built-in image architecture (small_cnn, resnet18): "
                         "it has no 'conv1.weight' of a convolution; save the state_dict of one of them.")  # fmt: skip
    heads = {a: int(state[k].shape[0]) for a, k in _HEADS.items() if k in state and state[k].ndim == 1}
    return int(conv.shape[1]), heads


def load_image_model(data: bytes, name: str, *, device: Any = None) -> ImageModel:
    """The architecture the weights fit (names and shapes, every tensor), loaded on ``device``; one sentence otherwise."""
    from audit_core.common.runtime import pick_device
    from audit_core.fabrication.architectures import architecture_of
    from audit_core.fabrication.choices import ARCHITECTURES
    from audit_core.fabrication.model_files import load_safetensors_model

    in_channels, heads = _weights_shape(data, name)
    device = device or pick_device()
    reasons = []
    for arch in ARCHITECTURES:
        try:
            module = load_safetensors_model(data, arch=arch, in_channels=in_channels, n_classes=heads.get(arch),
                                            device=device)  # fmt: skip
        except InputError as exc:
            reasons.append(str(exc))
            continue
        n_classes = heads.get(arch, 10)
        if architecture_of(module, in_channels=in_channels, n_classes=n_classes) == arch:
            return ImageModel(module, arch, in_channels, n_classes, hashlib.sha256(data).hexdigest())
    raise InputError(f"Model '{name}' does not fit a built-in image architecture ({', '.join(ARCHITECTURES)}): "
                     f"{reasons[0] if reasons else 'its layers differ'}")  # fmt: skip


def check_images(model: ImageModel, *sets: ImageSet) -> None:
    """Refuse images whose channels, size or labels do not fit the model (one sentence naming the file)."""
    from audit_core.fabrication.model_files import check_model_input

    shapes = {s.images.shape[1:] for s in sets}
    if len(shapes) > 1:
        raise InputError("The members' and the population's images differ in shape ("
                         + ", ".join(f"'{s.name}' {tuple(s.images.shape[1:])}" for s in sets) + "); give one shape.")  # fmt: skip
    for s in sets:
        c = s.images.shape[1]
        if c != model.in_channels:
            raise InputError(f"'{s.name}' has images of {c} channel(s) but the {model.architecture} takes "
                             f"{model.in_channels}; give the images the model was trained on.")  # fmt: skip
        top = int(s.labels.max())
        if top >= model.n_classes:
            raise InputError(f"'{s.name}' has labels up to {top} but the model has {model.n_classes} classes "
                             f"(labels 0..{model.n_classes - 1}).")  # fmt: skip
    check_model_input(model.module, sets[0].images.shape[1:], model.n_classes)


def probabilities(module: Any, images: np.ndarray) -> np.ndarray:
    """``(n, n_classes)`` float64 softmax probabilities of ``module`` on ``images`` (one CPU thread on a CPU)."""
    import torch

    from audit_core.fabrication.inference import predict_logits
    from audit_core.fabrication.threads import cpu_threads

    with cpu_threads():
        logits = predict_logits(module, images)
    return torch.softmax(logits.double(), dim=1).cpu().numpy()


def train_image_reference(
    images: np.ndarray,
    labels: np.ndarray,
    candidates: np.ndarray,
    pool: np.ndarray,
    design: Design,
    *,
    model: ImageModel,
    epochs: int,
    progress: ProgressFn | None = None,
) -> ReferenceModels:
    """One model of the uploaded architecture per row set of ``design``, all trained as one batch; scored on the
    candidates and the pool.

    ``images``, ``labels``: every record (members, then population); ``candidates``, ``pool``: indices into them.
    """
    from audit_core.fabrication.training import TrainConfig, train_models

    subsets = np.zeros((design.n_models, labels.size), dtype=bool)
    for k, rows in enumerate(design.rows):
        subsets[k, rows] = True
    device = next(model.module.parameters()).device
    models = train_models(images, labels, subsets, n_classes=model.n_classes, config=TrainConfig(epochs=epochs),
                          arch=model.architecture, seed=design.seeds[0], device=device, progress=progress)  # fmt: skip
    scored = np.r_[candidates, pool]
    per_model = [score_model(probabilities(m, images[rows]), labels[rows], probabilities(m, images[scored]),
                             labels[scored]) for m, rows in zip(models, design.rows, strict=True)]  # fmt: skip
    return summarise(design, model.architecture, per_model, n_candidates=candidates.size, pool=pool)


def duplicated(images: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per image: whether another image in ``images`` has the same pixels and label."""
    import pandas as pd

    keys = [
        hashlib.sha256(img.tobytes() + int(y).to_bytes(8, "little")).hexdigest() for img, y in zip(images, labels, strict=True)
    ]
    return pd.Series(keys).duplicated(keep=False).to_numpy()
