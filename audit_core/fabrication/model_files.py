"""The audited model from a file: safetensors weights of a built-in architecture (never a pickle), or a trusted
TorchScript file; and whether the loaded model takes the audit's images."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from audit_core.common import limits
from audit_core.common.errors import InputError
from audit_core.common.model_files import sniff_model_format
from audit_core.common.runtime import pick_device
from audit_core.fabrication.architectures import make_model
from audit_core.fabrication.inference import Device

__all__ = ["check_model_input", "load_safetensors_model", "load_torchscript_model", "n_outputs"]


def n_outputs(model: nn.Module, shape: Sequence[int], *, device: Device = None) -> int:
    """Number of classes ``model`` outputs for images of ``shape``; refuses shapes it does not take."""
    device = device or next(model.parameters()).device
    try:
        with torch.no_grad():
            out = model(torch.zeros((2, *shape), device=device))
    except RuntimeError as exc:
        raise InputError(
            f"The model does not take images of shape {tuple(shape)} (channels, height, width): {str(exc).splitlines()[0]}"
        ) from None
    if out.ndim != 2:
        raise InputError(f"The model outputs shape {tuple(out.shape)}; expected one score per class per image.")
    return int(out.shape[1])


def check_model_input(model: nn.Module, shape: Sequence[int], n_classes: int, *, device: Device = None) -> None:
    """Run one dummy image through ``model``; refuse shapes it does not take or a wrong class count."""
    n = n_outputs(model, shape, device=device)
    if n != n_classes:
        raise InputError(f"The model outputs {n} scores per image but the labels have {n_classes} classes.")



def _read_model_bytes(source: str | Path | bytes) -> bytes:
    """The model file's bytes, refusing files over :data:`audit_core.common.limits.MAX_MODEL_MB`."""
    limit = limits.MAX_MODEL_MB * 1024 * 1024
    if isinstance(source, str | Path):
        path = Path(source)
        if path.stat().st_size > limit:
            raise InputError(f"The model file is larger than the {limits.MAX_MODEL_MB} MB limit.")
        return path.read_bytes()
    data = bytes(source)
    if len(data) > limit:
        raise InputError(f"The model file is larger than the {limits.MAX_MODEL_MB} MB limit.")
    return data


def load_safetensors_model(
    source: str | Path | bytes, *, arch: str, in_channels: int, n_classes: int | None = None, device: Device = None
) -> nn.Module:
    """Load weights for a built-in architecture from a safetensors file.

    safetensors holds only tensors, so loading never runs code from the file. Keys and
    shapes must match the architecture exactly. ``n_classes`` None reads it from the
    last layer's weights.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load as st_load

    data = _read_model_bytes(source)
    kind = sniff_model_format(data)
    if kind in ("pickle", "torch_zip"):
        raise InputError(
            "This model file is a pickle / torch.save archive, which is never loaded; "
            "save the weights with safetensors.torch.save_file(model.state_dict(), 'model.safetensors')."
        )
    if kind != "safetensors":
        raise InputError(
            "The model file is not a safetensors file (it does not start with a safetensors header); "
            "save the weights with safetensors.torch.save_file(model.state_dict(), 'model.safetensors')."
        )
    try:
        state = st_load(data)
    except (SafetensorError, ValueError, RuntimeError, OSError) as exc:
        raise InputError(f"The model file is not a valid safetensors file ({exc}).") from None
    if n_classes is None:
        head = {"small_cnn": "fc2.bias", "resnet18": "linear.bias"}.get(arch)
        n_classes = int(state[head].shape[0]) if head in state and state[head].ndim == 1 else 10
    if not 2 <= n_classes <= limits.MAX_CLASSES:
        raise InputError(f"The weights have {n_classes:,} classes; from 2 to {limits.MAX_CLASSES:,} are supported.")
    model = make_model(arch, in_channels=in_channels, n_classes=n_classes)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    extra = sorted(set(state) - set(expected))
    if missing or extra:
        detail = f"missing {missing[:3]}" if missing else f"unexpected {extra[:3]}"
        raise InputError(
            f"The weights do not fit the {arch} architecture ({detail}); pick the architecture they were saved from."
        )
    for key, tensor in expected.items():
        if tuple(state[key].shape) != tuple(tensor.shape):
            raise InputError(
                f"The weights do not fit {arch} with {in_channels} channel(s) and {n_classes} classes: "
                f"{key} has shape {tuple(state[key].shape)}, expected {tuple(tensor.shape)}."
            )
    model.load_state_dict(state)
    return model.to(device or pick_device()).eval()


def load_torchscript_model(source: str | Path | bytes, *, trusted: bool, device: Device = None) -> nn.Module:
    """Load a TorchScript model, only when the user has confirmed they trust the file."""
    if not trusted:
        raise InputError(
            "TorchScript files contain code; confirm that you trust this file (or upload safetensors weights instead)."
        )
    buf = io.BytesIO(_read_model_bytes(source))
    try:
        model = torch.jit.load(buf, map_location=device or pick_device())
    except (RuntimeError, ValueError) as exc:
        raise InputError(f"The file is not a TorchScript model ({str(exc).splitlines()[0]}).") from None
    return model.eval()
