"""A page's one way to an audit's result: a :class:`Request` in, an :class:`~audit_core.contract.Outcome` out.

A page builds its inputs (:func:`load_input`) and settings (its widgets, generated from the
knobs), and when the user asks for a run keeps them as a :class:`Request`;
:func:`audit_outcome` then gives the outcome on every rerun: ``audit_core.contract.run``
once per inputs, seed and costly settings (its setup stage kept too, so a new attack radius
or disclosure role does not retrain or recompute distances), re-scored in an instant for the
``rescore`` knobs the page passes. Every key is the contract's (:func:`audit_core.contract.stage_key`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

import pandas as pd
import streamlit as st

from audit_core import contract
from audit_core.common.errors import InputError, one_line
from audit_core.common.runtime import ProgressFn
from audit_core.contract import Audit, Inputs, Outcome, Result, Settings
from ui.store import UPLOADED_BY, cached_run, load_table, result_cache, session_id

__all__ = ["Request", "audit_outcome", "load_input", "rescored", "run_audit", "show_input_error"]


_S = TypeVar("_S", bound=Settings)
_R = TypeVar("_R", bound=Result)


@dataclasses.dataclass(frozen=True)
class Request(Generic[_S]):
    """What the user asked to audit: the inputs, the settings (re-score knobs at any value) and the seed."""

    inputs: Inputs
    settings: _S
    seed: int


_MARKDOWN = re.compile(r"([\\\[\]<>$])")
"""What markdown would turn into a link, an image, HTML or a formula (``[..](..)``, ``<b>``, ``$x$``), escaped."""
_AUTOLINK = re.compile(r"(?i)(:|www)(//|\.)")
"""Where a bare address starts (``https://``, ``www.``; and after an ``@``): a word joiner goes in, so that it is not
made a link."""


def show_input_error(exc: Exception) -> None:
    """Show a bad-input error as one clear sentence (no traceback), as the CLI prints it (``one_line``).

    The sentence quotes what it was given (a column name, a CSV row, a model's own error text), so it is shown
    as text: markdown, HTML and ``$...$`` math in it are escaped, never rendered (no link or image of an upload's
    choosing on the page)."""
    text = _MARKDOWN.sub(r"\\\1", one_line(str(exc)))
    text = _AUTOLINK.sub("\\1\u2060\\2", text).replace("@", "@\u2060")  # no bare URL or e-mail address made a link
    st.error(text, icon="🚫")


def load_input(audit: Audit[Any, Any], name: str, source: bytes | str | Path, filename: str, *, upload: bool) -> Any:
    """Input ``name`` of ``audit`` read from an upload's bytes or a sample's path, as the CLI reads it.

    Tables go through the result store (read once; an upload kept for its own session); other
    inputs (a model file; members that may be images or a table) through the input's own loader, an uploaded
    table marked with its session as the store marks it.
    """
    spec = next(s for s in audit.inputs if s.name == name)
    if spec.table:
        return load_table(source, spec.message_name(filename), upload=upload)
    value = spec.read(source if isinstance(source, bytes) else Path(source).read_bytes(), filename)
    if upload and isinstance(value, pd.DataFrame):  # a table among other kinds of input (the model audit's members)
        value.attrs[UPLOADED_BY] = session_id() or ""
    return value


def run_audit(
    audit: Audit[_S, Any],
    inputs: Inputs,
    settings: _S,
    *,
    seed: int,
    label: str,
    progress_for: Callable[[str], ProgressFn | None] | None = None,
) -> Outcome[_S, Any]:
    """The outcome for these inputs, settings and seed: run once (kept in the result store), then re-scored."""
    from ui.cluster import dask_client

    settings.validate()
    at_run = settings.upto("run")
    key = contract.stage_key(audit, inputs, at_run, seed, "run")

    def compute(progress: ProgressFn) -> Outcome[_S, Any]:
        return contract.run(audit, inputs, at_run, seed=seed, progress=progress, client=dask_client(),
                            cache=result_cache(audit.name), progress_for=progress_for)  # fmt: skip

    return contract.rescore(cached_run(label, key, compute), settings)


def audit_outcome(
    audit: Audit[_S, Any],
    key: str,
    request: Request[_S] | None,
    *,
    label: str,
    progress_for: Callable[[str], ProgressFn | None] | None = None,
    **cheap: Any,
) -> Outcome[_S, Any] | None:
    """The outcome of this session's last request for ``audit`` (``request``, when given, replaces it), or None.

    ``cheap`` are the page's current values of ``rescore`` knobs (sliders under the result).
    A new request that is refused (bad input) is one sentence, and the last good result stays.
    """
    if request is not None:
        try:
            outcome = run_audit(audit, request.inputs, dataclasses.replace(request.settings, **cheap), seed=request.seed,
                                label=label, progress_for=progress_for)  # fmt: skip
        except InputError as exc:
            show_input_error(exc)
        else:
            st.session_state[key] = request
            return outcome
    saved: Request[_S] | None = st.session_state.get(key)
    if saved is None:
        return None
    settings = dataclasses.replace(saved.settings, **cheap)
    return run_audit(audit, saved.inputs, settings, seed=saved.seed, label=label, progress_for=progress_for)


def rescored(outcome: Outcome[_S, _R], **cheap: Any) -> Outcome[_S, _R]:
    """``outcome`` with new values of its ``rescore`` knobs (a widget whose options come from the result itself)."""
    return contract.rescore(outcome, dataclasses.replace(outcome.settings, **cheap))
