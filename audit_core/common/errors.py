"""The one exception type for bad input."""

__all__ = ["InputError"]


class InputError(ValueError):
    """Bad input, described in one plain sentence that says what to fix.

    The dashboard shows the message with ``st.error``; the command line prints it
    as one line on stderr and exits with status 2. Anything else that escapes is
    a bug, not a user error.
    """
