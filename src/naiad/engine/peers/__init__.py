"""The other workers of a ``--workers`` server (see :mod:`naiad.workers`)."""

from naiad.engine.peers.cluster import Cluster

__all__ = ["Cluster"]
