"""How a config's tensor names bind to a TorchScript ``forward()``.

TorchScript files carry no tensor names or shapes for Triton to read, so
its pytorch backend binds the config's names by convention, and so does
naiad.  An input is named after a ``forward()`` argument, or
``<name>__<index>`` for the argument at that position; a model whose one
argument is a ``Dict[str, Tensor]`` gets every input under its own name as
a key.  An output is the whole result (a Tensor or ``List[str]``), the
``<name>__<index>`` element of a tuple or list (config order when no output
uses the convention, as in Triton), or the entry of that name of a
``Dict[str, Tensor]`` result.

Everything here works on the types' text (``str(torch type)``), so the
rules are plain Python and ``forward()``'s schema is read in one place.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from naiad.core.errors import InvalidArgument

_INDEXED = re.compile(r"^.*__(\d+)$")
TENSOR = "Tensor"
STRINGS = "List[str]"
_DICT_OF_TENSORS = ("Dict[str, Tensor]", "Dict(str, Tensor)")


@dataclass(frozen=True)
class Forward:
    """``forward()``'s schema: its arguments (without ``self``) and its result."""

    #: (name, type) of each argument, in order.
    arguments: tuple[tuple[str, str], ...]
    #: The result's type, e.g. ``Tensor`` or ``Tuple[Tensor, Tensor]``.
    returns: str
    #: A tuple result's element types.
    elements: tuple[str, ...] = ()

    @property
    def argument_names(self) -> str:
        return ", ".join(name for name, _ in self.arguments) or "no arguments"


@dataclass(frozen=True)
class InputBinding:
    """Where each config input goes when ``forward()`` is called."""

    #: The one argument is a Dict[str, Tensor]: inputs go in under their names.
    as_dict: bool
    #: config input name -> position among forward()'s arguments (empty for a dict).
    positions: dict[str, int]
    #: Inputs passed as List[str] (BYTES tensors, one string per element).
    strings: frozenset[str]


#: An output's place in the result: None the whole result, an int an element
#: of a tuple or list, a str an entry of a dict.
Selector = int | str | None


def _index(name: str) -> int | None:
    match = _INDEXED.match(name)
    return int(match.group(1)) if match else None


def bind_inputs(model: str, forward: Forward, inputs: Sequence[tuple[str, bool]]) -> InputBinding:
    """Bind ``inputs`` ((name, is BYTES) in config order) to ``forward()``'s arguments."""
    args = forward.arguments
    names = [name for name, _ in inputs]
    strings = frozenset(name for name, is_bytes in inputs if is_bytes)
    if len(args) == 1 and args[0][1] in _DICT_OF_TENSORS:
        if strings:
            raise InvalidArgument(
                f"model '{model}': input '{sorted(strings)[0]}' is BYTES but forward() takes "
                f"one {args[0][1]}, which holds tensors only"
            )
        return InputBinding(True, {}, strings)
    for arg, kind in args:
        if kind not in (TENSOR, STRINGS):
            raise InvalidArgument(
                f"model '{model}': forward() argument '{arg}' is a '{kind}'; naiad passes "
                f"Tensor and List[str] arguments, or one Dict[str, Tensor]"
            )
    if len(names) != len(args):
        raise InvalidArgument(
            f"model '{model}': the configuration has {len(names)} inputs but forward() "
            f"takes {len(args)} ({forward.argument_names})"
        )
    arg_names = [arg for arg, _ in args]
    unknown = [name for name in names if name not in arg_names]
    if not unknown:
        positions = {name: arg_names.index(name) for name in names}
    else:
        positions = {}
        for name in names:
            index = _index(name)
            if index is None:
                raise InvalidArgument(_naming_error(model, forward, name, unknown))
            if index >= len(args):
                raise InvalidArgument(
                    f"model '{model}': input '{name}' is argument {index} but forward() takes "
                    f"{len(args)} ({forward.argument_names})"
                )
            if index in positions.values():
                raise InvalidArgument(
                    f"model '{model}': two inputs are bound to forward() argument {index}"
                )
            positions[name] = index
    for name, position in positions.items():
        arg, kind = args[position]
        wants_strings = kind == STRINGS
        if wants_strings != (name in strings):
            given = "BYTES" if name in strings else "a numeric type"
            raise InvalidArgument(
                f"model '{model}': input '{name}' is {given} but forward() argument '{arg}' "
                f"is a {kind} (BYTES inputs go to List[str] arguments, others to Tensor ones)"
            )
    return InputBinding(False, positions, strings)


def _naming_error(model: str, forward: Forward, name: str, unknown: list[str]) -> str:
    bad = next((n for n in unknown if _index(n) is None), None)
    if bad is None:  # every unknown name is indexed, ``name`` is an argument's
        return (
            f"model '{model}': the inputs mix forward()'s argument names ('{name}') and "
            f"<name>__<index> names ('{unknown[0]}'); name every input one way"
        )
    return (
        f"model '{model}': input '{bad}' is neither an argument of forward() "
        f"({forward.argument_names}) nor named <name>__<index> (INPUT__0, INPUT__1...): "
        "name every input after forward()'s arguments, or every input by position"
    )


def bind_outputs(
    model: str, forward: Forward, outputs: Sequence[tuple[str, bool]]
) -> list[Selector]:
    """Where each of ``outputs`` ((name, is BYTES) in config order) is in the result."""
    returns = forward.returns
    names = [name for name, _ in outputs]
    if returns in (TENSOR, STRINGS):
        if len(names) != 1:
            raise InvalidArgument(
                f"model '{model}': forward() returns one {returns} but the configuration has "
                f"{len(names)} outputs ({', '.join(names)})"
            )
        _check_kind(model, outputs[0], returns)
        return [None]
    if returns in _DICT_OF_TENSORS:
        for output in outputs:
            _check_kind(model, output, TENSOR)
        return list(names)
    if forward.elements or returns == "List[Tensor]":
        indexes = [_index(name) for name in names]
        if all(i is None for i in indexes):
            selectors: list[Selector] = list(range(len(names)))  # Triton: config order
        elif any(i is None for i in indexes):
            unnamed = next(n for n, i in zip(names, indexes, strict=True) if i is None)
            raise InvalidArgument(
                f"model '{model}': output '{unnamed}' is not named <name>__<index> like the "
                "other outputs: name every output by its position in forward()'s result "
                "(OUTPUT__0, OUTPUT__1...), or none (then they bind in config order)"
            )
        else:
            selectors = list(indexes)
        for output, selector in zip(outputs, selectors, strict=True):
            assert isinstance(selector, int)
            if forward.elements:
                if selector >= len(forward.elements):
                    raise InvalidArgument(
                        f"model '{model}': output '{output[0]}' is element {selector} of "
                        f"forward()'s result, which has {len(forward.elements)} ({returns})"
                    )
                _check_kind(model, output, forward.elements[selector])
            else:
                _check_kind(model, output, TENSOR)
        return selectors
    raise InvalidArgument(
        f"model '{model}': forward() returns '{returns}'; naiad serves a Tensor, a List[str], "
        "a tuple of those, a List[Tensor] or a Dict[str, Tensor]"
    )


def _check_kind(model: str, output: tuple[str, bool], kind: str) -> None:
    name, is_bytes = output
    if kind not in (TENSOR, STRINGS):
        raise InvalidArgument(
            f"model '{model}': output '{name}' is a '{kind}' in forward()'s result; "
            "naiad returns Tensor and List[str] values"
        )
    if is_bytes != (kind == STRINGS):
        given = "BYTES" if is_bytes else "a numeric type"
        raise InvalidArgument(
            f"model '{model}': output '{name}' is {given} in the configuration but forward() "
            f"gives a {kind} (BYTES outputs come from List[str], others from Tensor)"
        )
