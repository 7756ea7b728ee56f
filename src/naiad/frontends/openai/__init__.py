"""The OpenAI-compatible API on the HTTP port (docs/openai.md): ``/v1/models``,
``/v1/chat/completions``, ``/v1/completions`` and ``/v1/embeddings`` over the models
that opt in through their config's ``openai.*`` parameters."""
