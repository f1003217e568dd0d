"""Every size and count the audits accept, defined once.

The audits' settings (their knobs, audit_core.contract), hence the dashboard's widgets and
the command line's flags, and the loaders all read the bounds here, so the page and the CLI refuse the
same things with the same sentence, which names the limit. A bound protects the
machine (no request may run for hours or allocate gigabytes) as much as it
protects the statistics (a seed must be a valid generator seed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from audit_core.common.errors import InputError

__all__ = [
    "ATTACK_STEPS",
    "BANDWIDTH",
    "BANDWIDTH_SCALE",
    "CANARIES",
    "CPU_AUDIT_SECONDS",
    "DATABASE_SECONDS",
    "DELTA",
    "DISCLOSURE_ATTACKS",
    "DP_DELTA",
    "DP_EPOCHS",
    "DP_EPSILON",
    "DP_NOISE",
    "DP_ROWS",
    "DP_SAMPLE_RATE",
    "DP_STEPS",
    "EPSILON_RADIUS",
    "FPC_CELLS",
    "FPC_MODELS",
    "FPC_POPULATION",
    "FPC_REPEATS",
    "FPC_TRAIN_SIZE",
    "GENERATED_ROWS",
    "GENERATOR_EPOCHS",
    "IMAGE_SIDE",
    "LAMBDA",
    "LINK_K",
    "LIRA_MODELS",
    "MAX_ARRAY_MB",
    "MAX_CLASSES",
    "MAX_IMAGES",
    "MAX_LABELS_MB",
    "MAX_MODEL_MB",
    "MAX_PIXEL_VALUES",
    "MAX_PNG_MB",
    "MIN_IMAGES",
    "MIN_MODELS",
    "MIN_TRAIN_ROWS",
    "MODELS",
    "MODEL_FIRST_SECONDS",
    "PRIOR",
    "REFERENCE_EPOCHS",
    "REFERENCE_MODELS",
    "SEED",
    "SHADOW_MODELS",
    "SHADOW_TARGETS",
    "TABLE_COLUMNS",
    "TARGET_FPR",
    "Bound",
]


@dataclass(frozen=True)
class Bound:
    """An allowed range for one setting: ``low <= value <= high``, either end open when asked.

    Attributes
    ----------
    label : str
        What the value is, for messages ("the number of attack steps").
    low, high : float
        The limits (inclusive unless ``open_low`` / ``open_high``).
    integer : bool
        Whether the value must be a whole number.
    open_low, open_high : bool
        The value must be strictly above ``low`` / below ``high`` (a probability in (0, 1)).
    multiple : int
        A whole value must be a multiple of this (2: even).
    """

    label: str
    low: float
    high: float
    integer: bool = True
    open_low: bool = False
    open_high: bool = False
    multiple: int = 1

    def contains(self, value: object) -> bool:
        """Whether ``value`` is a finite number within the bound (a whole one where ``integer``)."""
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            return False
        if self.integer and (not float(value).is_integer() or int(value) % self.multiple):
            return False
        above = value > self.low if self.open_low else value >= self.low
        below = value < self.high if self.open_high else value <= self.high
        return above and below

    def check(self, value: float, *, name: str | None = None) -> None:
        """Raise :class:`InputError` naming the limits unless ``value`` is within them."""
        if not self.contains(value):
            raise InputError(f"{self.rule(name=name or self.label)}; got {value!r}.")

    def rule(self, *, name: str | None = None) -> str:
        """The bound in words: "the seed must be a whole number from 0 to 4,294,967,295"."""
        kind = "a whole number" if self.integer else "a number"
        kind = {2: "an even number"}.get(self.multiple, f"a multiple of {self.multiple}") if self.multiple > 1 else kind
        if not (self.open_low or self.open_high):
            return f"{name or self.label} must be {kind} from {_show(self.low)} to {_show(self.high)}"
        low = f"above {_show(self.low)}" if self.open_low else f"at least {_show(self.low)}"
        high = f"below {_show(self.high)}" if self.open_high else f"at most {_show(self.high)}"
        return f"{name or self.label} must be {kind} {low} and {high}"


def _show(x: float) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


SEED = Bound("the seed", 0, 2**32 - 1)
"""Seeds feed numpy, torch and Python's ``random``; all accept 0 .. 2**32 - 1."""

EPSILON_RADIUS = Bound("epsilon (the L-inf radius on the pixel scale [0, 1])", 0, 1, integer=False, open_low=True)
"""The fabrication attack's radius: typical values 2/255 to 32/255."""
ATTACK_STEPS = Bound("the number of attack steps", 1, 500)
LAMBDA = Bound("the AR-MIA lambda", 1e-3, 1e3, integer=False)
GENERATED_ROWS = Bound("the number of synthetic rows", 1, 1_000_000)
GENERATOR_EPOCHS = Bound("the number of generator epochs", 1, 2_000)
FPC_POPULATION = Bound("the population size N_+", 4, 10_000_000)
FPC_TRAIN_SIZE = Bound("the training-set size N", 2, FPC_POPULATION.high)
"""The FPC simulation's N; below N_+ too (``FpcSettings.validate``)."""
MODELS = Bound("the number of models", 2, 1024)
FPC_MODELS = Bound("the number of models", 3, MODELS.high)
"""The FPC simulation's M: the spread of the M subset means needs 3 of them."""
FPC_CELLS = 50_000_000
"""Most population values x models the FPC simulation draws per repeat."""
MIN_MODELS = 8
"""Fewest LiRA models: leave-one-out with the Student-t threshold needs a few out-scores per record."""
LIRA_MODELS = Bound("the number of models", MIN_MODELS, MODELS.high, multiple=2)
"""LiRA's M: even (each record is in exactly half of the models), at least :data:`MIN_MODELS`."""
FPC_REPEATS = Bound("the number of simulation repeats", 1, 10_000)
SHADOW_MODELS = Bound("the number of shadow models", 4, 512, multiple=2)
"""The shadow attack's K: even (every target is in exactly one set of each pair)."""
SHADOW_TARGETS = Bound("the number of targets", 1, 500)
"""The shadow attack's T (each target gets its own test; Holm's correction spends the level over them)."""
PRIOR = Bound("the prior membership probability", 1e-6, 1 - 1e-6, integer=False)
DISCLOSURE_ATTACKS = Bound("the number of disclosure attacks", 1, 200_000)
"""Attacks per table in the singling-out, linkability and inference audits (audit_core.synthetic.disclosure)."""
LINK_K = Bound("the number of linkability neighbours k", 1, 100)
BANDWIDTH = Bound("a KDE bandwidth", 0, 100, integer=False, open_low=True)
"""A fixed KDE bandwidth on the log-like distance axis (instead of a rule: silverman, scott, cv)."""
BANDWIDTH_SCALE = Bound("the bandwidth scale", 0.05, 20, integer=False)
"""Multiplier on the KDE bandwidth rule (the page's slider offers 0.25 to 4)."""
DELTA = Bound("delta", 0, 0.1, integer=False)
"""The delta of an (epsilon, delta) statement (the score check's epsilon lower bound); 1e-5 is usual."""
TARGET_FPR = Bound("a target false-positive rate", 1e-6, 0.5, integer=False)
"""Each FPR at which a TPR is reported by the score check."""

MIN_TRAIN_ROWS = 20
"""Fewest training rows a generator is fitted on (and fewest rows of a comparison's train and holdout parts)."""

TABLE_COLUMNS = Bound("the number of columns of a table", 1, 5_000)
"""Columns in one uploaded table, counted in its header before the rows are parsed (a 10^6-column header hung)."""

MAX_IMAGES = 200_000
"""Most images in one upload."""
MIN_IMAGES = 20
"""Fewest images an audit can split into members, non-members and references."""
IMAGE_SIDE = Bound("the image height and width", 8, 64)
"""Side of one image in pixels: 8x8 digits up to 64x64 (the small CNN and ResNet-18 train in minutes on a CPU)."""
MAX_PIXEL_VALUES = 160_000_000
"""Most pixel values (images x channels x height x width) in one upload: 640 MB as float32."""
MAX_CLASSES = 1000
"""Most classes an image model may have (labels 0 .. 999)."""
MAX_ARRAY_MB = 1024
"""Largest array read from an .npz upload, in MiB, as declared in its header (checked before reading)."""
CPU_AUDIT_SECONDS = 900
"""The longest a fabrication audit's training, or its attacks, may be expected to run on a CPU (a GPU is not limited):
beyond it the run is refused before it starts, with what to change (fewer images, an uploaded model)."""
MAX_LABELS_MB = 64
"""Largest ``labels.csv`` of a PNG folder, in MiB (200,000 rows of a file name, a label and a mask fit in 10)."""
MAX_PNG_MB = 4
"""Largest PNG file of a folder upload, in MiB (a 64x64 colour image takes 12 KiB of pixels)."""
DATABASE_SECONDS = 120.0
"""The longest a table may take to be read from a database (``?table=`` or ``?query=``); then the query is stopped."""
MODEL_FIRST_SECONDS = 10.0
"""The longest an uploaded ONNX model may take on its first 64 records (scikit-learn forests of 500 trees take
milliseconds); beyond it the run is stopped (a graph that loops) with one sentence."""
MAX_MODEL_MB = 200
"""Largest model file, in MiB (ResNet-18 weights are 45 MB)."""

REFERENCE_MODELS = Bound("the number of reference models", 1, 64)
"""Reference models of the model audit (audit_core.model): RMIA's gain is mostly in the first one."""
REFERENCE_EPOCHS = Bound("the number of reference-model epochs", 1, 200)
"""Training epochs of an image model's reference models in the model audit (audit_core.model.images)."""

DP_EPSILON = Bound("the claimed epsilon", 0.01, 100, integer=False)
"""The epsilon of a DP claim checked by the DP claim check (audit_core.dp); it must be positive."""
DP_DELTA = Bound("the claimed delta", 0, 0.1, integer=False, open_low=True)
"""The delta of a DP claim: positive (DP-SGD has no pure-DP guarantee) and at most 0.1 (beyond it the claim is void)."""
CANARIES = Bound("the number of canaries", 10, 50_000)
"""Canaries of the DP claim check; at most half the rows outside the test split (audit_core.dp.canaries)."""
DP_EPOCHS = Bound("the number of training epochs", 1, 200)
DP_ROWS = Bound("the number of rows used", 100, 100_000_000)
"""A seeded sample of the table's rows for the DP claim check (a smaller table: more epochs in the same time)."""
DP_NOISE = Bound("the noise multiplier", 0, 1_000, integer=False, open_low=True)
"""A DP-SGD claim's noise multiplier (noise sd / clipping norm), for the f-DP bound of an uploaded model."""
DP_SAMPLE_RATE = Bound("the sampling rate", 0, 1, integer=False, open_low=True)
"""A DP-SGD claim's Poisson sampling rate (expected batch / rows)."""
DP_STEPS = Bound("the number of DP-SGD steps", 1, 10_000_000)
"""A DP-SGD claim's number of steps."""
