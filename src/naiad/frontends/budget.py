"""The request bytes a server holds for all its clients at once: one budget per server.

Every other limit bounds one request or one connection; clients that each stay
within those can still add up (a body trickled on each of thousands of
connections, a large gRPC message short of its last byte on each of many
streams).  The HTTP and gRPC frontends of a server take what they buffer of
request bodies and messages from one :class:`RequestBudget`, made by the
server and handed down, and give it back when the request is answered, the
message is handed over or the connection closes.  A request that does not
fit is refused (HTTP 503, gRPC RESOURCE_EXHAUSTED) and everything else goes
on.  It belongs to one process: with ``--workers`` each worker has its own.
"""

from __future__ import annotations


class RequestBudget:
    """Request bytes buffered now, all frontends and connections together (event loop only)."""

    __slots__ = ("limit", "held")

    def __init__(self, limit: int = 0) -> None:
        if limit < 0:
            raise ValueError("--max-request-buffer-size must be 0 (no limit) or more")
        #: the most bytes held at once (--max-request-buffer-size); 0: no limit
        self.limit = limit
        self.held = 0

    def fits(self, size: int) -> bool:
        """Whether ``size`` more bytes could be taken now."""
        return not self.limit or self.held + size <= self.limit

    def take(self, size: int) -> bool:
        """Hold ``size`` more bytes; False (and nothing taken) when they do not fit."""
        if self.limit and self.held + size > self.limit:
            return False
        self.held += size
        return True

    def give(self, size: int) -> None:
        """``size`` bytes taken before are no longer held."""
        self.held -= size

    def refusal(self) -> str:
        """What a refused client is told."""
        return (
            f"the server holds its limit of {self.limit} bytes of request data from all "
            "clients (--max-request-buffer-size); try again later"
        )
