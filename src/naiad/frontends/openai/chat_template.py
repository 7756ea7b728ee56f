"""Turning chat messages into the model's prompt text, as Hugging Face tokenizers do.

The template is Jinja, rendered in Jinja's immutable sandbox with the same
settings and helpers as ``transformers``' ``apply_chat_template``
(``raise_exception``, ``strftime_now``, a ``tojson`` that keeps non-ASCII
text), so a template written for a tokenizer renders the same text here.
It comes from the model's config (``openai.chat_template``): the template
itself, or a file or tokenizer folder in the model's folder.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from naiad.core.errors import Internal, NotFound
from naiad.frontends.openai.errors import BadField

if TYPE_CHECKING:
    from jinja2 import Template

    from naiad.engine.dataplane import DataPlane

#: Used when a model names no template: one "role: content" line per message.
DEFAULT = (
    "{% for message in messages %}{{ message.role }}: {{ message.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


class ChatTemplate:
    def __init__(self, source: str, special: dict[str, str]) -> None:
        self.template = _compile(source)
        #: bos_token, eos_token, ... from the tokenizer's settings, as templates expect
        self.special = special

    def render(self, messages: list[dict[str, Any]], tools: list[Any] | None) -> str:
        from jinja2 import TemplateError

        try:
            return self.template.render(
                messages=messages, tools=tools, add_generation_prompt=True, **self.special
            )
        except _Refused as exc:
            raise BadField("messages", str(exc)) from None
        except TemplateError as exc:
            raise Internal(f"the model's chat template failed: {exc}") from None


async def load(dp: DataPlane, model: str, value: str) -> ChatTemplate:
    """The template ``openai.chat_template`` names (docs/openai.md); DEFAULT for none."""
    if not value:
        return ChatTemplate(DEFAULT, {})
    if "{{" in value or "{%" in value:
        return ChatTemplate(value, {})
    folder = value.rstrip("/")
    for path in (folder, f"{folder}/chat_template.jinja", f"{folder}/tokenizer_config.json"):
        try:
            data = await dp.model_file(model, path)
        except NotFound:
            continue
        if not path.endswith(".json"):
            settings = await _settings(dp, model, f"{folder}/tokenizer_config.json")
            return ChatTemplate(data.decode(), _special(settings))
        settings = _json(data, model, path)
        source = _template_of(settings)
        if source is None:
            raise Internal(f"model '{model}': '{path}' has no 'chat_template'")
        return ChatTemplate(source, _special(settings))
    raise Internal(
        f"model '{model}': no chat template at '{value}' (openai.chat_template names a file, "
        "a tokenizer folder, or the template itself)"
    )


async def _settings(dp: DataPlane, model: str, path: str) -> dict[str, Any]:
    try:
        return _json(await dp.model_file(model, path), model, path)
    except NotFound:
        return {}


def _json(data: bytes, model: str, path: str) -> dict[str, Any]:
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise Internal(f"model '{model}': '{path}' is not JSON: {exc}") from None
    return doc if isinstance(doc, dict) else {}


def _template_of(settings: dict[str, Any]) -> str | None:
    """A tokenizer's ``chat_template``: a string, or a list of named ones ("default")."""
    found = settings.get("chat_template")
    if isinstance(found, list):
        named = {t.get("name"): t.get("template") for t in found if isinstance(t, dict)}
        found = named.get("default")
    return found if isinstance(found, str) else None


def _special(settings: dict[str, Any]) -> dict[str, str]:
    """The special tokens a template may use, as text (a token may be an object)."""
    out: dict[str, str] = {}
    for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
        token = settings.get(key)
        if isinstance(token, dict):
            token = token.get("content")
        if isinstance(token, str):
            out[key] = token
    return out


class _Refused(Exception):
    """The template's own ``raise_exception``: the messages do not fit the model."""


def _compile(source: str) -> Template:
    from jinja2.exceptions import TemplateSyntaxError
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise _Refused(message)

    def tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None,
               separators: Any = None, sort_keys: bool = False) -> str:  # fmt: skip
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)  # fmt: skip

    def strftime_now(format: str) -> str:  # noqa: A002 (transformers' name)
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])  # fmt: skip
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    try:
        return env.from_string(source)
    except TemplateSyntaxError as exc:
        raise Internal(f"the model's chat template is not valid Jinja: {exc}") from None
