"""Argument types the tools' command lines share (argparse only: imported at start-up)."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _numbers(text: str, low: int) -> tuple[int, ...]:
    try:
        values = tuple(sorted({int(v) for v in text.split(",") if v.strip()}))
    except ValueError:
        values = ()
    if not values or values[0] < low:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers >= {low}, got {text!r}"
        )
    return values


def counts(text: str) -> tuple[int, ...]:
    """``N,N,...``: distinct integers >= 1, in order."""
    return _numbers(text, 1)


def naturals(text: str) -> tuple[int, ...]:
    """``N,N,...``: distinct integers >= 0, in order."""
    return _numbers(text, 0)


def switches(text: str) -> tuple[bool, ...]:
    """``on``, ``off`` or ``on,off``."""
    words = {w.strip().lower() for w in text.split(",") if w.strip()}
    if not words or not words <= {"on", "off"}:
        raise argparse.ArgumentTypeError(f"expected on, off or on,off, got {text!r}")
    return tuple(sorted(w == "on" for w in words))
