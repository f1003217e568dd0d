"""What kind of model file some bytes are, from their header alone (no torch, nothing parsed beyond it).

Shared by the fabrication audit (:mod:`audit_core.fabrication.model_files`) and the model audit
(:mod:`audit_core.model.loading`), which must tell a safetensors file from a pickle before any
heavy import: a safetensors header length can start with the bytes of a pickle's PROTO opcode.
"""

from __future__ import annotations

__all__ = ["MAX_ZIP_MEMBERS", "sniff_model_format", "zip_members"]


def sniff_model_format(data: bytes) -> str:
    """The format of a model file from its real header: ``safetensors``, ``torch_zip``, ``pickle`` or ``unknown``.

    safetensors starts with an 8-byte little-endian header length N followed by N bytes
    of JSON (``{...}``); its first byte is N's lowest byte and can be anything, 0x80
    included, so the JSON is what identifies it. ``torch.save`` writes a zip (``PK``),
    older versions and plain pickles start with the PROTO opcode ``0x80`` and a
    protocol number 2..5.
    """
    if len(data) >= 10:
        n = int.from_bytes(data[:8], "little")
        if 2 <= n <= len(data) - 8 and data[8:9] == b"{" and data[8 : 8 + n].rstrip(b" ").endswith(b"}"):
            return "safetensors"
    if data[:4] == b"PK\x03\x04":
        return "torch_zip"
    if data[:1] == b"\x80" and data[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "pickle"
    return "unknown"


MAX_ZIP_MEMBERS = 10_000
"""Most members an uploaded zip (a skops file, an .npz) may declare: a skops forest holds a few hundred arrays; two
million empty members fit in 200 MB and would take Python's zipfile a gigabyte to list."""


def zip_members(tail: bytes) -> int | None:
    """The member count a zip declares in its end-of-central-directory record, found in the file's last bytes
    (``tail``: its last 65,557 bytes or all of it); None when there is no such record (then it is no zip). A zip64
    archive's count is in its own record, which this does not read: 0xFFFF then means "look there", and is returned."""
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        return None
    return int.from_bytes(tail[at + 10 : at + 12], "little")
