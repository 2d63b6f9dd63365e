"""What the generated models (`models.py`) share: a field table per class, and one checker that
reads it to validate values, encode them to the wire's JSON and decode them from it.

The wire names are the schemas' camelCase ones; the Python attributes are their snake_case forms.
Nothing here reaches the network or imports the A2A SDK.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Mapping, TypeVar, cast

__all__ = ["Field", "Model", "ModelError", "Spec"]


class ModelError(ValueError):
    """A value does not fit its schema. The message names the place (`Expectation.dueAt`,
    `Lapse.subject.id`, `ExpectationRecord.lapses[0].lapse`) and the rule it breaks."""


@dataclass(frozen=True)
class Spec:
    """What one JSON value must be, as its schema says.

    `kind` is one of `str`, `int`, `num`, `bool`, `any`, `map` (an object of any members),
    `list` (of `items`), `model` (the generated class `model`) and `enum` (one of `values`).
    """

    kind: str
    nullable: bool = False
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    minimum: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    items: Spec | None = None
    model: type[Model] | None = None
    values: tuple[str, ...] = ()
    # What a value matching `pattern` is, in words, for the error message.
    hint: str | None = None


@dataclass(frozen=True)
class Field:
    """One member of a generated class: its Python attribute, its wire name, whether the schema
    requires it, and its [`Spec`]."""

    attr: str
    wire: str
    required: bool
    spec: Spec


_patterns: dict[str, re.Pattern[str]] = {}


def _pattern(p: str) -> re.Pattern[str]:
    compiled = _patterns.get(p)
    if compiled is None:
        compiled = _patterns[p] = re.compile(p)
    return compiled


def _what(value: object) -> str:
    """A short description of a wrong value for an error message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _convert(value: object, spec: Spec, path: str, decode: bool) -> Any:
    """Checks `value` against `spec`; with `decode`, the value is wire JSON and comes back as
    the Python value (a model for an object); without, it is a Python value and comes back as it
    is. Raises [`ModelError`] naming `path`."""
    if value is None:
        if spec.nullable:
            return None
        raise ModelError(f"{path}: must not be null")
    kind = spec.kind
    if kind == "any":
        return value
    if kind in ("str", "enum"):
        if not isinstance(value, str):
            raise ModelError(f"{path}: expected a string, got {_what(value)}")
        if kind == "enum" and value not in spec.values:
            raise ModelError(f"{path}: {value!r} is not one of {', '.join(spec.values)}")
        if spec.min_length is not None and len(value) < spec.min_length:
            raise ModelError(f"{path}: at least {spec.min_length} characters, got {_what(value)}")
        if spec.max_length is not None and len(value) > spec.max_length:
            raise ModelError(f"{path}: at most {spec.max_length} characters, got {len(value)}")
        if spec.pattern is not None and _pattern(spec.pattern).search(value) is None:
            if spec.hint is not None:
                raise ModelError(f"{path}: {_what(value)} is not {spec.hint}")
            raise ModelError(f"{path}: {_what(value)} does not match {spec.pattern}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise ModelError(f"{path}: expected true or false, got {_what(value)}")
        return value
    if kind in ("int", "num"):
        # bool is an int in Python but not a number in JSON.
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ModelError(f"{path}: expected a number, got {_what(value)}")
        if kind == "int":
            if isinstance(value, float):
                # A protobuf Struct (how a2a-sdk carries metadata) holds every number as a
                # double: a lapse block's `lineage` arrives as 0.0.
                if not (decode and value.is_integer()):
                    raise ModelError(f"{path}: expected an integer, got {_what(value)}")
                value = int(value)
            if spec.minimum is not None and value < spec.minimum:
                raise ModelError(f"{path}: at least {spec.minimum}, got {value}")
        return value
    if kind == "map":
        if not isinstance(value, Mapping):
            raise ModelError(f"{path}: expected an object, got {_what(value)}")
        return dict(value)
    if kind == "list":
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise ModelError(f"{path}: expected an array, got {_what(value)}")
        if spec.min_items is not None and len(value) < spec.min_items:
            raise ModelError(f"{path}: at least {spec.min_items} items, got {len(value)}")
        if spec.max_items is not None and len(value) > spec.max_items:
            raise ModelError(f"{path}: at most {spec.max_items} items, got {len(value)}")
        assert spec.items is not None, "a list spec names its items"
        return [_convert(v, spec.items, f"{path}[{i}]", decode) for i, v in enumerate(value)]
    if kind == "model":
        assert spec.model is not None, "a model spec names its class"
        if decode:
            return spec.model.from_dict(value, path=path)
        if not isinstance(value, spec.model):
            raise ModelError(f"{path}: expected a {spec.model.__name__}, got {_what(value)}")
        return value
    raise AssertionError(f"unknown spec kind {kind!r}")


def _encode(value: Any) -> Any:
    if isinstance(value, Model):
        return value.to_dict()
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


M = TypeVar("M", bound="Model")


class Model:
    """The base of every generated class (a keyword-only dataclass): construction checks every
    field against the schema and raises [`ModelError`]; `to_dict` gives the wire JSON (camelCase
    names; an optional member left `None` is omitted); `from_dict` reads it back.

    Members the schema does not define are kept in `extra` by `from_dict` and written back by
    `to_dict`: a newer watcher's additions survive a round trip through an older kit.
    """

    _fields: ClassVar[tuple[Field, ...]] = ()
    extra: dict[str, Any]

    def __post_init__(self) -> None:
        name = type(self).__name__
        for f in self._fields:
            value = getattr(self, f.attr)
            if value is None and not f.required:
                continue
            _convert(value, f.spec, f"{name}.{f.wire}", decode=False)
        wires = {f.wire for f in self._fields}
        clash = sorted(wires.intersection(self.extra))
        if clash:
            raise ModelError(f"{name}.extra: {', '.join(clash)} is a field of its own")

    def to_dict(self) -> dict[str, Any]:
        """The wire JSON of this value: `{camelCaseName: value}`, nested models as objects."""
        out: dict[str, Any] = {}
        for f in self._fields:
            value = getattr(self, f.attr)
            if value is None and not f.required:
                continue
            out[f.wire] = _encode(value)
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls: type[M], data: object, *, path: str | None = None) -> M:
        """Reads the wire JSON `data` (a `dict`, as `json.loads` or protobuf's `MessageToDict`
        give it).

        Raises [`ModelError`] naming the member (`path` prefixes it, default the class name)
        when a required member is missing or a value breaks its schema.
        """
        where = path or cls.__name__
        if not isinstance(data, Mapping):
            raise ModelError(f"{where}: expected an object, got {_what(data)}")
        kwargs: dict[str, Any] = {}
        for f in cls._fields:
            if f.wire in data:
                kwargs[f.attr] = _convert(data[f.wire], f.spec, f"{where}.{f.wire}", decode=True)
            elif f.required:
                raise ModelError(f"{where}.{f.wire}: required, and missing")
        wires = {f.wire for f in cls._fields}
        kwargs["extra"] = {k: v for k, v in data.items() if k not in wires}
        # The generated subclasses are dataclasses whose __init__ takes these keywords.
        return cast(Callable[..., M], cls)(**kwargs)
