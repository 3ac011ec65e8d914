"""Text that came from a learner's process, made safe to print.

Anything the kernel produced (error messages, its last words on stderr, a
check's detail) can hold terminal control sequences (``\\x1b[2J`` clears the
screen), carriage returns that overwrite a line, bidirectional overrides or
line separators. :func:`escape` shows every such character as an escape
(``\\x1b``, ``\\r``, ``\\u202e``), so what is printed is exactly the text's
printable characters, on one line.
"""

from __future__ import annotations


def escape(text: object, limit: int | None = None) -> str:
    """``text`` with every non-printable character (control, format, separator other than a space)
    written as a Python escape; cut to ``limit`` characters (with "...") when given."""
    s = text if isinstance(text, str) else str(text)
    out = []
    for ch in s:
        if ch.isprintable():
            out.append(ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    result = "".join(out)
    if limit is not None and len(result) > limit:
        result = result[: max(0, limit - 3)] + "..."
    return result
