"""gRPC over HTTP/2 in the event loop: ``wire`` facts, a ``Connection`` per client
(its ``headers`` blocks, receive ``flow`` control and ``timers``), a ``Call`` per rpc,
the ``limits`` on what a client may make the server hold, and the ``Http2Server``."""
