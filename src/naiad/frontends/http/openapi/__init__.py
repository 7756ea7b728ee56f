"""OpenAPI 3.1 documents generated from each model's config, and Swagger UI at ``/docs``
(docs/openapi.md)."""

from naiad.frontends.http.openapi.service import SERVER_DOCUMENT, OpenApi

__all__ = ["SERVER_DOCUMENT", "OpenApi"]
