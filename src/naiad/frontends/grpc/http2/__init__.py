"""gRPC over HTTP/2 in the event loop: ``wire`` facts, a ``Connection`` per client,
a ``Call`` per rpc, and the ``Http2Server`` that listens."""
