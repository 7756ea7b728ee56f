"""A converted input's shape: the request's, fitted to the model's where it differs."""

from __future__ import annotations


def fits(shape: tuple[int, ...], full: tuple[int, ...]) -> bool:
    return len(shape) == len(full) and all(
        w == -1 or w == g for g, w in zip(shape, full, strict=True)
    )


def fit_shape(shape: tuple[int, ...], count: int, full: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` if the model's full shape (batch dimension included) takes it; else that
    full shape with its one variable dimension sized to hold ``count`` elements; else
    ``shape`` (validation then says what is wrong)."""
    if fits(shape, full):
        return shape
    known = 1
    free = []
    for i, d in enumerate(full):
        if d < 0:
            free.append(i)
        else:
            known *= d
    if not free:
        return full if count == known else shape
    if len(free) == 1 and known and count % known == 0:
        out = list(full)
        out[free[0]] = count // known
        return tuple(out)
    return shape
