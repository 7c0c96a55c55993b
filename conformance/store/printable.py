"""Text from an op (its exception's message, what it printed, a traceback through it) as the terminal shows it:
control characters (an ANSI colour, NUL, a bell, a carriage return that overwrites the line), undecodable bytes
(the surrogates that stand for invalid UTF-8) and bidirectional overrides spelt as escapes, so that nothing an op
says can restyle or rewrite the terminal; and a very long message cut, saying where.  The run folder keeps the
whole text."""

from __future__ import annotations

import re

SHOWN_CHARACTERS = 1000  # of one message of an op's in the terminal
SHOWN_LINES = 20
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every character that is not for printing (but newlines and tabs) as its Python escape."""
    return _UNPRINTABLE.sub(_escaped, text)


def shortened(text: str, kept_in: str) -> str:
    """`text` cut after SHOWN_LINES lines or SHOWN_CHARACTERS characters, saying how much was cut and that the
    whole of it is in `kept_in`."""
    shown = "\n".join(text.split("\n")[:SHOWN_LINES])[:SHOWN_CHARACTERS]
    if len(shown) == len(text):
        return text
    return f"{shown} [... cut here: {len(text) - len(shown):,} more characters; the whole message is in {kept_in}]"
