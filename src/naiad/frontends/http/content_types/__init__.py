"""Content types on the wire (MLServer's ``content_type``): images, data frames, strings,
JSON, dates and base64 decoded into the model's tensors in the HTTP frontend, and
content-typed outputs written back as JSON values (docs/content-types.md)."""

from naiad.frontends.http.content_types.decode import OutputCodecs, decode_content
from naiad.frontends.http.content_types.hinted import Hinted, RawJson
from naiad.frontends.http.content_types.plan import KINDS, ContentTypes, ModelPlan

__all__ = [
    "KINDS",
    "ContentTypes",
    "Hinted",
    "ModelPlan",
    "OutputCodecs",
    "RawJson",
    "decode_content",
]
