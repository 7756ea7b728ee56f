"""Chat templates render as Hugging Face's ``apply_chat_template`` renders them, and stop
strings are found across the pieces a model streams."""

from __future__ import annotations

import pytest

from naiad.core.errors import Internal
from naiad.frontends.openai.chat_template import DEFAULT, ChatTemplate
from naiad.frontends.openai.choices import StopText
from naiad.frontends.openai.errors import BadField

pytestmark = pytest.mark.unit

# A ChatML template in the style tokenizers ship: loop controls, raise_exception,
# tools rendered with tojson, the special tokens from the tokenizer's settings.
CHATML = """{{ bos_token }}{% if tools %}<|im_start|>system
Tools: {{ tools | tojson }}<|im_end|>
{% endif %}{% for message in messages %}{% if message['role'] == 'tool' %}{% continue %}{% endif %}
{% if loop.index0 == 0 and message['role'] == 'assistant' %}{{ raise_exception('Conversations must start with a user or system message') }}{% endif %}
<|im_start|>{{ message['role'] }}
{{ message['content'] | trim }}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "  Grüße, naiad  "},
    {"role": "tool", "content": "skipped"},
    {"role": "assistant", "content": "Hi."},
    {"role": "user", "content": "Bye"},
]
TOOLS = [{"type": "function", "function": {"name": "wetter", "description": "Wetter für heute"}}]


def test_renders_as_transformers_does() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    model = tokenizers.models.WordLevel(vocab, unk_token="<unk>")
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizers.Tokenizer(model), bos_token="<s>", eos_token="</s>",
        chat_template=CHATML,
    )  # fmt: skip
    ours = ChatTemplate(CHATML, {"bos_token": "<s>", "eos_token": "</s>"})
    for tools in (None, TOOLS):
        expected = tokenizer.apply_chat_template(
            MESSAGES, tools=tools, tokenize=False, add_generation_prompt=True
        )
        assert ours.render(MESSAGES, tools) == expected


def test_a_template_refusal_names_the_messages() -> None:
    ours = ChatTemplate(CHATML, {"bos_token": ""})
    with pytest.raises(BadField) as caught:
        ours.render([{"role": "assistant", "content": "x"}], None)
    assert caught.value.param == "messages"
    assert "must start with a user or system message" in caught.value.message


def test_broken_templates_are_the_servers_fault() -> None:
    with pytest.raises(Internal, match="not valid Jinja"):
        ChatTemplate("{% for x in %}", {})
    sandboxed = ChatTemplate("{{ messages.__class__.__mro__ }}", {})
    with pytest.raises(Internal, match="chat template failed"):
        sandboxed.render([], None)  # the sandbox refuses to reach Python's internals


def test_default_template() -> None:
    text = ChatTemplate(DEFAULT, {}).render(MESSAGES[:2], None)
    assert text == "system: Be brief.\nuser:   Grüße, naiad  \nassistant:"


@pytest.mark.parametrize(
    ("pieces", "stops", "released", "stopped"),
    [
        (["ab", "cd"], [], ["ab", "cd"], False),
        (["hello wo", "rld"], ["wor"], ["hello ", ""], True),  # held back, then cut
        (["a", "X", "Y", "b"], ["XYZ"], ["a", "", "", "XYb"], False),  # a false start
        (["stop"], ["st", "top"], [""], True),  # the earliest stop wins
        (["ab", "c"], ["bcd"], ["a", ""], False),
    ],
)
def test_stop_text(pieces: list[str], stops: list[str], released: list[str], stopped: bool) -> None:
    stop = StopText(stops)
    out = []
    for piece in pieces:
        out.append(stop.feed(piece))
        if stop.stopped:
            break
    assert out == released and stop.stopped == stopped
    if not stopped:
        assert "".join(out) + stop.flush() == "".join(pieces)
