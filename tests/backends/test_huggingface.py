"""Saved transformers pipelines serve with no config, answering as the pipeline does.

The tests build tiny random models (a 2-layer BERT with a word-level
tokenizer built with ``tokenizers``, a 1-layer ViT), save each as a user
would (``pipeline.save_pretrained(folder)``), serve the folders with nothing
else in them and compare tritonclient's answers over HTTP and gRPC with the
same pipeline loaded from the same folder.  Nothing is downloaded.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers is imported
transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")

from tokenizers import Tokenizer, models, pre_tokenizers  # noqa: E402

from naiad import Server  # noqa: E402

pytestmark = [pytest.mark.protocol, pytest.mark.frameworks]

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "movie", "paris", "is"]
TEXTS = ["good movie", "paris is bad", "movie"]


def tokenizer() -> transformers.PreTrainedTokenizerFast:
    words = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=words,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


def bert(labels: list[str]) -> transformers.BertConfig:
    return transformers.BertConfig(
        vocab_size=len(WORDS),
        hidden_size=8,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=32,
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )


def png(seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 255, (20, 20, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One folder per task, each written by ``pipeline.save_pretrained`` and nothing else."""
    repo = tmp_path_factory.mktemp("huggingface") / "models"
    torch.manual_seed(0)
    words = tokenizer()
    built = {
        "sentiment": transformers.pipeline(
            "text-classification",
            model=transformers.BertForSequenceClassification(bert(["NEG", "POS", "MIXED"])),
            tokenizer=words,
        ),
        "places": transformers.pipeline(
            "token-classification",
            model=transformers.BertForTokenClassification(bert(["O", "LOC"])),
            tokenizer=words,
        ),
        "embed": transformers.pipeline(
            "feature-extraction", model=transformers.BertModel(bert(["A", "B"])), tokenizer=words
        ),
    }
    vit = transformers.ViTConfig(
        image_size=16,
        patch_size=8,
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        id2label={0: "cat", 1: "dog"},
        label2id={"cat": 0, "dog": 1},
    )
    built["pets"] = transformers.pipeline(
        "image-classification",
        model=transformers.ViTForImageClassification(vit),
        image_processor=transformers.ViTImageProcessor(size={"height": 16, "width": 16}),
    )
    transformers.utils.logging.disable_progress_bar()
    for name, pipe in built.items():
        pipe.save_pretrained(repo / name / "1")
    # A config that gives only what the folder cannot say: how to group tokens.
    built["places"].save_pretrained(repo / "grouped" / "1")
    (repo / "grouped" / "config.pbtxt").write_text(
        'backend: "huggingface"\n'
        'parameters { key: "aggregation_strategy" value { string_value: "simple" } }\n'
    )
    return {"repo": repo, **{name: repo / name / "1" for name in [*built, "grouped"]}}


@pytest.fixture(scope="module")
def server(saved: dict[str, Path]) -> Iterator[Server]:
    with Server(model_repository=saved["repo"], http_port=0, grpc_port=0) as started:
        yield started


def reloaded(task: str, folder: Path) -> transformers.Pipeline:
    return transformers.pipeline(task, model=str(folder))


def text_input(module, name: str, values: list[bytes]):
    array = np.array(values, dtype=object).reshape(-1, 1)
    tensor = module.InferInput(name, list(array.shape), "BYTES")
    tensor.set_data_from_numpy(array)
    return tensor


def test_config_is_completed_from_the_saved_folder(server):
    sentiment = server.model_config("sentiment")
    assert sentiment["backend"] == "huggingface"
    assert sentiment["max_batch_size"] == 8
    assert [(i["name"], i["data_type"], i["dims"]) for i in sentiment["input"]] == [
        ("text", "TYPE_STRING", [1])
    ]
    assert [(o["name"], o["data_type"], o["dims"]) for o in sentiment["output"]] == [
        ("labels", "TYPE_STRING", [3]),
        ("scores", "TYPE_FP32", [3]),
    ]
    assert [o["name"] for o in server.model_config("places")["output"]] == ["entities"]
    embed = server.model_config("embed")["output"]
    assert [(o["name"], o["data_type"], o["dims"]) for o in embed] == [
        ("embedding", "TYPE_FP32", [8])
    ]
    pets = server.model_config("pets")
    assert [i["name"] for i in pets["input"]] == ["image"]
    assert [o["dims"] for o in pets["output"]] == [[2], [2]]


@pytest.mark.parametrize("module", [httpclient, grpcclient], ids=["http", "grpc"])
def test_answers_are_the_pipelines_own(server, saved, module):
    port = server.http_port if module is httpclient else server.grpc_port
    client = module.InferenceServerClient(f"127.0.0.1:{port}")
    texts = [t.encode() for t in TEXTS]

    result = client.infer("sentiment", [text_input(module, "text", texts)])
    expected = reloaded("text-classification", saved["sentiment"])(TEXTS, top_k=3)
    labels = [[v.decode() for v in row] for row in result.as_numpy("labels")]
    assert labels == [[d["label"] for d in row] for row in expected]
    want = [[d["score"] for d in row] for row in expected]
    np.testing.assert_allclose(result.as_numpy("scores"), want, rtol=1e-5)

    result = client.infer("places", [text_input(module, "text", texts)])
    expected = reloaded("token-classification", saved["places"])(TEXTS)
    got = [json.loads(v) for v in result.as_numpy("entities").reshape(-1)]
    assert [[(e["word"], e["entity"], e["start"]) for e in row] for row in got] == [
        [(e["word"], e["entity"], e["start"]) for e in row] for row in expected
    ]

    result = client.infer("grouped", [text_input(module, "text", texts)])
    grouped = transformers.pipeline(
        "token-classification", model=str(saved["grouped"]), aggregation_strategy="simple"
    )
    got = [json.loads(v) for v in result.as_numpy("entities").reshape(-1)]
    assert any(got), "a test with no entities would compare nothing"
    assert [[(e["word"], e["entity_group"]) for e in row] for row in got] == [
        [(e["word"], e["entity_group"]) for e in row] for row in grouped(TEXTS)
    ]

    result = client.infer("embed", [text_input(module, "text", texts)])
    tokens = reloaded("feature-extraction", saved["embed"])(TEXTS)
    want = [np.asarray(t, dtype=np.float32)[0].mean(axis=0) for t in tokens]
    np.testing.assert_allclose(result.as_numpy("embedding"), want, rtol=1e-5, atol=1e-6)

    images = [png(1), png(2)]
    result = client.infer("pets", [text_input(module, "image", images)])
    pipe = reloaded("image-classification", saved["pets"])
    expected = pipe([Image.open(io.BytesIO(b)).convert("RGB") for b in images], top_k=2)
    labels = [[v.decode() for v in row] for row in result.as_numpy("labels")]
    assert labels == [[d["label"] for d in row] for row in expected]
    want = [[d["score"] for d in row] for row in expected]
    np.testing.assert_allclose(result.as_numpy("scores"), want, rtol=1e-5)
    client.close()


def test_bad_input_is_a_400_naming_it(server):
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    with pytest.raises(InferenceServerException, match="'image'") as caught:
        client.infer("pets", [text_input(httpclient, "image", [b"not an image"])])
    assert caught.value.status() == "400"
    with pytest.raises(InferenceServerException, match="txt") as caught:
        client.infer("sentiment", [text_input(httpclient, "txt", [b"good"])])
    assert caught.value.status() == "400"
    number = httpclient.InferInput("text", [1, 1], "FP32")
    number.set_data_from_numpy(np.ones((1, 1), np.float32))
    with pytest.raises(InferenceServerException, match="text") as caught:
        client.infer("sentiment", [number])
    assert caught.value.status() == "400"
    client.close()


def test_without_the_extra_the_load_names_it(tmp_path, serve, monkeypatch):
    """As if ``transformers`` were not installed: the model's reason says which extra to install."""
    for loaded in list(sys.modules):
        if loaded.startswith("naiad.backends.huggingface"):
            monkeypatch.delitem(sys.modules, loaded)
    for loaded in [*(m for m in sys.modules if m.split(".")[0] == "transformers"), "transformers"]:
        monkeypatch.setitem(sys.modules, loaded, None)  # an import of it now fails
    repo = tmp_path / "models"
    (repo / "m" / "1").mkdir(parents=True)
    (repo / "m" / "1" / "config.json").write_text("{}")
    (repo / "m" / "1" / "model.safetensors").write_bytes(b"")
    started = serve(repo)
    reason = dict(started.dataplane.failed_models())["m"]
    assert "backend 'huggingface' is not available" in reason, reason
    assert "pip install 'naiad[huggingface]'" in reason, reason
