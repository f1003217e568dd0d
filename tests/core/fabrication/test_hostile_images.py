"""Hostile image archives and model files (issue 10): each case refused in one sentence, quickly.

Every file is generated here (``tests/hostile_inputs.py``): a renamed .npy, images of
1x1 / 1x2000 / 0x0 / 256x256 pixels, scalar and huge labels, a header claiming 10^12
images, a ~2 MB zip bomb that would inflate to 2 GB, and a safetensors file whose
header length starts with byte 0x80. None of these may run an audit or allocate the
declared sizes; the CLI gives exit 2 with one line.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from audit_core.__main__ import main
from audit_core.common.errors import InputError
from audit_core.common.model_files import sniff_model_format
from audit_core.fabrication.architectures import SmallCNN
from audit_core.fabrication.image_files import load_npz
from audit_core.fabrication.model_files import load_safetensors_model
from tests.hostile_inputs import (
    image_arrays,
    npy_bytes,
    npy_claiming,
    npy_with_header,
    npz_bytes,
    npz_with_members,
    safetensors_bytes,
    zip_bomb_npz,
)

A = image_arrays()


def _with(**change: np.ndarray) -> bytes:
    return npz_bytes(**{**A, **change})


CASES = {
    "npy renamed npz": (lambda: npy_bytes(A["images"]), "single .npy array, not an .npz"),
    "1x1 images": (lambda: _with(images=np.zeros((60, 1, 1), np.float32)), "1x1 pixels; height and width must each be from 8"),
    "1x2000 images": (lambda: _with(images=np.zeros((60, 1, 2000), np.float32)), "1x2000 pixels"),
    "zero-size images": (lambda: _with(images=np.zeros((60, 0, 0), np.float32)), "0x0 pixels"),
    "no images": (lambda: _with(images=np.zeros((0, 8, 8), np.float32)), "0 images but 60 labels"),
    "256x256 images": (lambda: _with(images=np.zeros((60, 256, 256), np.uint8)), "256x256 pixels"),
    "scalar labels": (lambda: _with(labels=np.array(3)), "labels have shape ()"),
    "labels up to 1e9": (lambda: _with(labels=np.full(60, 10**9)), "1,000,000,000; class indices must lie in 0..999"),
    "labels int64 max": (lambda: _with(labels=np.full(60, np.iinfo(np.int64).max)), "9,223,372,036,854,775,807"),
    "100000 labels": (lambda: _with(labels=np.arange(60) * 1700), "at most 1,000 classes"),
    "float labels 1e30": (lambda: _with(labels=np.full(60, 1e30)), "at most 1,000 classes"),
    "NaN labels": (lambda: _with(labels=np.full(60, np.nan)), "whole numbers"),
    "header claims 10^12 images": (
        lambda: npz_with_members(
            {"images.npy": npy_claiming((10**12, 8, 8)), "labels.npy": npy_bytes(A["labels"]),
             "is_member.npy": npy_bytes(A["is_member"])}
        ),
        "1,000,000,000,000 images; at most 200,000",
    ),
    "header claims more than stored": (
        lambda: npz_with_members(
            {"images.npy": npy_claiming((5000, 8, 8)), "labels.npy": npy_bytes(A["labels"]),
             "is_member.npy": npy_bytes(A["is_member"])}
        ),
        "truncated or forged",
    ),
    "garbled .npy header": (
        lambda: npz_with_members(
            {"images.npy": npy_with_header(b"{'descr': '<f4', 'fortran_order': False, 'shape': (60, 8, 8"),
             "labels.npy": npy_bytes(A["labels"]), "is_member.npy": npy_bytes(A["is_member"])}
        ),
        "The array 'images' in the .npz file is not a valid NumPy array (its header is garbled)",
    ),
    "zip bomb": (zip_bomb_npz, "pixel values; at most 160,000,000"),
    "6 MB zip64 bomb inflating to 6.5 GB": (lambda: zip_bomb_npz(6.5), "396,288 images; at most 200,000"),
    "object arrays": (lambda: _with(is_member=np.array([{"a": 1}] * 60, dtype=object)), "never loaded"),
    "not a zip": (lambda: b"just some text, no archive", "not a NumPy .npz archive"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_npz_refused_in_one_sentence_without_loading(case):
    make, words = CASES[case]
    raw = make()
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
            load_npz(raw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20 + 4 * len(raw)  # the declared sizes were never allocated


def test_only_the_used_keys_are_read():
    """A bomb under another key is never inflated: the three arrays load normally."""
    raw = npz_with_members(
        {"images.npy": npy_bytes(A["images"]), "labels.npy": npy_bytes(A["labels"]),
         "is_member.npy": npy_bytes(A["is_member"]), "junk.npy": npy_claiming((10**12,))}
    )
    data = load_npz(raw)
    assert data.images.shape == (60, 1, 8, 8)


def test_bounds_keep_valid_archives_working():
    data = load_npz(_with(images=np.random.default_rng(1).random((60, 64, 64, 3)).astype(np.float32)))
    assert data.shape == (3, 64, 64)
    assert data.n_classes == 3


def test_safetensors_whose_header_length_starts_with_0x80_loads():
    state = {k: v.numpy() for k, v in SmallCNN(1, 10).state_dict().items()}
    plain = safetensors_bytes(state)
    header = int.from_bytes(plain[:8], "little")
    raw = safetensors_bytes(state, pad_header_to=(header // 256 + 1) * 256 + 0x80)
    assert raw[0] == 0x80
    assert sniff_model_format(raw) == "safetensors"
    model = load_safetensors_model(raw, arch="small_cnn", in_channels=1, device="cpu")
    assert isinstance(model, SmallCNN)


def test_model_formats_sniffed_by_header():
    import pickle

    assert sniff_model_format(pickle.dumps({"a": 1}, protocol=4)) == "pickle"
    assert sniff_model_format(b"PK\x03\x04" + b"\x00" * 40) == "torch_zip"
    assert sniff_model_format(b"\x80" + b"\x00" * 7 + b"garbage") == "unknown"
    with pytest.raises(InputError, match="not a safetensors file"):
        load_safetensors_model(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!", arch="small_cnn", in_channels=1)


@pytest.mark.parametrize("case", ["npy renamed npz", "1x1 images", "scalar labels", "zip bomb", "garbled .npy header"])
def test_fabrication_cli_exit_2_one_line(case, tmp_path, capsys):
    path = tmp_path / "data.npz"
    path.write_bytes(CASES[case][0]())
    rc = main(["--quiet", "fabrication", "--images", str(path)])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1
    assert "Traceback" not in err
