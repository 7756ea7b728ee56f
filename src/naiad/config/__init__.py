"""Model configuration: ``config.pbtxt`` parsing, platform rules, defaults,
validation and Triton's JSON rendering."""

from naiad.config.errors import ConfigError
from naiad.config.files import check_file_names_first, check_override
from naiad.config.from_json import config_from_json
from naiad.config.model_config_pb2 import ModelConfig
from naiad.config.normalize import normalize
from naiad.config.parse import parse_config_text, read_model_config
from naiad.config.platform import (
    DEFAULT_MODEL_FILENAMES,
    ENSEMBLE_PLATFORM,
    KNOWN_PLATFORMS,
    fill_platform_and_backend,
)
from naiad.config.render import config_to_dict, config_to_json, config_to_pbtxt
from naiad.config.validate import validate, validate_all

__all__ = [
    "DEFAULT_MODEL_FILENAMES",
    "ENSEMBLE_PLATFORM",
    "KNOWN_PLATFORMS",
    "ConfigError",
    "ModelConfig",
    "check_file_names_first",
    "check_override",
    "config_from_json",
    "config_to_dict",
    "config_to_json",
    "config_to_pbtxt",
    "fill_platform_and_backend",
    "normalize",
    "parse_config_text",
    "read_model_config",
    "validate",
    "validate_all",
]
