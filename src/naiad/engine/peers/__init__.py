"""The other workers of a ``--workers`` server (see :mod:`naiad.workers`)."""

from naiad.engine.peers.cluster import Cluster
from naiad.engine.peers.statistics import get, stats_path, with_peers

__all__ = ["Cluster", "get", "stats_path", "with_peers"]
