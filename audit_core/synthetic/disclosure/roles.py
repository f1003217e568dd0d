"""What the disclosure attacker knows, set by the steward (:class:`DisclosureRoles`), its defaults and its rules."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from audit_core.common.errors import InputError

__all__ = ["DisclosureRoles", "check_role_columns", "check_roles", "default_roles"]


@dataclass(frozen=True)
class DisclosureRoles:
    """What the attacker knows, set by the steward.

    Attributes
    ----------
    known : tuple of str
        Quasi-identifiers the attacker knows (singling-out predicates, inference).
    link_a, link_b : tuple of str
        The two disjoint column sets of the linkability attack (both empty: no linkability).
    secrets : tuple of str
        Columns the inference attack tries to guess, one result each.
    """

    known: tuple[str, ...]
    link_a: tuple[str, ...]
    link_b: tuple[str, ...]
    secrets: tuple[str, ...]

    def to_json(self) -> dict[str, list[str]]:
        """``known``, ``link_a``, ``link_b``, ``secrets`` as lists (the ``--json`` document's ``disclosure.roles``)."""
        return {"known": list(self.known), "link_a": list(self.link_a), "link_b": list(self.link_b),
                "secrets": list(self.secrets)}  # fmt: skip


def default_roles(
    columns: Sequence[str], *, secrets: Sequence[str] | None = None, known: Sequence[str] | None = None
) -> DisclosureRoles:
    """Sensible roles for a table whose compared columns are ``columns`` (in table order).

    The secret is the last column unless given (often the label: income, diagnosis); the
    attacker knows every other column unless told otherwise; the linkability halves are
    the first and second half of the known columns (none when fewer than two are known).
    """
    columns = tuple(columns)
    if secrets is None and len(columns) < 2:
        raise InputError("The disclosure attacks need at least two compared columns: one known, one secret.")
    secrets = columns[-1:] if secrets is None else tuple(secrets)
    known = tuple(c for c in columns if c not in secrets) if known is None else tuple(known)
    half = (len(known) + 1) // 2
    link_a, link_b = (known[:half], known[half:]) if len(known) >= 2 else ((), ())
    return DisclosureRoles(known=known, link_a=link_a, link_b=link_b, secrets=secrets)


def _quote(names: Sequence[str]) -> str:
    return ", ".join(f"'{c}'" for c in names)


def _named_columns(roles: DisclosureRoles) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return ("known", roles.known), ("linkability", roles.link_a + roles.link_b), ("secret", roles.secrets)


def _check_compared(label: str, names: Sequence[str], columns: Sequence[str]) -> None:
    unknown = [c for c in names if c not in columns]
    if unknown:
        raise InputError(f"The {label} column(s) {_quote(unknown)} are not compared columns of the tables.")


def check_role_columns(roles: DisclosureRoles, columns: Sequence[str]) -> None:
    """Refuse roles that name a column the tables do not compare (``columns``: the compared columns), in one sentence."""
    for label, names in _named_columns(roles):
        _check_compared(label, names, columns)


def check_roles(roles: DisclosureRoles, columns: Sequence[str]) -> None:
    """Refuse impossible roles in one sentence (the tabular audit's ``check``, before anything is computed)."""
    if not roles.known:
        raise InputError("The attacker knows no column; name at least one quasi-identifier (--known).")
    if not roles.secrets:
        raise InputError("No secret column is marked; name at least one column to infer (--secrets).")
    for label, names in _named_columns(roles):
        _check_compared(label, names, columns)
        if len(set(names)) != len(names) and label != "linkability":
            raise InputError(f"A {label} column is named twice; name each once.")
    both = [c for c in roles.secrets if c in roles.known]
    if both:
        raise InputError(f"Column(s) {_quote(both)} are both secret and known to the attacker; a secret cannot be known.")
    if bool(roles.link_a) != bool(roles.link_b):
        raise InputError("The linkability split has an empty side; give columns to both halves (--link-a and --link-b).")
    shared = [c for c in roles.link_a if c in roles.link_b]
    if shared:
        raise InputError(f"Column(s) {_quote(shared)} are on both sides of the linkability split; the halves must be disjoint.")
