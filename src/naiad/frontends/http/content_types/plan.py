"""What a model's config declares about the content of its tensors, read once per config.

A model declares a tensor's content type in its config's ``parameters``::

    parameters { key: "naiad.content_type.IMAGE" value { string_value: "image" } }
    parameters { key: "naiad.image.IMAGE" value { string_value: "224x224,channels_first,rgb,scale" } }

:class:`ContentTypes` keeps one :class:`ModelPlan` per loaded config, so a
request to a model that declares nothing costs the look-up of its config and
one dictionary look-up (``ContentTypes.declared``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from naiad.core import datatypes
from naiad.core.datatypes import DataType
from naiad.core.errors import InvalidArgument, NaiadError
from naiad.frontends.per_config import PerConfig

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane

#: The content types a tensor may declare (MLServer's names, plus "image" and "json").
KINDS = frozenset({"np", "image", "pd", "str", "json", "datetime", "base64"})
#: Config parameter prefixes.
CONTENT_TYPE = "naiad.content_type."
IMAGE = "naiad.image."
COLUMNS = "naiad.pd.columns."

_LAYOUTS = ("channels_first", "channels_last")
_MODES = {"rgb": ("RGB", 3), "gray": ("L", 1), "rgba": ("RGBA", 4)}
_FLOATS = ("FP16", "FP32", "FP64")


class TensorPlan:
    """One model tensor: its datatype, full shape (batch dimension included) and content."""

    __slots__ = ("name", "datatype", "shape", "kind", "optional", "image", "columns")

    def __init__(self, name: str, datatype: DataType, shape: tuple[int, ...], kind: str) -> None:
        self.name = name
        self.datatype = datatype
        self.shape = shape
        self.kind = kind
        self.optional = False
        self.image: ImageOptions | None = None
        #: for "pd" on a 2-D input: the columns it stacks, in order (None: as sent)
        self.columns: tuple[str, ...] | None = None


class ImageOptions:
    """How image bytes become the tensor: size, layout, colour mode, dtype and scaling."""

    __slots__ = ("height", "width", "channels_first", "mode", "channels", "scale", "dtype")

    def __init__(self, spec: TensorPlan, text: str, model: str) -> None:
        where = f"model '{model}': '{IMAGE}{spec.name}' = '{text}'"
        dt = spec.datatype.name
        if dt != "UINT8" and dt not in _FLOATS:
            raise InvalidArgument(
                f"model '{model}': image input '{spec.name}' must be UINT8 or FP16/FP32/FP64, "
                f"not {dt}"
            )
        self.dtype = spec.datatype.numpy
        dims = list(spec.shape[1:] if spec.shape and spec.shape[0] == -1 else spec.shape)
        size: tuple[int, int] | None = None
        layout: str | None = None
        mode: str | None = None
        self.scale = False
        for raw in text.split(","):
            token = raw.strip().lower()
            if not token:
                continue
            if "x" in token and token.replace("x", "", 1).isdigit():
                h, w = token.split("x")
                size = (int(h), int(w))
            elif token in _LAYOUTS:
                layout = token
            elif token in _MODES:
                mode = token
            elif token == "scale":
                self.scale = True
            else:
                raise InvalidArgument(
                    f"{where}: unknown option '{raw.strip()}' (takes <H>x<W>, channels_first or "
                    "channels_last, rgb, gray or rgba, scale)"
                )
        if self.scale and dt == "UINT8":
            raise InvalidArgument(f"{where}: 'scale' needs a floating-point input, not UINT8")
        if len(dims) == 2:  # H x W, one channel
            if layout is not None or mode not in (None, "gray"):
                raise InvalidArgument(f"{where}: a 2-D image input is one grey channel")
            layout, mode, hw = "channels_last", "gray", dims
            self.channels = 0
        elif len(dims) == 3:
            if layout is None:
                first, last = dims[0] in (1, 3, 4), dims[-1] in (1, 3, 4)
                layout = "channels_first" if first and not last else "channels_last"
            hw = dims[1:] if layout == "channels_first" else dims[:2]
            channels = dims[0] if layout == "channels_first" else dims[2]
            if mode is None:
                mode = {1: "gray", 4: "rgba"}.get(channels, "rgb")
            if channels != -1 and channels != _MODES[mode][1]:
                raise InvalidArgument(
                    f"{where}: {mode} has {_MODES[mode][1]} channels, the input has {channels}"
                )
            self.channels = _MODES[mode][1]
        else:
            raise InvalidArgument(
                f"model '{model}': image input '{spec.name}' must have 2 or 3 dimensions "
                "besides the batch (H, W and maybe channels)"
            )
        if size is not None:
            for got, want, axis in ((size[0], hw[0], "height"), (size[1], hw[1], "width")):
                if want != -1 and got != want:
                    raise InvalidArgument(f"{where}: {axis} {got} differs from the input's {want}")
        self.height = size[0] if size else (hw[0] if hw[0] > 0 else None)
        self.width = size[1] if size else (hw[1] if hw[1] > 0 else None)
        self.channels_first = layout == "channels_first"
        self.mode = _MODES[mode][0]


class ModelPlan:
    """A model's tensors and the content types its config declares."""

    __slots__ = (
        "model", "batched", "inputs", "outputs", "declared_inputs", "declared_outputs", "raw",
    )  # fmt: skip

    def __init__(self, model: str, config: Any) -> None:
        self.model = model
        self.batched = config.max_batch_size > 0
        batch = (-1,) if self.batched else ()
        params = {k: v.string_value for k, v in config.parameters.items()}
        kinds = {
            k[len(CONTENT_TYPE) :]: v.strip().lower()
            for k, v in params.items()
            if k.startswith(CONTENT_TYPE)
        }
        for name, kind in kinds.items():
            if kind not in KINDS:
                raise InvalidArgument(
                    f"model '{model}': '{CONTENT_TYPE}{name}' is '{kind}'; content types are "
                    + ", ".join(sorted(KINDS))
                )
        self.inputs: dict[str, TensorPlan] = {}
        for t in config.input:
            dims = tuple(t.dims)
            spec = TensorPlan(
                t.name, datatypes.from_config(t.data_type), batch + dims, kinds.get(t.name, "np")
            )
            spec.optional = t.optional
            self.inputs[t.name] = spec
        self.outputs: dict[str, str] = {}
        for t in config.output:
            kind = kinds.get(t.name, "np")
            if kind != "np":
                self.outputs[t.name] = kind
        unknown = set(kinds) - set(self.inputs) - {t.name for t in config.output}
        if unknown:
            raise InvalidArgument(
                f"model '{model}': '{CONTENT_TYPE}{sorted(unknown)[0]}' names no input or output"
            )
        for spec in self.inputs.values():
            if spec.kind == "image" or f"{IMAGE}{spec.name}" in params:
                spec.image = ImageOptions(spec, params.get(f"{IMAGE}{spec.name}", ""), model)
            cols = params.get(f"{COLUMNS}{spec.name}")
            if cols:
                spec.columns = tuple(c.strip() for c in cols.split(",") if c.strip())
        self.declared_inputs = {n: s.kind for n, s in self.inputs.items() if s.kind != "np"}
        self.declared_outputs = self.outputs
        #: inputs whose JSON ``data`` the codec hands over as it is ("json": any value)
        self.raw = frozenset(n for n, k in self.declared_inputs.items() if k == "json")

    @property
    def declares(self) -> bool:
        return bool(self.declared_inputs or self.declared_outputs)

    def image_options(self, spec: TensorPlan) -> ImageOptions:
        """The input's image options: declared, or those its shape implies."""
        if spec.image is None:
            spec.image = ImageOptions(spec, "", self.model)
        return spec.image


class ContentTypes:
    """The plans of one HTTP frontend, each kept while its config is the one loaded."""

    def __init__(self, dp: DataPlane) -> None:
        self.dp = dp
        self._plans: PerConfig[tuple[str, str], ModelPlan] = PerConfig()

    def declared(self, name: str, version: str) -> ModelPlan | None:
        """The model's plan when its config declares content types; None otherwise (or when
        the model is not known: ``infer`` answers that)."""
        try:
            config = self.dp.model_config(name, version)
        except NaiadError:
            return None
        plan = self._plan(name, version, config)
        return plan if plan.declares else None

    def plan(self, name: str, version: str) -> ModelPlan:
        """The model's plan whether or not it declares anything (for request-level types)."""
        return self._plan(name, version, self.dp.model_config(name, version))

    def _plan(self, name: str, version: str, config: object) -> ModelPlan:
        key = (name, version)
        plan = self._plans.get(key, config)
        return plan if plan is not None else self._plans.put(key, config, ModelPlan(name, config))
