"""A refusal as one printable line (``audit_core.common.errors.one_line``): what the CLI prints and a page shows."""

from __future__ import annotations

from audit_core.common.errors import one_line


def test_line_breaks_and_controls_are_shown_escaped_on_one_line():
    quoted = "row 61 ('40,70,Male\n20,11\r\x0b\x0c\x1c\x85\u2028\u2029') \x1b[31mred\x1b[0m \u202eevil\ttab"
    line = one_line(quoted)
    assert len(line.splitlines()) == 1  # str.splitlines splits on every one of those
    assert "\\n" in line
    assert "\\r" in line
    assert "\\x1b[31m" in line
    assert "\\u2028" in line
    assert "\\u202e" in line
    assert "\x1b" not in line
    assert " tab" in line  # a tab is a space


def test_plain_sentences_are_unchanged_and_long_ones_cut():
    sentence = "Table 'train' has 3 columns; give 'credit' (Zürich, 東京, ½)."
    assert one_line(sentence) == sentence
    assert one_line("x" * 5000, limit=100) == "x" * 97 + "..."
