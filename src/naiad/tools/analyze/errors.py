"""How ``naiad analyze`` stops early: one line for the user, never a traceback."""

from __future__ import annotations


class AnalyzeError(Exception):
    """Something the user named is missing, malformed or unsupported, or the server
    it needs does not start (exit 2)."""

    exit_code = 2


class NothingFits(AnalyzeError):
    """Every configuration was measured, none met the constraints (exit 1); the CSV
    and the report are written all the same."""

    exit_code = 1
