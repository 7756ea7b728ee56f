"""A causal language model streaming its text, written for Triton's Python backend.

Decoupled: ``execute`` hands each batch of requests to a thread and returns, so a
long generation never holds back the requests that arrive after it; the thread
generates for the whole batch at once (prompts left-padded, one forward pass per
token for all of them, a KV cache so each pass only computes the new token) and
sends one response per token and request.  Each response's ``text_output`` is
the text that token added, so a client joins them; the last response carries
``finish_reason`` ("stop" at the end-of-sequence token, "length" at max_tokens)
and the FINAL flag.  A request whose client went away (``is_cancelled()``) stops
at the next token.
"""

import inspect
import threading
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.utils import logging

import triton_python_backend_utils as pb_utils

DEFAULT_MAX_TOKENS = 16


class Detokenizer:
    """Text deltas from a growing list of token ids.

    A character of several bytes (é, €) can span tokens in a byte-level BPE, so a
    token cannot be decoded alone: the ids since the last clean cut are decoded
    together, and a text ending in U+FFFD (a character not finished yet) waits for
    the next token.  Only that window is decoded, so each token costs the same.
    """

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.ids = []
        self.prefix = 0  # where the decoded window starts
        self.read = 0  # the ids before this are sent

    def add(self, token, last=False):
        self.ids.append(token)
        decode = self.tokenizer.decode
        before = decode(self.ids[self.prefix : self.read], skip_special_tokens=True)
        text = decode(self.ids[self.prefix :], skip_special_tokens=True)
        if text.endswith("\ufffd") and not last:
            return ""
        self.prefix, self.read = self.read, len(self.ids)
        return text[len(before) :]


class Sequence:
    """One request's generation: its settings, where it stands, and its sender."""

    def __init__(self, request, tokenizer, context):
        self.request = request
        self.sender = request.get_response_sender()
        text = _scalar(request, "text_input", b"").decode("utf-8", errors="replace")
        ids = tokenizer.encode(text, add_special_tokens=False)
        if not ids or ids[0] != tokenizer.bos_token_id:  # a chat template already starts so
            ids = [tokenizer.bos_token_id] + ids
        self.prompt = ids[-(context - 1) :]  # leave room for at least one new token
        self.max_tokens = int(_scalar(request, "max_tokens", DEFAULT_MAX_TOKENS))
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, not {self.max_tokens}")
        self.max_tokens = min(self.max_tokens, context - len(self.prompt))
        self.temperature = float(_scalar(request, "temperature", 0.0))
        self.generator = torch.Generator()
        seed = _scalar(request, "seed", None)
        if seed is None:
            self.generator.seed()
        else:
            self.generator.manual_seed(int(seed))
        self.text = Detokenizer(tokenizer)
        self.done = False

    def choose(self, logits):
        """The next token: the most likely when temperature is 0, else a sample."""
        if self.temperature <= 0:
            return int(logits.argmax())
        probs = torch.softmax(logits.float() / self.temperature, dim=-1)
        return int(torch.multinomial(probs, 1, generator=self.generator))

    def send(self, text, finish=None):
        outputs = [
            pb_utils.Tensor("text_output", np.array([[text.encode()]], dtype=np.object_)),
            pb_utils.Tensor("prompt_tokens", np.array([[len(self.prompt)]], np.int32)),
            pb_utils.Tensor("completion_tokens", np.array([[1]], np.int32)),
        ]
        if finish is not None:
            outputs.append(
                pb_utils.Tensor("finish_reason", np.array([[finish.encode()]], dtype=np.object_))
            )
        flags = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if finish else 0
        self.sender.send(pb_utils.InferenceResponse(output_tensors=outputs), flags=flags)
        self.done = finish is not None


def _scalar(request, name, default):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    return default if tensor is None else tensor.as_numpy().reshape(-1)[0]


class TritonPythonModel:
    def initialize(self, args):
        folder = Path(args["model_repository"])
        torch.set_num_threads(1)  # 64-wide matrices: more threads cost more than they give
        logging.disable_progress_bar()  # no "Loading weights" bar in the server's log
        self.tokenizer = AutoTokenizer.from_pretrained(folder / "tokenizer")
        self.model = AutoModelForCausalLM.from_pretrained(folder / args["model_version"]).eval()
        self.context = self.model.config.n_positions
        # transformers 5 renamed the forward argument past_key_values to cache
        forward = inspect.signature(self.model.forward).parameters
        self.cache_name = "cache" if "cache" in forward else "past_key_values"
        self.stopping = threading.Event()
        self.threads = []

    def execute(self, requests):
        sequences = []
        for request in requests:
            try:
                sequences.append(Sequence(request, self.tokenizer, self.context))
            except ValueError as exc:  # this request's inputs: answer it, run the others
                invalid = pb_utils.TritonError(str(exc), pb_utils.TritonError.INVALID_ARG)
                error = pb_utils.InferenceResponse(error=invalid)
                request.get_response_sender().send(
                    error, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
                )
        if sequences:
            thread = threading.Thread(target=self.run, args=(sequences,), daemon=True)
            thread.start()
            self.threads = [t for t in self.threads if t.is_alive()] + [thread]
        return None

    def run(self, sequences):
        try:
            with torch.inference_mode():
                self.generate(sequences)
        except Exception as exc:  # every request still open gets the error, and its end
            error = pb_utils.InferenceResponse(error=pb_utils.TritonError(str(exc)))
            for seq in (seq for seq in sequences if not seq.done):
                try:
                    seq.sender.send(error, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                except pb_utils.TritonModelException:  # the failure was its FINAL send
                    pass

    def generate(self, sequences):
        """Every sequence of the batch, one token per step, until each has finished."""
        pb_utils.Logger.log_verbose(f"tiny_lm: generating for {len(sequences)} requests at once")
        pad, eos = self.tokenizer.pad_token_id, self.tokenizer.eos_token_id
        width = max(len(seq.prompt) for seq in sequences)
        ids = torch.tensor([[pad] * (width - len(s.prompt)) + s.prompt for s in sequences])
        starts = torch.tensor([[width - len(seq.prompt)] for seq in sequences])
        mask = (torch.arange(width) >= starts).long()
        positions = (mask.cumsum(-1) - 1).clamp(min=0)  # left padding takes no positions
        cache = None
        for step in range(max(seq.max_tokens for seq in sequences)):
            out = self.model(
                input_ids=ids,
                attention_mask=mask,
                position_ids=positions,
                use_cache=True,
                **{self.cache_name: cache},
            )
            cache = out[self.cache_name]
            chosen = []
            for seq, logits in zip(sequences, out.logits[:, -1], strict=True):
                token = seq.choose(logits) if not seq.done else pad
                chosen.append(token)
                if seq.done:
                    continue
                if seq.request.is_cancelled() or self.stopping.is_set():
                    pb_utils.Logger.log_info(
                        f"tiny_lm: a request stopped after {step} of its {seq.max_tokens} "
                        "tokens: cancelled"
                    )
                    seq.sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                    seq.done = True
                elif token == eos:
                    seq.send(seq.text.add(token, last=True), "stop")
                else:
                    last = step + 1 == seq.max_tokens
                    seq.send(seq.text.add(token, last), "length" if last else None)
            if all(seq.done for seq in sequences):
                return
            ids = torch.tensor(chosen)[:, None]
            mask = torch.cat([mask, torch.ones_like(ids)], dim=1)
            positions = positions[:, -1:] + 1

    def finalize(self):
        self.stopping.set()  # a generation in progress ends at its next token
        for thread in self.threads:
            thread.join(timeout=10)
