"""The two ways ``naiad optimize`` stops: a problem with what it was given, or a
result it will not write.  Both print as one line; neither prints a traceback."""

from __future__ import annotations


class OptimizeError(Exception):
    """Something the user named is missing, malformed or unsupported (exit 2)."""

    exit_code = 2


class Refused(OptimizeError):
    """The optimised model answers too differently from the original, or is not
    faster beyond noise (exit 1)."""

    exit_code = 1


def missing_package(package: str, extra: str | None = None) -> OptimizeError:
    """The error for an absent optional library, with the command that installs it."""
    target = f"naiad[{extra}]" if extra else package
    return OptimizeError(f"{package} is not installed; install it with: pip install '{target}'")
