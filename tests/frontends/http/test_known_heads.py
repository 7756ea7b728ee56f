"""A connection takes a head it parsed before without the parser (frontends/http/protocol.py):
each request still gets its own body, in order, and anything that is not the very same
plain head (another length, a split body, chunked, ``Connection: close``, a full request
buffer) goes through the parser as before."""

from __future__ import annotations

import pytest

from frontends.http.memory import MemoryTransport, connection
from naiad.frontends.http.message import Request, Response
from naiad.frontends.http.protocol import HttpConnection

pytestmark = pytest.mark.unit

HEAD = b"POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n"


class _Echo:
    """Answers every request at once with its body."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, bytes, Request]] = []

    def handle(self, req: Request) -> Response:
        self.seen.append((req.method, req.path, req.body, req))
        return Response(200, [req.body], b"application/octet-stream")


def _open(budget: int = 0) -> tuple[_Echo, HttpConnection, MemoryTransport]:
    app = _Echo()
    conn = connection(app, budget)
    transport = MemoryTransport()
    conn.connection_made(transport)
    return app, conn, transport


def _bodies(transport: MemoryTransport) -> list[bytes]:
    return [w.partition(b"\r\n\r\n")[2] for w in transport.written]


async def test_a_repeated_head_gives_each_request_its_own_body() -> None:
    app, conn, transport = _open()
    bodies = [b"%04d" % i for i in range(6)]
    for body in bodies:
        conn.data_received(HEAD + body)
    assert [(m, p, b) for m, p, b, _ in app.seen] == [("POST", "/v2/models/m/infer", b)
                                                      for b in bodies]  # fmt: skip
    assert _bodies(transport) == bodies
    # The second request on was built from the first one's parse: the very same headers.
    assert all(req.headers is app.seen[1][3].headers for *_, req in app.seen[1:])
    assert app.seen[0][3].headers == {"host": "x", "content-length": "4"}


async def test_pipelined_known_and_other_requests_keep_their_order() -> None:
    app, conn, transport = _open()
    conn.data_received(HEAD + b"aaaa")
    other = b"POST /v2/models/n/infer HTTP/1.1\r\nContent-Length: 2\r\n\r\nzz"
    conn.data_received(HEAD + b"bbbb" + other + HEAD + b"cccc" + HEAD + b"dd")
    assert [p for _, p, _, _ in app.seen] == ["/v2/models/m/infer", "/v2/models/m/infer",
                                              "/v2/models/n/infer", "/v2/models/m/infer"]  # fmt: skip
    assert _bodies(transport) == [b"aaaa", b"bbbb", b"zz", b"cccc"]
    conn.data_received(b"ee")  # the last body, split across reads, completes through the parser
    assert _bodies(transport)[-1] == b"ddee"


async def test_another_length_or_a_split_body_is_parsed() -> None:
    app, conn, transport = _open()
    conn.data_received(HEAD + b"1234")
    longer = HEAD.replace(b"Content-Length: 4", b"Content-Length: 6")
    conn.data_received(longer + b"123456")
    conn.data_received(HEAD + b"12")
    conn.data_received(b"34")
    conn.data_received(HEAD[:10])
    conn.data_received(HEAD[10:] + b"abcd")
    assert _bodies(transport) == [b"1234", b"123456", b"1234", b"abcd"]


async def test_chunked_and_closing_heads_are_never_taken_as_known() -> None:
    app, conn, transport = _open()
    chunked = b"POST /v2/models/m/infer HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    conn.data_received(chunked + b"2\r\nab\r\n0\r\n\r\n")
    conn.data_received(chunked + b"3\r\nabc\r\n0\r\n\r\n")
    assert _bodies(transport) == [b"ab", b"abc"]
    closing = HEAD.replace(b"Host: x", b"Connection: close")
    conn.data_received(closing + b"last")
    assert _bodies(transport)[-1] == b"last"
    assert b"Connection: close" in transport.written[-1] and transport.closed


async def test_a_known_head_past_the_request_buffer_gets_the_parsers_503() -> None:
    app, conn, transport = _open(budget=6)
    conn.data_received(HEAD + b"1234")  # answered at once: its 4 bytes are given back
    assert conn.budget.held == 0
    conn.budget.take(4)  # another client's body held meanwhile
    conn.data_received(HEAD + b"5678")
    assert transport.written[-1].startswith(b"HTTP/1.1 503 ")
    assert b"--max-request-buffer-size" in transport.written[-1]
    assert len(app.seen) == 1 and transport.closed
