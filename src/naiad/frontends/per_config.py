"""What a frontend derives from a model's config (its OpenAI binding, its content-type
plan, its OpenAPI document), kept while that config is the one loaded.

A reload makes a new config object, so identity says whether a kept value is
still right, with no notice from the engine and no comparison of contents.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class PerConfig(Generic[K, V]):
    def __init__(self, limit: int = 1024) -> None:
        self.limit = limit
        self._held: dict[K, tuple[object, Hashable, V]] = {}

    def get(self, key: K, config: object, stamp: Hashable = None) -> V | None:
        """The value kept for ``key`` if it was made from ``config`` (and ``stamp``)."""
        held = self._held.get(key)
        if held is not None and held[0] is config and held[1] == stamp:
            return held[2]
        return None

    def put(self, key: K, config: object, value: V, stamp: Hashable = None) -> V:
        if len(self._held) >= self.limit and key not in self._held:
            self._held.clear()  # models come and go: start over rather than grow
        self._held[key] = (config, stamp, value)
        return value
