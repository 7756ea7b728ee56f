"""The descriptor pool that holds naiad's generated protobuf files.

``tritonclient`` (imported by tests and by users next to naiad) registers
``model_config.proto`` and ``grpc_service.proto`` with the same full names
(``inference.ModelConfig``, ...) in protobuf's *default* pool, with older
contents; a second, different definition in that pool fails at import.
naiad's generated modules therefore add their files to this private pool
(``scripts/gen_protos.py`` rewrites the generated code to use it).  Message
full names stay ``inference.*``, so the wire format and JSON are Triton's.
"""

from __future__ import annotations

from google.protobuf import descriptor_pool

POOL = descriptor_pool.DescriptorPool()

__all__ = ["POOL"]
