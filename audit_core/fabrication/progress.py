"""Progress of a fabrication run: the step running, by name, and the time left.

A run is a plan of named steps, each weighted by its expected share of the work
(image-steps for the attacks), and a step of items (one attack each) is split the same way.
Every message names the step, its place in the plan and the item running and, once a
second of work has been measured, the time left, extrapolated from the pace since the first
report (one-off costs before it, such as imports, are left out):
``"step 3 of 5, regime map (MFA at 5 radii): MFA at 16/255 (2 of 4), step 20/40 · about 12 s left in the
attacks"``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from audit_core.common.errors import InputError
from audit_core.common.limits import CPU_AUDIT_SECONDS
from audit_core.common.runtime import ProgressFn, as_progress

__all__ = ["check_cpu_time", "plan", "split", "time_left_text", "with_time_left"]

_CPU_SECONDS_PER_PIXEL = {"small_cnn": (6e-5, 2.1e-7), "resnet18": (0.0, 1.9e-5)}
"""One forward and backward pass of one image on one CPU thread of the 2-core VM, ``a + b x pixels`` seconds: the
small CNN 80 us at 8x8 and 230 us at 28x28 (20,000 images), ResNet-18 58 ms at 3x32x32."""

_MIN_MEASURED_S = 1.0
"""Seconds of work measured before a time left is given (earlier ones are noise)."""
_MIN_MEASURED_FRACTION = 0.01
"""Share of the work measured before a time left is given."""


def time_left_text(seconds: float) -> str:
    """``"about 12 s"``, ``"about 2 min"``: rounded as far as such an estimate is worth.

    >>> time_left_text(3.4), time_left_text(47), time_left_text(131)
    ('about 3 s', 'about 45 s', 'about 2 min')
    """
    if seconds < 10:
        return f"about {max(1, round(seconds))} s"
    if seconds < 90:
        return f"about {5 * round(seconds / 5)} s"
    return f"about {round(seconds / 60)} min"


def with_time_left(
    progress: ProgressFn | None, *, what: str, clock: Callable[[], float] = time.monotonic
) -> ProgressFn:
    """``progress`` with the time left appended to each message, extrapolated from the pace so far.

    The pace is measured from the first report of some progress on, so that one-off costs
    before it (imports, the first batch) do not inflate the estimate. ``what`` names the whole
    the fractions measure (``"... left in the attacks"``). Until a second and 1 % of the work
    have been measured the message says the time left is being estimated.
    """
    outer = as_progress(progress)
    anchor: list[tuple[float, float]] = []  # (time, fraction) of the first report past 0

    def report(fraction: float, message: str) -> None:
        done, now = min(max(float(fraction), 0.0), 1.0), clock()
        if not anchor and done > 0.0:
            anchor.append((now, done))
        t1, f1 = anchor[0] if anchor else (now, done)
        if done >= 1.0:
            left = "finished"
        elif now - t1 >= _MIN_MEASURED_S and done - f1 >= _MIN_MEASURED_FRACTION:
            left = f"{time_left_text((now - t1) * (1.0 - done) / (done - f1))} left in {what}"
        else:
            left = f"estimating the time left in {what}"
        outer(done, f"{message} · {left}" if message else left)

    return report


def split(progress: ProgressFn | None, parts: Sequence[tuple[str, float]], *, numbered: bool = False) -> list[ProgressFn]:
    """One callback per part of ``parts`` (``(label, weight)``), in order, each mapping its own fraction onto
    its share of ``progress`` (weights normalised; weight 0 takes no room) and prefixing its messages with
    its label (``numbered``: ``"step 2 of 5, label: ..."``, otherwise ``"label, ..."``)."""
    outer = as_progress(progress)
    weights = [max(0.0, float(w)) for _, w in parts]
    total = sum(weights) or 1.0
    n = len(parts)

    def part(i: int) -> ProgressFn:
        start, share = sum(weights[:i]) / total, weights[i] / total
        label = f"step {i + 1} of {n}, {parts[i][0]}" if numbered else parts[i][0]
        sep = ": " if numbered else ", "

        def report(fraction: float, message: str) -> None:
            outer(start + share * min(max(float(fraction), 0.0), 1.0), f"{label}{sep}{message}" if message else label)

        return report

    return [part(i) for i in range(n)]


def plan(
    progress: ProgressFn | None,
    steps: Sequence[tuple[str, float]],
    *,
    what: str,
    clock: Callable[[], float] = time.monotonic,
) -> list[ProgressFn]:
    """The numbered steps of a run (``(name, weight)``), each message ending with the time left in ``what``."""
    return split(with_time_left(progress, what=what, clock=clock), steps, numbered=True)


def check_cpu_time(
    image_steps: float, *, pixels: int, arch: str | None, device_type: str, what: str, fix: str
) -> None:
    """Refuse, before it starts, work that would run past :data:`~audit_core.common.limits.CPU_AUDIT_SECONDS` on a CPU.

    ``image_steps`` counts forward-and-backward passes of one image of ``pixels`` values (a GPU is
    not limited: it is tens of times faster); ``what`` names the work and ``fix`` says what to
    change, in the sentence. A model of no built-in architecture counts as a ResNet-18.
    """
    a, b = _CPU_SECONDS_PER_PIXEL.get(arch or "resnet18", _CPU_SECONDS_PER_PIXEL["resnet18"])
    seconds = image_steps * (a + b * pixels)
    if device_type == "cpu" and seconds > CPU_AUDIT_SECONDS:
        raise InputError(f"{what} would take {time_left_text(seconds)} on this machine's CPU; an audit here is kept "
                         f"under {CPU_AUDIT_SECONDS // 60} min: {fix}.")  # fmt: skip
