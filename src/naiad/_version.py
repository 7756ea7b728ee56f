"""naiad's own version, and the Triton release whose protocol it speaks.

``naiad --version`` and the package metadata say naiad's version; server
metadata (``GET /v2``, gRPC ``ServerMetadata``) reports the Triton version,
as clients and tools that check it expect.
"""

__version__ = "0.13.0"
TRITON_VERSION = "2.51.0"
