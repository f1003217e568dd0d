"""The audited model from a file: safetensors weights of a built-in architecture (never a pickle), or a trusted
TorchScript file; and whether the loaded model takes the audit's images."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from audit_core.common import limits
from audit_core.common.errors import InputError
from audit_core.common.model_files import sniff_model_format
from audit_core.common.runtime import pick_device
from audit_core.fabrication.architectures import make_model
from audit_core.fabrication.inference import Device, model_device

__all__ = ["check_model_input", "load_safetensors_model", "load_torchscript_model", "n_outputs"]


def n_outputs(model: nn.Module, shape: Sequence[int], *, device: Device = None) -> int:
    """Number of classes ``model`` outputs for images of ``shape``; refuses shapes it does not take and outputs that
    are not finite class scores."""
    device = device or model_device(model)
    try:
        with torch.no_grad():
            out = model(torch.zeros((2, *shape), device=device))
    except InputError:
        raise
    except RuntimeError as exc:
        raise InputError(
            f"The model does not take images of shape {tuple(shape)} (channels, height, width): {_first_line(exc)}"
        ) from None
    _check_scores(out, 2)
    return int(out.shape[1])


def _first_line(exc: BaseException) -> str:
    """The line of an exception's text that says what went wrong (a TorchScript error's is its last one)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    if "TorchScript interpreter" in text and len(lines) > 1:  # then its code's traceback, then the error itself
        text = lines[-1]
    return text if len(text) <= 160 else text[:157] + "..."


def _check_scores(out: object, n: int) -> torch.Tensor:
    """``out`` as a model's class scores for ``n`` images, or one sentence saying what it is instead."""
    if not isinstance(out, torch.Tensor):
        raise InputError(f"The model returns a {type(out).__name__}, not a tensor of class scores (images x classes); "
                         "export a model whose forward returns the logits.")  # fmt: skip
    if out.ndim != 2 or out.shape[0] != n:
        raise InputError(f"The model outputs shape {tuple(out.shape)} for {n} images; expected one score per class per "
                         "image.")  # fmt: skip
    if out.shape[1] < 2:
        raise InputError(f"The model outputs {out.shape[1]} score per image; a classifier gives one per class (at least 2).")
    if not out.is_floating_point():
        raise InputError(f"The model outputs {str(out.dtype).removeprefix('torch.')} values, not class scores (logits "
                         "as floating-point numbers).")  # fmt: skip
    if not bool(torch.isfinite(out.detach()).all()):
        raise InputError("The model outputs NaN or infinite scores for some images; check its weights.")
    return out


class _GuardedScript(nn.Module):
    """A trusted TorchScript model behind a guard: whatever its own code does, a call gives finite class scores
    ``(images, classes)`` or raises one sentence (:class:`InputError`); never a ``torch.jit.Error`` traceback or a tuple.

    It has no weights of its own: its ``state_dict`` is the script's (the architecture is recognised from it), and a
    zero-size buffer marks the device (a frozen script has no parameters to tell it).
    """

    def __init__(self, script: nn.Module, device: torch.device) -> None:
        super().__init__()
        self.script = script
        self.register_buffer("device_mark", torch.zeros(0, device=device), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        try:
            out = self.script(x)
        except Exception as exc:  # the file's own code: torch.jit.Error, RuntimeError, anything it raises
            raise InputError(f"The TorchScript model failed on images of shape {tuple(x.shape[1:])} "
                             f"({_first_line(exc)}).") from None  # fmt: skip
        return _check_scores(out, int(x.shape[0]))

    def state_dict(self, *args: Any, **kwargs: Any) -> Any:
        return self.script.state_dict(*args, **kwargs)


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
    bad = next((k for k, t in state.items() if t.is_floating_point() and not bool(torch.isfinite(t).all())), None)
    if bad is not None:
        raise InputError(f"The weights hold NaN or infinite values ({bad}); the model cannot be audited.")
    try:
        model.load_state_dict(state)
    except (RuntimeError, TypeError) as exc:  # a dtype torch cannot copy into float weights
        raise InputError(f"The weights do not load into {arch} ({_first_line(exc)}).") from None
    return model.to(device or pick_device()).eval()


def load_torchscript_model(source: str | Path | bytes, *, trusted: bool, device: Device = None) -> nn.Module:
    """Load a TorchScript model, only when the user has confirmed they trust the file."""
    if not trusted:
        raise InputError(
            "TorchScript files contain code; confirm that you trust this file (or upload safetensors weights instead)."
        )
    buf = io.BytesIO(_read_model_bytes(source))
    where = torch.device(device or pick_device())
    try:
        model = torch.jit.load(buf, map_location=where)
    except Exception as exc:  # torch.jit.load raises RuntimeError, ValueError, and its own kinds for a foreign file
        raise InputError(f"The file is not a TorchScript model ({_first_line(exc)}).") from None
    return _GuardedScript(model, where).eval()
