"""Build the LLM example's repository: ``python build.py [REPOSITORY]``.

Copies ``repository/`` (the two configs and ``model.py`` files) to REPOSITORY
(default: ``build/repository`` beside this file) and writes into it what
would be downloaded for a real model, made here in a few seconds so that
nothing is fetched, ever:

- a byte-level BPE tokenizer trained on ``TEXT`` below, with the special tokens
  of ``SPECIAL`` and a chat template, saved as a ``transformers`` tokenizer
  folder in each model's folder (``tiny_lm/tokenizer``, ``tiny_embed/tokenizer``);
- ``tiny_lm/1``: a randomly initialised 2-layer GPT-2 (64 wide);
- ``tiny_embed/1``: a randomly initialised 2-layer BERT encoder (64 wide).

Fixed seeds: two builds write the same weights.  The models know nothing (their
text is gibberish); they exist to show the serving, not the language.
Needs ``torch``, ``transformers`` and ``tokenizers`` (``pip install ".[llm]"``).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: The tokens the chat template and the generation loop use, beside the learned ones.
SPECIAL = ["<|bos|>", "<|eos|>", "<|pad|>", "<|system|>", "<|user|>", "<|assistant|>"]

#: Hugging Face style: ``messages``, ``add_generation_prompt``, ``bos_token``, ``eos_token``.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>{{ message['content'] }}{{ eos_token }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)

#: What the tokenizer learns its merges from (the accented words and the euro sign give
#: it characters of several bytes, which the streaming must not cut in half).
TEXT = """\
The quick brown fox jumps over the lazy dog. Hello, how are you today? I am fine,
thank you, and you? The weather is nice and the sun is shining over the hills.
A small model can write a few words, one token at a time, and stream them back.
Once upon a time there was a little cat who liked to sleep in the garden.
She said hello to the birds, and the birds sang a song for her every morning.
What is the capital of France? Paris is the capital of France.
The café in Zürich serves crème brûlée; naïve tourists pay 5 € for a coffee.
Numbers: one, two, three, four, five, six, seven, eight, nine, ten.
"""


def train_tokenizer(folder: Path) -> None:
    """A byte-level BPE of a few hundred tokens, saved as a ``PreTrainedTokenizerFast``
    whose ``tokenizer_config.json`` holds the chat template (as older transformers
    and the OpenAI frontend read it)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=384,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator([TEXT], trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<|bos|>",
        eos_token="<|eos|>",
        pad_token="<|pad|>",
        clean_up_tokenization_spaces=False,  # decoding a prefix must give a prefix of the text
    )
    tokenizer.save_pretrained(folder)
    # transformers 5 writes the template to chat_template.jinja; keep one copy, in the
    # config, where every transformers version and the OpenAI frontend look for it.
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config.update(tokenizer_class="PreTrainedTokenizerFast", chat_template=CHAT_TEMPLATE)
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")


def save_lm(folder: Path, tokenizer) -> None:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=2048,
        n_embd=64,
        n_layer=2,
        n_head=4,
        # wider than GPT-2's 0.02, so the logits are far apart: greedy text then does not
        # depend on float rounding (batched or alone, the same tokens)
        initializer_range=0.2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    GPT2LMHeadModel(config).eval().save_pretrained(folder)


def save_encoder(folder: Path, tokenizer) -> None:
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(1)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
    )
    BertModel(config, add_pooling_layer=False).eval().save_pretrained(folder)


def main(repository: Path) -> Path:
    from transformers import AutoTokenizer
    from transformers.utils import logging

    logging.disable_progress_bar()  # save_pretrained's "Writing model shards" bar
    shutil.copytree(HERE / "repository", repository, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    train_tokenizer(repository / "tiny_lm" / "tokenizer")
    shutil.copytree(repository / "tiny_lm" / "tokenizer", repository / "tiny_embed" / "tokenizer",
                    dirs_exist_ok=True)  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(repository / "tiny_lm" / "tokenizer")
    save_lm(repository / "tiny_lm" / "1", tokenizer)
    save_encoder(repository / "tiny_embed" / "1", tokenizer)
    print(f"wrote {repository} (tiny_lm, tiny_embed; {len(tokenizer)} tokens)")
    return repository


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "build" / "repository")
