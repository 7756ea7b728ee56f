"""``naiad serve --workers N``: the supervisor and what keeps its workers one server.

``supervisor`` is the process that holds the ports and starts, watches and
restarts the workers; its ``coordinator`` puts the server's state changes in
one order, has every worker apply them and keeps the ``journal`` a restarted
worker replays.  Inside each worker, ``peers.Cluster`` hands changes to the
supervisor and forwards a sequence's requests to the worker that owns it
(``link`` frames the calls over Unix sockets, ``wire`` encodes requests and
responses); ``ready`` is how a worker notices that its supervisor died.  The
engine declares what it needs of the workers (``naiad.engine.workers``) and
the foreground hands a worker's data plane its ``Cluster``, so calls point
down from here and the engine names nothing of this package.
"""
