"""The prompts an LLM measurement sends: given, read from a file, or synthetic.

GenAI-Perf builds synthetic prompts of a mean token count with the model's
tokenizer.  naiad perf brings no tokenizer (no heavy dependency in a
load generator), so a synthetic prompt is ``--prompt-tokens`` words drawn
from common English words that GPT-2's, Llama's and most BPE vocabularies
hold as one token each (with their leading space): the prompt's length in
tokens is close to the count asked, and the server's own count, when it
reports one (OpenAI's ``usage.prompt_tokens``), is what the report shows.
Each of ``--num-prompts`` prompts draws its own words, so that a server's
prefix cache does not answer them all from one entry.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from naiad.tools.perf.llm.settings import LlmSettings
from naiad.tools.perf.settings import PerfError

WORDS = (
    "the of and to in is was that for on as with by at from his an were are which this be "
    "or have had not but they one all their there been has when who will more no if out so "
    "said what up its about into than them can only other new some could time these two may "
    "then do first any my now such like our over man me even most made after also did many "
    "before must through back years where much your way well down should because each just "
    "those people how too little state good very make world still own see men work long get "
    "here between both life being under never day same another know while last might us great "
    "old year off come since against go came right used take three"
).split()


def prompts(settings: LlmSettings) -> list[str]:
    if settings.prompt:
        return [settings.prompt]
    if settings.input_file:
        return _read(Path(settings.input_file))
    rng = random.Random(settings.random_seed)
    return [" ".join(rng.choices(WORDS, k=settings.prompt_tokens))
            for _ in range(settings.num_prompts)]  # fmt: skip


def _read(path: Path) -> list[str]:
    """GenAI-Perf's input file (a JSON object a line, the prompt in ``text``), or plain
    lines of text."""
    try:
        lines = [line for line in path.read_text().splitlines() if line.strip()]
    except OSError as exc:
        raise PerfError(f"--input-file {path}: {exc.strerror}") from None
    found = []
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("{"):
            try:
                entry = json.loads(line)
            except ValueError:
                raise PerfError(f"--input-file {path}:{number}: not JSON") from None
            text = entry.get("text") if isinstance(entry, dict) else None
            if not isinstance(text, str):
                raise PerfError(f'--input-file {path}:{number}: no "text" string')
            found.append(text)
        else:
            found.append(line)
    if not found:
        raise PerfError(f"--input-file {path}: no prompts")
    return found
