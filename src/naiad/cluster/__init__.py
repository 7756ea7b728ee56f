"""``naiad serve --workers N``: the supervisor and what keeps its workers one server.

``supervisor`` is the process that holds the ports and starts, watches and
restarts the workers; ``ready`` is the handshake by which a worker says it
serves.  Inside each worker, ``peers.Cluster`` reaches the other workers
over Unix sockets (``link`` frames the calls, ``wire`` encodes requests and
responses, ``journal`` records the state changes a restarted worker
replays).  The engine's data plane holds a ``Cluster`` but names it only as
a type: the foreground creates it and gives it to the data plane, so calls
point down from here and the engine does not import this package.
"""
