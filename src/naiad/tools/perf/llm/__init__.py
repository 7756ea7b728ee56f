"""``naiad perf --endpoint-type ...``: an LLM's streamed generation, measured as GenAI-Perf does.

Time to first token, inter-token latency, request latency, output (and,
where the server counts it, input) sequence length, output tokens/s and
requests/s, at each concurrency or request rate of a sweep, over OpenAI's
chat or completions streams, Triton's generate_stream or gRPC
ModelStreamInfer (docs/tools/perf.md, "LLM measurements").  The modules:
``settings`` (the flags), ``prompts``, ``streams`` (what a transport is) with
``http``/``sse`` and ``grpc``, ``load``, ``measure``, ``figures``, ``report``,
``api`` (the sweep) and ``command``.
"""
