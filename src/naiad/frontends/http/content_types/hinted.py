"""What the codec leaves for the content pass: a request's own content types, raw JSON data.

Imported by the codec, so it imports nothing else of the package.
"""

from __future__ import annotations

from typing import Any


class Hinted:
    """``request.context`` of a request that names a content type itself (in its
    ``parameters``, an input's or an output's): the encoder's ``binary_data_output``
    default, which the content pass puts back."""

    __slots__ = ("binary",)

    def __init__(self, binary: bool) -> None:
        self.binary = binary


class RawJson:
    """An input's JSON ``data`` as the client sent it, for the "json" content type."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value
