"""The nearest-neighbour scans behind :func:`audit_core.synthetic.distance.nearest_gower` (docs/methods.md §1 step 1).

The n x m distance matrix is never built: the reference is scanned in blocks with a
running minimum. On CPU (:func:`scan_numba`) the scan is a compiled numba kernel (parallel
over groups of 4 queries that share each pass over a cached reference block). For reference
rows without missing values, both tables are first sorted by their categories so similar
records share blocks, each query starts where it would sit in the sorted reference, and a
block is skipped when a lower bound of its distance (from the block's per-column min/max and
the categories it holds) already exceeds the best found: exact, and several times faster on
real data. On a GPU (or with ``backend="torch"``) :func:`scan_torch` scans with torch in
blocks, without pruning. Both compare in float32; the caller recomputes the chosen pair's
distance in float64.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from audit_core.common.runtime import ProgressFn, as_progress
from audit_core.synthetic.encoding import MISSING_CODE, EncodedTable
from audit_core.synthetic.numba_runtime import NUMBA_CACHE, NUMBA_LOCK

__all__ = ["scan_numba", "scan_numba_k", "scan_torch", "scan_torch_k"]

_QUERY_TILE = 4  # queries sharing one pass over a reference block (the kernel is written for 4)
_NUMBA_BLOCK = 512  # reference rows per block: 4 x 512 accumulators and a 512-row column slice stay in L1


def _kernel_arrays(query: EncodedTable, reference: EncodedTable) -> dict[str, Any]:
    """The arrays both scans read: query values with NaN -> 0 and per-query weights, reference transposed."""
    qnum = query.numeric
    qnan = np.isnan(qnum)
    q_num = np.where(qnan, np.float32(0), qnum).astype(np.float32)
    qw_num = np.where(qnan, 0.0, query.numeric_weights[None, :]).astype(np.float32)
    q_cat = np.ascontiguousarray(query.codes, dtype=np.int32)
    qw_cat = np.where(q_cat == MISSING_CODE, 0.0, query.categorical_weights[None, :]).astype(np.float32)
    rnum = reference.numeric
    rnan = np.isnan(rnum)
    r_num_t = np.ascontiguousarray(np.where(rnan, np.float32(0), rnum).T, dtype=np.float32)
    r_cat_t = np.ascontiguousarray(reference.codes.T, dtype=np.int32)
    r_missing = bool(rnan.any() or (reference.codes == MISSING_CODE).any())
    if r_missing:
        r_num_ok = np.ascontiguousarray((~rnan).T, dtype=np.float32)
        r_cat_ok = np.ascontiguousarray((reference.codes != MISSING_CODE).T, dtype=np.float32)
    else:
        r_num_ok = np.zeros((rnum.shape[1], 0), dtype=np.float32)
        r_cat_ok = np.zeros((reference.codes.shape[1], 0), dtype=np.float32)
    return {
        "q_num": np.ascontiguousarray(q_num),
        "qw_num": np.ascontiguousarray(qw_num),
        "q_cat": q_cat,
        "qw_cat": np.ascontiguousarray(qw_cat),
        "r_num_t": r_num_t,
        "r_cat_t": r_cat_t,
        "r_num_ok": r_num_ok,
        "r_cat_ok": r_cat_ok,
        "r_missing": r_missing,
    }


_MASK_OVERFLOW_BIT = 62  # block code masks: bit c for codes c < 62, bit 62 for "some larger code"


@numba.njit(inline="always", fastmath=True, boundscheck=False, cache=NUMBA_CACHE)
def _insert(bd, bi, v, row):
    """Put ``(v, row)`` into the sorted top-k ``bd`` / ``bi`` (ascending distance, ties to the lower row)."""
    p = bd.shape[0] - 1
    while p > 0 and (bd[p - 1] > v or (bd[p - 1] == v and bi[p - 1] > row)):
        bd[p] = bd[p - 1]
        bi[p] = bi[p - 1]
        p -= 1
    bd[p] = v
    bi[p] = row


@numba.njit(inline="always", fastmath=True, boundscheck=False, cache=NUMBA_CACHE)
def _best_of(acc, den, width, r0, r_order, r_missing, bd, bi):
    """Running top-k over one block (``bd`` / ``bi`` sorted, updated in place), ties to the lowest original row.

    A vectorised minimum first: a block whose best value cannot enter the top k is passed over.
    """
    one = np.float32(1.0)
    zero = np.float32(0.0)
    last = bd.shape[0] - 1
    if r_missing:
        for k in range(width):
            v = acc[k] / den[k] if den[k] > zero else one
            row = r_order[r0 + k]
            if v < bd[last] or (v == bd[last] and row < bi[last]):
                _insert(bd, bi, v, row)
        return
    low = acc[0]
    for k in range(width):
        low = min(low, acc[k])
    if low <= bd[last]:
        for k in range(width):
            v = acc[k]
            row = r_order[r0 + k]
            if v < bd[last] or (v == bd[last] and row < bi[last]):
                _insert(bd, bi, v, row)


@numba.njit(inline="always", fastmath=True, boundscheck=False, cache=NUMBA_CACHE)
def _lower_bound(q, b, q_num, qw_num, q_cat, qw_cat, b_lo, b_hi, b_mask):
    """A lower bound of the numerator for query q over every row of block b (exact pruning)."""
    one = np.float32(1.0)
    zero = np.float32(0.0)
    lb = zero
    for j in range(q_num.shape[1]):
        x = q_num[q, j]
        lo = b_lo[b, j]
        hi = b_hi[b, j]
        gap = lo - x if x < lo else (x - hi if x > hi else zero)
        lb += qw_num[q, j] * min(one, gap)
    for j in range(q_cat.shape[1]):
        c = q_cat[q, j]
        if c >= 0:
            bit = min(c, _MASK_OVERFLOW_BIT)
            if ((b_mask[b, j] >> bit) & 1) == 0:
                lb += qw_cat[q, j]
    return lb


@numba.njit(parallel=True, fastmath=True, nogil=True, boundscheck=False, cache=NUMBA_CACHE)
def _gower_nn_kernel(  # pragma: no cover - compiled by numba
    q_num,
    qw_num,
    q_cat,
    qw_cat,
    r_num_t,
    r_cat_t,
    r_num_ok,
    r_cat_ok,
    r_missing,
    block,
    start_block,
    r_order,
    b_lo,
    b_hi,
    b_mask,
    best_d,
    best_i,
):
    # Queries come padded to a multiple of 4 (padding rows have weight 0); group t starts its
    # scan at block start_block[t] (where similar references sit) and wraps around.
    n = q_num.shape[0]
    pn = q_num.shape[1]
    pc = q_cat.shape[1]
    m = r_order.shape[0]
    n_blocks = (m + block - 1) // block
    one = np.float32(1.0)
    zero = np.float32(0.0)
    slack = np.float32(1e-5)
    for t in numba.prange(n // 4):
        q = 4 * t
        num = np.empty((4, block), dtype=np.float32)
        den = np.empty((4, block), dtype=np.float32)
        kk = best_d.shape[1]
        bd = np.full((4, kk), np.inf, dtype=np.float32)
        bi = np.full((4, kk), m, dtype=np.int64)
        tot = np.zeros(4, dtype=np.float32)
        for i in range(4):
            for j in range(pn):
                tot[i] += qw_num[q + i, j]
            for j in range(pc):
                tot[i] += qw_cat[q + i, j]
        for bb in range(n_blocks):
            b = (start_block[t] + bb) % n_blocks
            if not r_missing:
                # skip the block when no row in it can beat (or tie) the k-th best of any of the 4 queries
                skip = True
                for i in range(4):
                    lb = _lower_bound(q + i, b, q_num, qw_num, q_cat, qw_cat, b_lo, b_hi, b_mask)
                    if lb <= bd[i, kk - 1] + slack * (tot[i] + one):
                        skip = False
                        break
                if skip:
                    continue
            r0 = b * block
            r1 = min(m, r0 + block)
            width = r1 - r0
            a0 = num[0, :width]
            a1 = num[1, :width]
            a2 = num[2, :width]
            a3 = num[3, :width]
            d0 = den[0, :width]
            d1 = den[1, :width]
            d2 = den[2, :width]
            d3 = den[3, :width]
            for k in range(width):
                a0[k] = zero
                a1[k] = zero
                a2[k] = zero
                a3[k] = zero
            if r_missing:
                for k in range(width):
                    d0[k] = zero
                    d1[k] = zero
                    d2[k] = zero
                    d3[k] = zero
            for j in range(pn):
                w0 = qw_num[q, j]
                w1 = qw_num[q + 1, j]
                w2 = qw_num[q + 2, j]
                w3 = qw_num[q + 3, j]
                if w0 == zero and w1 == zero and w2 == zero and w3 == zero:
                    continue
                x0 = q_num[q, j]
                x1 = q_num[q + 1, j]
                x2 = q_num[q + 2, j]
                x3 = q_num[q + 3, j]
                col = r_num_t[j, r0:r1]
                if r_missing:
                    ok = r_num_ok[j, r0:r1]
                    for k in range(width):
                        v = col[k]
                        o = ok[k]
                        a0[k] += w0 * o * min(one, abs(x0 - v))
                        a1[k] += w1 * o * min(one, abs(x1 - v))
                        a2[k] += w2 * o * min(one, abs(x2 - v))
                        a3[k] += w3 * o * min(one, abs(x3 - v))
                        d0[k] += w0 * o
                        d1[k] += w1 * o
                        d2[k] += w2 * o
                        d3[k] += w3 * o
                else:
                    for k in range(width):
                        v = col[k]
                        a0[k] += w0 * min(one, abs(x0 - v))
                        a1[k] += w1 * min(one, abs(x1 - v))
                        a2[k] += w2 * min(one, abs(x2 - v))
                        a3[k] += w3 * min(one, abs(x3 - v))
            for j in range(pc):
                w0 = qw_cat[q, j]
                w1 = qw_cat[q + 1, j]
                w2 = qw_cat[q + 2, j]
                w3 = qw_cat[q + 3, j]
                if w0 == zero and w1 == zero and w2 == zero and w3 == zero:
                    continue
                c0 = q_cat[q, j]
                c1 = q_cat[q + 1, j]
                c2 = q_cat[q + 2, j]
                c3 = q_cat[q + 3, j]
                col_c = r_cat_t[j, r0:r1]
                if r_missing:
                    ok = r_cat_ok[j, r0:r1]
                    for k in range(width):
                        v = col_c[k]
                        o = ok[k]
                        a0[k] += w0 * o if v != c0 else zero
                        a1[k] += w1 * o if v != c1 else zero
                        a2[k] += w2 * o if v != c2 else zero
                        a3[k] += w3 * o if v != c3 else zero
                        d0[k] += w0 * o
                        d1[k] += w1 * o
                        d2[k] += w2 * o
                        d3[k] += w3 * o
                else:
                    for k in range(width):
                        v = col_c[k]
                        a0[k] += w0 if v != c0 else zero
                        a1[k] += w1 if v != c1 else zero
                        a2[k] += w2 if v != c2 else zero
                        a3[k] += w3 if v != c3 else zero
            _best_of(a0, d0, width, r0, r_order, r_missing, bd[0], bi[0])
            _best_of(a1, d1, width, r0, r_order, r_missing, bd[1], bi[1])
            _best_of(a2, d2, width, r0, r_order, r_missing, bd[2], bi[2])
            _best_of(a3, d3, width, r0, r_order, r_missing, bd[3], bi[3])
        for i in range(4):
            for c in range(kk):
                if r_missing:
                    best_d[q + i, c] = bd[i, c]
                elif tot[i] > zero:
                    best_d[q + i, c] = bd[i, c] / tot[i]
                else:
                    best_d[q + i, c] = one
                best_i[q + i, c] = bi[i, c]


def _sort_keys(r_cat: np.ndarray) -> list[int]:
    """Categorical columns by number of distinct codes in the reference, most first."""
    return sorted(range(r_cat.shape[1]), key=lambda j: -np.unique(r_cat[:, j]).size)


def _block_summaries(r_num: np.ndarray, r_cat: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per reference block: min and max of each numeric column, and a bit mask of the codes present."""
    m = r_num.shape[0] if r_num.shape[1] else r_cat.shape[0]
    starts = np.arange(0, m, block)
    if r_num.shape[1]:
        b_lo = np.minimum.reduceat(r_num, starts, axis=0).astype(np.float32)
        b_hi = np.maximum.reduceat(r_num, starts, axis=0).astype(np.float32)
    else:
        b_lo = b_hi = np.zeros((starts.size, 0), dtype=np.float32)
    if r_cat.shape[1]:
        bits = np.left_shift(np.int64(1), np.clip(r_cat, 0, _MASK_OVERFLOW_BIT).astype(np.int64))
        b_mask = np.bitwise_or.reduceat(bits, starts, axis=0)
    else:
        b_mask = np.zeros((starts.size, 0), dtype=np.int64)
    return np.ascontiguousarray(b_lo), np.ascontiguousarray(b_hi), np.ascontiguousarray(b_mask)


def scan_numba(
    query: EncodedTable, reference: EncodedTable, *, block_rows: int | None, progress: ProgressFn | None
) -> tuple[np.ndarray, np.ndarray]:
    """Sort both tables so similar records sit together, then scan blocks with exact pruning.

    A reference block is skipped for a group of 4 queries only when a lower bound of
    the distance over the whole block (from its per-column min/max and the set of
    categories present) exceeds every one of their current best distances: the
    result is the same as a full scan (ties go to the lowest original row).
    """
    d, i = scan_numba_k(query, reference, k=1, block_rows=block_rows, progress=progress)
    return d[:, 0], i[:, 0]


def scan_numba_k(
    query: EncodedTable, reference: EncodedTable, *, k: int, block_rows: int | None, progress: ProgressFn | None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`scan_numba` for the ``k`` nearest reference rows: ``[n, k]`` float32 distances and rows, nearest first.

    The same pruned scan, with a block skipped only when its lower bound exceeds every one of
    the 4 queries' current k-th best distance; ``k`` must not exceed the reference's rows.
    """
    arrays = _kernel_arrays(query, reference)
    n, m = query.n_rows, reference.n_rows
    block = int(block_rows or _NUMBA_BLOCK)
    r_num = arrays["r_num_t"].T
    r_cat = arrays["r_cat_t"].T
    r_order, q_order, q_pos = _scan_order(arrays, r_num, r_cat, n=n, m=m)
    r_num_s = np.ascontiguousarray(r_num[r_order])
    r_cat_s = np.ascontiguousarray(r_cat[r_order])
    b_lo, b_hi, b_mask = _block_summaries(r_num_s, r_cat_s, block)
    # r_num_ok / r_cat_ok stay unsorted: they are only used when r_order is the identity
    ref_args = (np.ascontiguousarray(r_num_s.T), np.ascontiguousarray(r_cat_s.T), arrays["r_num_ok"], arrays["r_cat_ok"])
    q_sorted, start_block = _sorted_queries(arrays, q_order, q_pos, block=block, n_blocks=(m + block - 1) // block)
    kernel_args = (*ref_args, arrays["r_missing"], block, r_order, b_lo, b_hi, b_mask)
    best_d, best_i = _run_gower_kernel(q_sorted, start_block, kernel_args, n=n, k=int(k), progress=progress)
    out_d = np.empty((n, int(k)), dtype=np.float32)
    out_i = np.empty((n, int(k)), dtype=np.int64)
    out_d[q_order] = best_d[:n]
    out_i[q_order] = best_i[:n]
    return out_d, out_i


def _scan_order(
    arrays: dict[str, Any], r_num: np.ndarray, r_cat: np.ndarray, *, n: int, m: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(r_order, q_order, q_pos)``: the scan order of the reference rows and of the queries, and each query's start.

    The reference and the queries are sorted by the same keys (categorical columns with
    the most distinct codes first, then the first two numeric columns), and each query's
    scan starts at the block where it would sit in the sorted reference (``q_pos``: the
    number of reference rows before it), so the best match comes early and most other
    blocks are then skipped. Only used when the reference has no missing value; with
    missing values both orders are the identity and every scan starts at block 0.
    """
    if arrays["r_missing"]:
        return np.arange(m, dtype=np.int64), np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    cat_order = _sort_keys(r_cat)

    def keys(cat: np.ndarray, num: np.ndarray) -> list[np.ndarray]:
        return [cat[:, j] for j in cat_order] + [num[:, j] for j in range(min(2, num.shape[1]))]

    merged_keys = [
        np.concatenate([rk, qk]) for rk, qk in zip(keys(r_cat, r_num), keys(arrays["q_cat"], arrays["q_num"]), strict=True)
    ]
    merged = np.lexsort(merged_keys[::-1])  # np.lexsort sorts by the last key first
    is_ref = merged < m
    refs_before: np.ndarray = np.cumsum(is_ref) - is_ref
    r_order = merged[is_ref].astype(np.int64)
    q_order = (merged[~is_ref] - m).astype(np.int64)
    q_pos: np.ndarray = refs_before[~is_ref].astype(np.int64)
    return r_order, q_order, q_pos


def _sorted_queries(
    arrays: dict[str, Any], q_order: np.ndarray, q_pos: np.ndarray, *, block: int, n_blocks: int
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The query arrays in scan order, padded to a multiple of 4 rows, and each group of 4's first block.

    The kernel takes queries in groups of 4; padding rows have weight 0 and start where
    the last query does.
    """
    n = q_order.size
    pad = (-n) % _QUERY_TILE
    q_sorted = {}
    for key in ("q_num", "qw_num", "q_cat", "qw_cat"):
        arr = arrays[key][q_order]
        if pad:
            arr = np.concatenate([arr, np.zeros((pad, arr.shape[1]), dtype=arr.dtype)])
        q_sorted[key] = np.ascontiguousarray(arr)
    pos = np.concatenate([q_pos, np.full(pad, q_pos[-1] if n else 0, dtype=np.int64)])
    start_block = np.minimum(pos[::_QUERY_TILE] // block, n_blocks - 1).astype(np.int64)
    return q_sorted, start_block


def _run_gower_kernel(
    q_sorted: dict[str, np.ndarray], start_block: np.ndarray, kernel_args: tuple, *, n: int, k: int,
    progress: ProgressFn | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Run :func:`_gower_nn_kernel` over the sorted, padded queries in chunks, reporting progress after each.

    ``kernel_args`` are the kernel's reference arguments, from ``r_num_t`` to ``b_mask``
    except ``start_block``. Returns the ``k`` best distances and rows of every padded query (``[n_pad, k]``).
    """
    ref_args, block_args = kernel_args[:6], kernel_args[6:]
    n_pad = q_sorted["q_num"].shape[0]
    best_d = np.empty((n_pad, k), dtype=np.float32)
    best_i = np.empty((n_pad, k), dtype=np.int64)
    report = as_progress(progress)
    # Chunks of queries between progress calls; each chunk keeps every core busy.
    chunk = max(2048, _QUERY_TILE * 128 * numba.get_num_threads())
    for start in range(0, n_pad, chunk):
        stop = min(n_pad, start + chunk)
        sl = slice(start, stop)
        with NUMBA_LOCK:
            # numba's Dispatcher.__call__ stub is typed narrower than a jitted kernel's signature
            _gower_nn_kernel(  # type: ignore[call-arg]
                q_sorted["q_num"][sl],
                q_sorted["qw_num"][sl],
                q_sorted["q_cat"][sl],
                q_sorted["qw_cat"][sl],
                *ref_args,
                start_block[start // _QUERY_TILE : stop // _QUERY_TILE],
                *block_args,
                best_d[sl],
                best_i[sl],
            )
        done = min(stop, n)
        report(done / n, f"nearest synthetic record: {done:,} of {n:,} records")
    return best_d, best_i


def scan_torch(
    query: EncodedTable,
    reference: EncodedTable,
    *,
    block_rows: int | None,
    device: Any,
    progress: ProgressFn | None,
) -> tuple[np.ndarray, np.ndarray, str]:
    """The torch scan (:func:`_torch_scan`) on ``device``, with blocks sized for it; returns the backend's name too."""
    d, i, name = scan_torch_k(query, reference, k=1, block_rows=block_rows, device=device, progress=progress)
    return d[:, 0], i[:, 0], name


def scan_torch_k(
    query: EncodedTable,
    reference: EncodedTable,
    *,
    k: int,
    block_rows: int | None,
    device: Any,
    progress: ProgressFn | None,
) -> tuple[np.ndarray, np.ndarray, str]:
    """:func:`scan_torch` for the ``k`` nearest reference rows (``[n, k]``, nearest first; ``k`` at most the rows)."""
    import torch

    from audit_core.common.runtime import pick_device

    dev = pick_device(str(device)) if device is not None else pick_device()
    n = query.n_rows
    m = reference.n_rows
    tensors = _torch_arrays(_kernel_arrays(query, reference), dev)
    # Block shape: a [query x reference] tile of 2**20 cells on CPU (4 MiB per float32 temporary),
    # 2**25 on a GPU (128 MiB); a few such temporaries live at once.
    on_cpu = dev.type == "cpu"
    rb = int(block_rows or (2048 if on_cpu else 32768))
    qb = max(1, min(n, (1 << (20 if on_cpu else 25)) // max(1, min(rb, m))))
    # On CPU this path is the fallback (numba is the fast one): run it on one thread, because
    # torch's thread pool stalls on many small operations when the machine is busy.
    threads = torch.get_num_threads()
    if on_cpu:
        torch.set_num_threads(1)
    try:
        best_d, best_i = _torch_scan(tensors, n=n, m=m, qb=qb, rb=rb, k=int(k), progress=progress)
    finally:
        if on_cpu:
            torch.set_num_threads(threads)
    return best_d, best_i, f"torch:{dev}"


def _torch_arrays(arrays: dict[str, Any], dev) -> dict[str, Any]:
    """The kernel arrays of :func:`_kernel_arrays` as tensors on ``dev`` (the reference masks only when they are needed)."""
    import torch

    def to(x: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(x)).to(dev)

    out: dict[str, Any] = {key: to(arrays[key]) for key in ("q_num", "qw_num", "q_cat", "qw_cat", "r_num_t", "r_cat_t")}
    r_missing = arrays["r_missing"]
    out["r_missing"] = r_missing
    out["r_num_ok"] = to(arrays["r_num_ok"]) if r_missing else None
    out["r_cat_ok"] = to(arrays["r_cat_ok"]) if r_missing else None
    return out


def _torch_scan(
    t: dict[str, Any], *, n: int, m: int, qb: int, rb: int, k: int, progress: ProgressFn | None
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest reference rows of every query (``[n, k]``), ``qb`` queries x ``rb`` reference rows at a time (float32).

    Without missing reference values the denominator is fixed per query, so numerators
    are compared; with them the distance is divided by ``sum_j w_qj ok_rj`` (1 where that is 0).
    """
    import torch

    q_num, qw_num, q_cat, qw_cat = t["q_num"], t["qw_num"], t["q_cat"], t["qw_cat"]
    r_num_t, r_cat_t, r_num_ok, r_cat_ok = t["r_num_t"], t["r_cat_t"], t["r_num_ok"], t["r_cat_ok"]
    r_missing = t["r_missing"]
    dev = q_num.device
    pn, pc = q_num.shape[1], q_cat.shape[1]
    report = as_progress(progress)
    best_d = np.empty((n, k), dtype=np.float32)
    best_i = np.empty((n, k), dtype=np.int64)
    # Preallocated tiles: fresh multi-MiB tensors per column would spend the time in the allocator.
    f32 = {"dtype": torch.float32, "device": dev}
    acc_buf = torch.empty((qb, rb), **f32)
    tmp_buf = torch.empty((qb, rb), **f32)
    den_buf = torch.empty((qb, rb) if r_missing else (0, 0), **f32)  # the denominators: only with missing reference values
    flag_buf = torch.empty((qb, rb), dtype=torch.bool, device=dev)
    with torch.no_grad():
        for q0 in range(0, n, qb):
            q1 = min(n, q0 + qb)
            rows = q1 - q0
            run_d = torch.full((rows, k), float("inf"), **f32)
            run_i = torch.full((rows, k), m, dtype=torch.int64, device=dev)
            for r0 in range(0, m, rb):
                r1 = min(m, r0 + rb)
                acc = acc_buf[:rows, : r1 - r0]
                tmp = tmp_buf[:rows, : r1 - r0]
                flag = flag_buf[:rows, : r1 - r0]
                acc.zero_()
                for j in range(pn):
                    torch.sub(q_num[q0:q1, j : j + 1], r_num_t[j, r0:r1][None, :], out=tmp)
                    tmp.abs_().clamp_(max=1.0)
                    if r_missing:
                        tmp.mul_(r_num_ok[j, r0:r1][None, :])
                    acc.addcmul_(qw_num[q0:q1, j : j + 1], tmp)
                for j in range(pc):
                    torch.ne(q_cat[q0:q1, j : j + 1], r_cat_t[j, r0:r1][None, :], out=flag)
                    tmp.copy_(flag)
                    if r_missing:
                        tmp.mul_(r_cat_ok[j, r0:r1][None, :])
                    acc.addcmul_(qw_cat[q0:q1, j : j + 1], tmp)
                if r_missing:
                    # den[q, r] = sum_j w_qj * ok_rj: one matrix product
                    den = den_buf[:rows, : r1 - r0]
                    torch.mm(qw_num[q0:q1], r_num_ok[:, r0:r1], out=den)
                    den.addmm_(qw_cat[q0:q1], r_cat_ok[:, r0:r1])
                    torch.le(den, 0.0, out=flag)
                    acc.div_(den.clamp_(min=1e-30)).masked_fill_(flag, 1.0)
                # without missing reference values the denominator is fixed per query: compare numerators
                if k == 1:
                    val, arg = torch.min(acc, dim=1)
                    better = val < run_d[:, 0]
                    run_d[:, 0] = torch.where(better, val, run_d[:, 0])
                    run_i[:, 0] = torch.where(better, arg + r0, run_i[:, 0])
                else:  # the block's k best joined to the running k best; a stable sort keeps ties on the lower row
                    val, arg = torch.topk(acc, min(k, r1 - r0), dim=1, largest=False, sorted=True)
                    both_d, both_i = torch.cat([run_d, val], dim=1), torch.cat([run_i, arg + r0], dim=1)
                    order = torch.sort(both_d, dim=1, stable=True).indices[:, :k]
                    run_d, run_i = torch.gather(both_d, 1, order), torch.gather(both_i, 1, order)
            best_d[q0:q1] = run_d.cpu().numpy()
            best_i[q0:q1] = run_i.cpu().numpy()
            report(q1 / n, f"nearest synthetic record: {q1:,} of {n:,} records")
    return best_d, best_i

