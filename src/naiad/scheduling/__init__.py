"""Schedulers: queue requests of one model version and run them on its instances."""

from naiad.scheduling.admission import AdmissionControl, ModelAdmission
from naiad.scheduling.base import Scheduler, ServerLoad
from naiad.scheduling.default import DefaultScheduler
from naiad.scheduling.dynamic import DynamicBatcher
from naiad.scheduling.rate_limiter import RateLimiter, ResourceLimit
from naiad.scheduling.select import make_scheduler

__all__ = [
    "AdmissionControl",
    "DefaultScheduler",
    "DynamicBatcher",
    "ModelAdmission",
    "RateLimiter",
    "ResourceLimit",
    "Scheduler",
    "ServerLoad",
    "make_scheduler",
]
