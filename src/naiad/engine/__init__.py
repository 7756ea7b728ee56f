"""The engine: the data plane every frontend calls, and the models it serves.

It validates and routes requests, loads and unloads models (model control,
warmup, the repository index), and keeps what spans one request: statistics,
tracing and the response cache.  It sits between the frontends above and
the schedulers below; nothing below imports it.
"""
