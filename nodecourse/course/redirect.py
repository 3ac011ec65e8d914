"""Keeping stdout for one document: :class:`StdoutToStderr` (``claims --json``, ``audit --json``)."""

from __future__ import annotations

import os
import sys


class StdoutToStderr:
    """Send everything written to stdout (Python's and file descriptor 1) to stderr meanwhile.

    ``claims --json`` must print exactly one JSON document on stdout; a row that
    prints (or a library, or a C extension) must not corrupt it.
    """

    def __enter__(self):
        sys.stdout.flush()
        self._saved_sys = sys.stdout
        self._saved_fd = None
        try:
            sys.stderr.flush()
            self._saved_fd = os.dup(1)
            os.dup2(2, 1)
        except (OSError, ValueError):  # no real fd 1 (embedded interpreters): Python-level only
            self._saved_fd = None
        sys.stdout = sys.stderr
        return self

    def __exit__(self, *exc):
        sys.stdout = self._saved_sys
        if self._saved_fd is not None:
            try:
                sys.stderr.flush()
            finally:
                os.dup2(self._saved_fd, 1)
                os.close(self._saved_fd)
        return False
