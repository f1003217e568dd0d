"""Widgets generated from a Settings class's knobs (audit_core.contract): label, help, bounds, choices and the
default come from the knob, so a page and its CLI flag can never disagree on them.

A page chooses where a widget goes and, where it wants a narrower or coarser choice than the CLI
accepts (a slider over a few values), passes ``options``; everything it does not pass comes from
the knob.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from audit_core.common.limits import SEED
from audit_core.contract import Settings

__all__ = ["knob_input", "seed_input"]


def knob_input(
    container: Any,
    settings: type[Settings],
    name: str,
    *,
    value: Any = None,
    options: Sequence[Any] | None = None,
    slider: bool = False,
    **kwargs: Any,
) -> Any:
    """The widget for ``settings.<name>`` in ``container``; returns its value (a tuple for a list knob).

    ``options`` gives a select slider (``slider=True``) or a select box over those values
    (a multiselect for a list knob); a knob with choices gives a select box (a multiselect);
    a bool a checkbox; a bounded number a number input with the bound as its limits
    (``slider=True``: a slider); ``value`` overrides the knob's default. Other keyword
    arguments go to the widget (``key``, ``step``, ``format``, ``format_func``, ``help``, ``label``).
    """
    knob = settings.knobs()[name]
    default = settings.defaults().get(name) if value is None else value
    label = kwargs.pop("label", knob.label)
    kwargs.setdefault("help", knob.help or None)
    choices = list(options if options is not None else knob.choices or ())
    if isinstance(default, tuple):
        return tuple(container.multiselect(label, choices, default=[v for v in default if v in choices], **kwargs))
    if choices:
        index = choices.index(default) if default in choices else 0
        if slider:
            return container.select_slider(label, choices, value=choices[index], **kwargs)
        return container.selectbox(label, choices, index=index, **kwargs)
    if isinstance(default, bool):
        return container.checkbox(label, value=default, **kwargs)
    bound = knob.bound
    if bound is None:
        return container.text_input(label, value="" if default is None else str(default), **kwargs)
    kind = int if bound.integer else float
    # a page may offer a narrower range than the CLI accepts, never a wider one
    low = kind(max(bound.low, float(kwargs.pop("min_value", bound.low))))
    high = kind(min(bound.high, float(kwargs.pop("max_value", bound.high))))
    start = kind(default if default is not None else low)
    if slider:
        return container.slider(label, min_value=low, max_value=high, value=start, **kwargs)
    return container.number_input(label, min_value=low, max_value=high, value=start, **kwargs)


def seed_input(container: Any = st, *, key: str | None = None) -> int:
    """The seed widget, bounded as on the command line (:data:`audit_core.common.limits.SEED`)."""
    return int(container.number_input("Seed", min_value=0, max_value=int(SEED.high), value=0, step=1, key=key))
