"""The SDV 2.0 single-table synthesizers: Gaussian copula, CTGAN, TVAE and CopulaGAN.

Each is fitted with explicit metadata (no PII or id auto-detection); the GANs and the
autoencoder report their epochs as progress (their loops iterate over ``tqdm(range(epochs))``,
which is routed, per thread, to the caller's progress callback) and run on a GPU when one is present.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pandas as pd

from audit_core.common.column_types import ColumnTypes
from audit_core.common.runtime import ProgressFn, pick_device, sub_progress
from audit_core.synthetic.generators.base import TabularGenerator

__all__ = ["SDV_TABLE", "CTGANGenerator", "CopulaGANGenerator", "GaussianCopulaGenerator", "TVAEGenerator"]

SDV_TABLE = "real"
"""The table's name in SDV's and SDMetrics' metadata (one table)."""


# --------------------------------------------------------------------------------------
# Epoch progress for CTGAN / TVAE / CopulaGAN (their loops iterate over tqdm(range(epochs)))
# --------------------------------------------------------------------------------------
_LOCAL = threading.local()
_HOOK_LOCK = threading.Lock()


class _EpochIterator:
    """Stands in for tqdm around the epoch loop; reports each epoch to this thread's callback."""

    def __init__(self, iterable: Any, callback: Callable[[int, int], None]) -> None:
        self._iterable = iterable
        self._callback = callback

    def __iter__(self) -> Iterator[Any]:
        total = len(self._iterable)
        for i, item in enumerate(self._iterable):
            self._callback(i, total)
            yield item
        self._callback(total, total)

    def set_description(self, *args: Any, **kwargs: Any) -> None:
        """Ignored (tqdm API)."""


def _install_epoch_hook() -> None:
    """Route ctgan's epoch loop through :class:`_EpochIterator` when a callback is set.

    The replacement falls back to the real tqdm when the calling thread has no
    callback, so other users of ctgan are unaffected; thread-local, so two
    sessions fitting at once each see their own epochs.
    """
    with _HOOK_LOCK:
        import ctgan.synthesizers.ctgan as ctgan_module
        import ctgan.synthesizers.tvae as tvae_module

        for module in (ctgan_module, tvae_module):
            original = module.tqdm
            if getattr(original, "_audit_core_hook", False):
                continue

            def hooked(iterable: Any = None, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                callback = getattr(_LOCAL, "epoch_callback", None)
                if callback is None or iterable is None:
                    return _original(iterable, *args, **kwargs)
                return _EpochIterator(iterable, callback)

            hooked._audit_core_hook = True  # type: ignore[attr-defined]
            module.tqdm = hooked


@contextlib.contextmanager
def _epoch_progress(progress: ProgressFn, label: str) -> Iterator[None]:
    _install_epoch_hook()

    def callback(done: int, total: int) -> None:
        progress(done / max(total, 1), f"{label}: epoch {min(done + 1, total)}/{total}")

    previous = getattr(_LOCAL, "epoch_callback", None)
    _LOCAL.epoch_callback = callback
    try:
        yield
    finally:
        _LOCAL.epoch_callback = previous


# --------------------------------------------------------------------------------------
# The synthesizers
# --------------------------------------------------------------------------------------
class _SdvGenerator(TabularGenerator):
    """An SDV 2.0 single-table synthesizer with explicit metadata (no PII/id auto-detection)."""

    _has_epochs: ClassVar[bool] = True

    def _synthesizer(self, metadata: Any) -> Any:
        raise NotImplementedError

    def _fit(
        self, frame: pd.DataFrame, *, types: ColumnTypes, seed: int, progress: ProgressFn,
        reserve: pd.DataFrame | None,
    ) -> None:
        from sdv.metadata import Metadata

        columns = {c: {"sdtype": "numerical" if c in types.numeric else "categorical"} for c in frame.columns}
        metadata = Metadata.load_from_dict({"tables": {SDV_TABLE: {"columns": columns}}})
        synth = self._synthesizer(metadata)
        fit_progress = sub_progress(progress, 0.05, 0.99)
        context = _epoch_progress(fit_progress, self.name) if self._has_epochs else contextlib.nullcontext()
        with context, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            synth.fit({SDV_TABLE: frame})
        self._synth = synth

    def _sample(self, n: int, *, seed: int) -> pd.DataFrame:
        synth = copy.deepcopy(self._synth)  # sampling advances the model's RNG: keep the fitted one pristine
        with contextlib.suppress(AttributeError):
            synth._set_random_state(seed)  # SDV otherwise samples from a fixed seed
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = synth.sample(n)
        return out[SDV_TABLE] if isinstance(out, dict) else out


def _gpu() -> bool:
    return pick_device().type in {"cuda", "mps"}



class GaussianCopulaGenerator(_SdvGenerator):
    """SDV's GaussianCopulaSynthesizer: marginal distributions + a Gaussian copula."""

    name = "gaussian_copula"
    _has_epochs = False

    def _synthesizer(self, metadata: Any) -> Any:
        from sdv.single_table import GaussianCopulaSynthesizer

        return GaussianCopulaSynthesizer(metadata, default_distribution=self.params["default_distribution"])


class CTGANGenerator(_SdvGenerator):
    """SDV's CTGANSynthesizer (conditional tabular GAN); GPU when available."""

    name = "ctgan"

    def _synthesizer(self, metadata: Any) -> Any:
        from sdv.single_table import CTGANSynthesizer

        return CTGANSynthesizer(
            metadata, epochs=self.params["epochs"], batch_size=self.params["batch_size"], enable_gpu=_gpu()
        )


class TVAEGenerator(_SdvGenerator):
    """SDV's TVAESynthesizer (tabular variational autoencoder); GPU when available."""

    name = "tvae"

    def _synthesizer(self, metadata: Any) -> Any:
        from sdv.single_table import TVAESynthesizer

        return TVAESynthesizer(
            metadata, epochs=self.params["epochs"], batch_size=self.params["batch_size"], enable_gpu=_gpu()
        )


class CopulaGANGenerator(_SdvGenerator):
    """SDV's CopulaGANSynthesizer (CTGAN on copula-transformed marginals); GPU when available."""

    name = "copulagan"

    def _synthesizer(self, metadata: Any) -> Any:
        from sdv.single_table import CopulaGANSynthesizer

        return CopulaGANSynthesizer(
            metadata, epochs=self.params["epochs"], batch_size=self.params["batch_size"], enable_gpu=_gpu()
        )
