"""Request tracing and its settings, in one place.

``tracer`` samples requests and records Triton's timestamps, ``settings``
holds the global and per-model trace settings the trace extension updates,
and finished traces go to a file (``file``) or an OpenTelemetry collector
(``otel``).  The engine owns one ``Tracer`` and one ``TraceSettings``.
"""
