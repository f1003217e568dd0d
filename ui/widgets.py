"""Widgets generated from a Settings class's knobs (audit_core.contract): label, help, bounds and choices
come from the knob, so a page and its CLI flag can never disagree on them.

A page chooses where a widget goes and, where it wants a narrower or coarser choice than the CLI
accepts (a slider over a few values), passes ``options``; everything it does not pass comes from
the knob.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from audit_core.contract import Settings


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
    """The widget for ``settings.<name>`` in ``container``; returns its value.

    ``options`` gives a select slider (``slider=True``) or a select box over those values;
    a knob with ``choices`` gives a select box; a bool a checkbox; a bounded number a
    number input with the bound as its limits (``slider=True``: a slider); ``value``
    overrides the default. Other keyword arguments go to the widget (``key``, ``step``,
    ``format``, ``format_func``, ``help``, ``label``).
    """
    knob = settings.knobs()[name]
    default = settings.defaults().get(name) if value is None else value
    label = kwargs.pop("label", knob.label)
    kwargs.setdefault("help", knob.help or None)
    choices = list(options if options is not None else knob.choices or ())
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
    low = kind(max(bound.low, kwargs.pop("min_value", bound.low)))
    high = kind(min(bound.high, kwargs.pop("max_value", bound.high)))
    if slider:
        return container.slider(label, min_value=low, max_value=high, value=kind(default), **kwargs)
    return container.number_input(label, min_value=low, max_value=high, value=kind(default), **kwargs)
