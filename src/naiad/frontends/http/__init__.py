"""Triton's HTTP/REST protocol on asyncio + httptools."""

from naiad.frontends.http.server import HttpFrontend, start

__all__ = ["HttpFrontend", "start"]
