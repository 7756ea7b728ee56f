"""Backends: execute batches of requests on loaded model instances."""

from naiad.backends.base import Backend, InstanceSpec, LoadContext, ModelInstance
from naiad.backends.registry import BackendRegistry

__all__ = ["Backend", "BackendRegistry", "InstanceSpec", "LoadContext", "ModelInstance"]
