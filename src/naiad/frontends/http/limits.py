"""What one HTTP/1.1 client may cost the server: sizes of a request head, time, connections.

Every bound a peer could otherwise stretch without limit is here; the defaults
(nginx's and Node's choices) are :class:`~naiad.options.declarations.ServerOptions`',
and ``docs/security.md`` lists them with their flags.  The body limit is
Triton's ``--http-max-input-size``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from naiad.options.declarations import ServerOptions


@dataclass(frozen=True)
class HttpLimits:
    #: the request body, after decompression too (Triton's --http-max-input-size)
    max_input_size: int
    #: the request target (path and query): 414 past it
    max_url_size: int
    #: one header field, name and value: 431 past it
    max_header_size: int
    #: the whole head (request line and every header): 431 past it
    max_head_size: int
    #: header fields in one request: 431 past it
    max_header_count: int
    # Timeouts in seconds; 0 turns one off.
    #: seconds for a whole request head to arrive, from its first byte (408)
    header_timeout: float
    #: a body must bring ``body_min_rate * body_timeout`` bytes (at least one) in every
    #: ``body_timeout`` seconds, or it is answered 408
    body_timeout: float
    #: bytes per second, averaged over each ``body_timeout`` (0: any byte restarts it)
    body_min_rate: int
    #: seconds an idle keep-alive connection is kept
    keepalive_timeout: float
    #: open connections; at the cap the longest-idle one makes room, or a newcomer gets 503
    max_connections: int

    @classmethod
    def from_options(cls, options: ServerOptions) -> HttpLimits:
        return cls(
            max_input_size=options.http_max_input_size,
            max_url_size=options.http_max_url_size,
            max_header_size=options.http_max_header_size,
            max_head_size=options.http_max_head_size,
            max_header_count=options.http_max_header_count,
            header_timeout=options.http_header_timeout_secs,
            body_timeout=options.http_body_timeout_secs,
            body_min_rate=max(options.http_body_min_rate, 0),
            keepalive_timeout=options.http_keepalive_timeout_secs,
            max_connections=options.http_max_connections,
        )

    @property
    def body_progress(self) -> int:
        """Bytes a body must bring in each body timeout to keep going."""
        return max(1, int(self.body_min_rate * self.body_timeout))

    @property
    def sweep_interval(self) -> float:
        """How often deadlines are looked at: often enough for the shortest timeout."""
        timeouts = (self.header_timeout, self.body_timeout, self.keepalive_timeout)
        shortest = min((t for t in timeouts if t > 0), default=4.0)
        return max(0.05, min(1.0, shortest / 4))
