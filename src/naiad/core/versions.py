"""Model version text as both protocols carry it, parsed in one place.

HTTP (a path segment) and gRPC (a string field) both send the version as
text; the frontends turn it into a number here so the two agree on every
odd string and neither reaches into the engine for it.
"""

from __future__ import annotations

from naiad.core.errors import InvalidArgument


def parse_version(text: str) -> int | None:
    """A protocol version string: "" means the version policy's choice."""
    if text == "":
        return None
    if text.isdigit():
        return int(text)
    raise InvalidArgument(f"failed to get model version from specified version string '{text}'")
