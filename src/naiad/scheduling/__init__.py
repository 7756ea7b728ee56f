"""Schedulers: queue requests of one model version and run them on its instances."""

from naiad.scheduling.base import Scheduler
from naiad.scheduling.default import DefaultScheduler

__all__ = ["DefaultScheduler", "Scheduler"]
