"""Traffic splits between the versions of one model (canary releases, A/B tests).

A model's config asks for one in its parameters::

    parameters { key: "naiad.traffic_split" value: { string_value: "1:90,2:10" } }
    parameters { key: "naiad.traffic_sticky" value: { string_value: "user" } }

A request that names no version then goes to version 1 or 2 in those
proportions; a request that names one gets that one.  The turn goes round
in smooth weighted round robin (nginx's), so any ten requests in a row
split exactly 9 to 1 rather than by chance.  With ``naiad.traffic_sticky``
a request carrying that request parameter goes where its value hashes to
(the same user, the same version, on every worker); one without it takes
its turn.  Versions that are not ready are left out while they are not.

The split changes at run time through the load API: a load whose config
differs from the loaded one only in these parameters (or a shadow's,
engine/shadow.py) keeps every version as it runs and changes the routing
alone.
"""

from __future__ import annotations

import zlib
from collections.abc import Collection, Mapping

from naiad.config import ModelConfig
from naiad.core.errors import InvalidArgument
from naiad.engine import shadow

SPLIT = "naiad.traffic_split"
STICKY = "naiad.traffic_sticky"


class TrafficSplit:
    """The weights of one model's versions, and whose turn it is."""

    def __init__(self, weights: Mapping[int, int], sticky: str = "") -> None:
        self.weights = dict(sorted(weights.items()))
        self.sticky = sticky
        self._credit = dict.fromkeys(self.weights, 0)

    def choose(self, ready: Collection[int], parameters: Mapping[str, object]) -> int | None:
        """The version for a request without one (None: no weighted version is ready)."""
        weights = {v: w for v, w in self.weights.items() if v in ready}
        if not weights:
            return None
        key = parameters.get(self.sticky) if self.sticky else None
        if key is not None:
            point = zlib.crc32(str(key).encode()) % sum(weights.values())
            for version, weight in weights.items():
                if point < weight:
                    return version
                point -= weight
        # Smooth weighted round robin: each version gains its weight, the richest goes
        # and pays the total.
        credit = self._credit
        for version, weight in weights.items():
            credit[version] += weight
        chosen = max(weights, key=lambda v: credit[v])
        credit[chosen] -= sum(weights.values())
        return chosen

    def shares(self) -> dict[str, float]:
        """Each version's share of the traffic, as the dashboard shows it."""
        total = sum(self.weights.values())
        return {str(v): w / total for v, w in self.weights.items()}


def split_of(config: ModelConfig, versions: Collection[int]) -> TrafficSplit | None:
    """The split ``config`` asks for, checked against the ``versions`` its policy loads."""
    text = _parameter(config, SPLIT)
    sticky = _parameter(config, STICKY)
    if not text:
        if sticky:
            raise InvalidArgument(f"model '{config.name}': {STICKY} needs {SPLIT}")
        return None
    weights: dict[int, int] = {}
    for part in text.split(","):
        version, sep, weight = part.strip().partition(":")
        if not (sep and version.strip().isdigit() and weight.strip().isdigit()):
            raise InvalidArgument(
                f"model '{config.name}': {SPLIT} must be 'version:weight,...' "
                f"(for example '1:90,2:10'), not '{text}'"
            )
        weights[int(version)] = int(weight)
    missing = sorted(set(weights) - set(versions))
    if missing:
        raise InvalidArgument(
            f"model '{config.name}': {SPLIT} names version(s) {missing}, which its version "
            f"policy does not load (it loads {sorted(versions)})"
        )
    weights = {v: w for v, w in weights.items() if w > 0}
    if not weights:
        raise InvalidArgument(f"model '{config.name}': {SPLIT} gives no version any weight")
    return TrafficSplit(weights, sticky)


def same_but_routing(a: ModelConfig, b: ModelConfig) -> bool:
    """Whether two configs differ at most in where requests go (split and shadow)."""
    return _without_routing(a) == _without_routing(b)


def _without_routing(config: ModelConfig) -> ModelConfig:
    copy = ModelConfig()
    copy.CopyFrom(config)
    for key in (SPLIT, STICKY, shadow.MODEL, shadow.VERSION, shadow.FRACTION):
        if key in copy.parameters:
            del copy.parameters[key]
    return copy


def _parameter(config: ModelConfig, key: str) -> str:
    value = config.parameters.get(key)
    return value.string_value.strip() if value is not None else ""
