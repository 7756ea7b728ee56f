"""A config against its model file's signature: Triton's ONNX Runtime rules and wording."""

from __future__ import annotations

import pytest

from naiad.config import parse_config_text
from naiad.config.model_config_pb2 import DataType
from naiad.config.model_signature import ModelSignature, TensorSignature
from naiad.config.validate_signature import check_signature, validate_signature
from naiad.core.errors import InvalidArgument

pytestmark = pytest.mark.unit

FP32, INT32, INT64, STRING = (
    DataType.TYPE_FP32,
    DataType.TYPE_INT32,
    DataType.TYPE_INT64,
    DataType.TYPE_STRING,
)


def tensor(name: str, shape: tuple[int, ...], data_type: int = FP32) -> TensorSignature:
    return TensorSignature(name, data_type, shape)


def signature(inputs, outputs, defaulted=()) -> ModelSignature:
    return ModelSignature(tuple(inputs), tuple(outputs), tuple(defaulted))


IDENTITY = signature([tensor("INPUT0", (-1, 4))], [tensor("OUTPUT0", (-1, 4))])


def config(body: str, name: str = "m"):
    return parse_config_text(f'name: "{name}"\nbackend: "onnxruntime"\n{body}', "config.pbtxt")


def problems(body: str, sig: ModelSignature = IDENTITY) -> list[tuple[str, str]]:
    return validate_signature(config(body), sig).items


def io(max_batch_size: int, in_dims: str, out_dims: str = "", extra_in: str = "") -> str:
    out = f'output [{{ name: "OUTPUT0" data_type: TYPE_FP32 dims: {out_dims or in_dims} }}]'
    return (
        f"max_batch_size: {max_batch_size}\n"
        f'input [{{ name: "INPUT0" data_type: TYPE_FP32 dims: {in_dims} {extra_in} }}]\n{out}\n'
    )


def test_matching_config_has_no_problem():
    assert problems(io(8, "[4]")) == []
    assert problems(io(0, "[-1, 4]")) == []


def test_dims_mismatch_names_the_tensor_and_both_shapes_as_triton_does():
    found = problems(io(8, "[5]", "[4]"))
    assert found == [
        (
            "input[0].dims",
            "model 'm', tensor 'INPUT0': the model expects 2 dimensions (shape [-1,4]) but "
            "the model configuration specifies 2 dimensions (an initial batch dimension "
            "because max_batch_size > 0 followed by the explicit tensor shape, making "
            "complete shape [-1,5])",
        )
    ]


def test_dims_mismatch_without_batching():
    fixed = signature([tensor("INPUT0", (4,))], [tensor("OUTPUT0", (4,))])
    (found,) = problems(io(0, "[5]", "[4]"), fixed)
    assert found[1] == (
        "model 'm', tensor 'INPUT0': the model expects 1 dimensions (shape [4]) but the "
        "model configuration specifies 1 dimensions (shape [5])"
    )


def test_output_dims_are_checked_too():
    (found,) = problems(io(8, "[4]", "[4, 2]"))
    assert found[0] == "output[0].dims" and "tensor 'OUTPUT0'" in found[1]


def test_batching_needs_an_open_first_dimension():
    fixed = signature([tensor("INPUT0", (2, 4))], [tensor("OUTPUT0", (2, 4))])
    found = problems(io(8, "[4]"), fixed)
    assert len(found) == 2
    assert found[0][1] == (
        "model 'm', tensor 'INPUT0': for the model to support batching the shape should have "
        "at least 1 dimension and the first dimension must be -1; but shape expected by the "
        "model is [2,4]"
    )


def test_open_model_dims_take_any_config_size_but_not_the_reverse_for_inputs():
    open_model = signature([tensor("INPUT0", (-1, -1))], [tensor("OUTPUT0", (-1, -1))])
    assert problems(io(8, "[7]"), open_model) == []
    assert problems(io(0, "[3, -1]"), open_model) == []
    # A config -1 for a fixed input dim lets requests through that the model refuses.
    (found,) = problems(io(8, "[-1]", "[4]"))
    assert found[0] == "input[0].dims"
    # For an output the model decides the size: either side may be open.
    assert problems(io(8, "[4]", "[-1]")) == []


def test_unknown_names_list_what_the_model_has():
    body = (
        'max_batch_size: 8\ninput [{ name: "INPUT" data_type: TYPE_FP32 dims: [4] }]\n'
        'output [{ name: "OUT" data_type: TYPE_FP32 dims: [4] }]\n'
    )
    two = signature(
        [tensor("INPUT0", (-1, 4)), tensor("INPUT1", (-1, 4))], [tensor("OUTPUT0", (-1, 4))]
    )
    found = problems(body, two)
    assert found == [
        (
            "input",
            "unable to load model 'm', configuration expects 1 inputs, model provides 2; "
            "not in the configuration: INPUT0, INPUT1",
        ),
        ("input[0].name", "unexpected inference input 'INPUT', allowed inputs are: INPUT0, INPUT1"),
        ("output[0].name", "unexpected inference output 'OUT', allowed outputs are: OUTPUT0"),
    ]


def test_datatype_mismatch():
    model = signature([tensor("INPUT0", (-1, 4), INT32)], [tensor("OUTPUT0", (-1, 4), INT64)])
    found = problems(io(8, "[4]"), model)
    assert found == [
        (
            "input[0].data_type",
            "unable to load model 'm', configuration expects datatype TYPE_FP32 for input "
            "'INPUT0', model provides TYPE_INT32",
        ),
        (
            "output[0].data_type",
            "unable to load model 'm', configuration expects datatype TYPE_FP32 for output "
            "'OUTPUT0', model provides TYPE_INT64",
        ),
    ]


def test_type_string_is_an_onnx_string():
    model = signature([tensor("INPUT0", (-1, 1), STRING)], [tensor("OUTPUT0", (-1, 1), STRING)])
    body = (
        'max_batch_size: 2\ninput [{ name: "INPUT0" data_type: TYPE_STRING dims: [1] }]\n'
        'output [{ name: "OUTPUT0" data_type: TYPE_STRING dims: [1] }]\n'
    )
    assert problems(body, model) == []


def test_unsupported_model_type_is_named_as_the_framework_names_it():
    model = signature(
        [TensorSignature("INPUT0", DataType.TYPE_INVALID, (-1, 4), "tensor(complex64)")],
        [tensor("OUTPUT0", (-1, 4))],
    )
    (found,) = problems(io(8, "[4]"), model)
    assert found[1].endswith("model provides tensor(complex64)")


def test_reshape_is_what_the_model_sees():
    model = signature([tensor("INPUT0", (-1, 2, 2))], [tensor("OUTPUT0", (-1, 2, 2))])
    reshaped = io(8, "[4]", extra_in="reshape { shape: [2, 2] }", out_dims="[2, 2]")
    assert problems(reshaped, model) == []
    (found,) = problems(io(8, "[4]", out_dims="[2, 2]"), model)
    assert found[0] == "input[0].dims"
    # Auto-complete's form for a batched model tensor of one dimension.
    flat = signature([tensor("INPUT0", (-1,))], [tensor("OUTPUT0", (-1,))])
    scalar_items = """max_batch_size: 8
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [1] reshape { shape: [] } }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [1] reshape { shape: [] } }]
"""
    assert problems(scalar_items, flat) == []


def test_scalar_model_tensor_takes_only_ones_without_batching():
    scalar = signature([tensor("INPUT0", ())], [tensor("OUTPUT0", ())])
    assert problems(io(0, "[1]"), scalar) == []
    found = problems(io(0, "[2]"), scalar)
    assert found[0][1] == (
        "unable to load model 'm', scalar tensor 'INPUT0', should only provide 1 in the model "
        "configuration when the model doesn't support batching. Model configuration "
        "provided: [2]."
    )


def test_ragged_input_needs_a_flat_open_model_input():
    body = io(8, "[-1]", extra_in="allow_ragged_batch: true", out_dims="[4]")
    flat = signature([tensor("INPUT0", (-1,))], [tensor("OUTPUT0", (-1, 4))])
    assert problems(body, flat) == []
    (found,) = problems(body)
    assert found == (
        "input[0].allow_ragged_batch",
        "unable to load model 'm', configuration expects model provides input with shape "
        "[-1] for ragged input 'INPUT0', model provides [-1,4]",
    )


def test_batch_inputs_and_outputs():
    model = signature(
        [tensor("INPUT", (-1,)), tensor("COUNT", (-1,), INT32)],
        [tensor("OUT", (-1,))],
    )
    body = """max_batch_size: 8
input [{ name: "INPUT" data_type: TYPE_FP32 dims: [-1] allow_ragged_batch: true }]
batch_input [{ kind: BATCH_ELEMENT_COUNT target_name: "COUNT" data_type: TYPE_INT32
               source_input: "INPUT" }]
output [{ name: "OUT" data_type: TYPE_FP32 dims: [-1, 3] }]
batch_output [{ target_name: "OUT" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "INPUT" }]
"""
    assert problems(body, model) == []  # a batch output's shape is its input's
    wrong = body.replace('target_name: "COUNT"', 'target_name: "CNT"')
    found = problems(wrong, model)
    assert ("batch_input[0].target_name", "unexpected inference input 'CNT', allowed inputs "
            "are: COUNT, INPUT") in found  # fmt: skip


SEQUENCE = """max_batch_size: 4
input [{ name: "INPUT" data_type: TYPE_INT32 dims: [1] }]
output [{ name: "OUTPUT" data_type: TYPE_INT32 dims: [1] }]
sequence_batching {
  control_input [
    { name: "START" control [{ kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] }] },
    { name: "CORRID" control [{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 }] }
  ]
  state [{ input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_INT32 dims: [1] }]
}
"""


def sequence_model(start: tuple[int, ...] = (-1, 1), corrid: int = DataType.TYPE_UINT64):
    return signature(
        [
            tensor("INPUT", (-1, 1), INT32),
            tensor("START", start, INT32),
            tensor("CORRID", (-1, 1), corrid),
            tensor("STATE_IN", (-1, 1), INT32),
        ],
        [tensor("OUTPUT", (-1, 1), INT32), tensor("STATE_OUT", (-1, 1), INT32)],
    )


def test_sequence_controls_and_state_are_inputs_the_config_does_not_list():
    assert problems(SEQUENCE, sequence_model()) == []
    assert problems(SEQUENCE, sequence_model(start=(-1, -1))) == []


def test_sequence_control_shape_and_type():
    found = problems(SEQUENCE, sequence_model(start=(-1, 2), corrid=INT64))
    assert found == [
        (
            "sequence_batching.control_input[0].name",
            "unable to load model 'm', sequence control 'START' in model has dims [2] but "
            "dims [1] is expected",
        ),
        (
            "sequence_batching.control_input[1].control",
            "unable to load model 'm', sequence control 'CORRID', the model expects data-type "
            "TYPE_INT64 but the model configuration specifies data-type TYPE_UINT64",
        ),
    ]


def test_sequence_state_must_be_in_the_model():
    body = SEQUENCE.replace('output_name: "STATE_OUT"', 'output_name: "STATE"')
    found = problems(body, sequence_model())
    assert (
        "sequence_batching.state[0].output_name",
        "unexpected inference output 'STATE', allowed outputs are: OUTPUT, STATE_OUT",
    ) in found


def test_outputs_the_config_omits_are_fine():
    two_out = signature(
        [tensor("INPUT0", (-1, 4))], [tensor("OUTPUT0", (-1, 4)), tensor("EXTRA", (-1,))]
    )
    assert problems(io(8, "[4]"), two_out) == []


def test_optional_inputs_may_be_model_defaults_but_not_with_batching():
    model = signature(
        [tensor("INPUT0", (4,))], [tensor("OUTPUT0", (4,))], defaulted=[tensor("BIAS", (4,))]
    )
    body = io(0, "[4]") + 'input [{ name: "BIAS" data_type: TYPE_FP32 dims: [4] optional: true }]'
    assert problems(body, model) == []
    batched = body.replace("max_batch_size: 0", "max_batch_size: 2")
    found = problems(batched, model)
    assert (
        "input[1].optional",
        "unable to load model 'm', optional input 'BIAS' is not supported for models that "
        "support batching",
    ) in found


def test_an_optional_input_the_model_requires_is_named():
    model = signature([tensor("INPUT0", (4,)), tensor("BIAS", (4,))], [tensor("OUTPUT0", (4,))])
    body = io(0, "[4]") + 'input [{ name: "BIAS" data_type: TYPE_FP32 dims: [4] optional: true }]'
    assert problems(body, model) == [
        (
            "input",
            "unable to load model 'm', configuration expects 1 inputs, model provides 2; "
            "optional in the configuration, required by the model: BIAS",
        )
    ]


def test_check_signature_raises_the_first_problem_as_invalid_arg():
    with pytest.raises(InvalidArgument, match=r"making complete shape \[-1,5\]\)$"):
        check_signature(config(io(8, "[5]", "[4]")), IDENTITY)
    check_signature(config(io(8, "[4]")), IDENTITY)
