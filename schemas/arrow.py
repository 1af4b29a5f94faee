"""One definition → dataclass and pyarrow schema.

Records are plain dataclasses; `arrow_schema(cls)` derives the pyarrow schema from their type
hints so the column list lives in exactly one place.
"""
from __future__ import annotations

import dataclasses
import functools
import types
import typing
from datetime import datetime
from typing import Any, Collection, Iterable

import pyarrow as pa

_SCALARS: dict[Any, pa.DataType] = {
    str: pa.string(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
    datetime: pa.timestamp("us", tz="UTC"),
}


def _arrow_type(hint: Any) -> tuple[pa.DataType, bool]:
    """Map a type hint to (arrow type, nullable)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported union {hint!r}")
        return _arrow_type(args[0])[0], True
    if origin is list:
        (item,) = typing.get_args(hint)
        return pa.list_(_arrow_type(item)[0]), False
    if hint in _SCALARS:
        return _SCALARS[hint], False
    raise TypeError(f"unsupported field type {hint!r}")


@functools.cache  # per class: get_type_hints evaluates every annotation (~1 ms, once per chunk file before)
def arrow_schema(cls: type) -> pa.Schema:
    hints = typing.get_type_hints(cls)
    fields = []
    for f in dataclasses.fields(cls):
        arrow_type, nullable = _arrow_type(hints[f.name])
        fields.append(pa.field(f.name, arrow_type, nullable=nullable))
    return pa.schema(fields)


def columns_of(cls: type, names: Iterable[str], *, computed: Collection[str] = ()) -> tuple[str, ...]:
    """`names` as a column tuple, each checked to be a field of `cls` (or one of the `computed`
    columns a query adds): a renamed field fails at import instead of leaving a stale copy."""
    names = tuple(names)
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = [n for n in names if n not in fields and n not in computed]
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {', '.join(unknown)}")
    return names


def to_table(records: Iterable[Any], cls: type) -> pa.Table:
    """Column by column from the fields (no `dataclasses.asdict`: its deep copies cost more than the
    Parquet write; a field is a scalar or a list of scalars, which Arrow copies anyway)."""
    schema = arrow_schema(cls)
    records = list(records)
    return pa.table({name: [getattr(r, name) for r in records] for name in schema.names}, schema=schema)


def from_table(table: pa.Table, cls: type) -> list[Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return [cls(**{k: v for k, v in row.items() if k in names}) for row in table.to_pylist()]
