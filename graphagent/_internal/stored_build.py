"""Pydantic model instances built from fields already checked, many in one call.

A cold read of a long conversation builds one message per stored message, from fields
the decoder has checked (:mod:`graphagent._internal.stored_messages`). Building one from
Python costs an ``object.__new__`` and four descriptor calls (the instance dict and
pydantic's three slots), ~4k instructions; pydantic-core builds the same instance in
Rust, with no per-object Python call, from a ``(fields, extra, fields_set)`` triple
(what its own field validation hands its model builder): ~2.3k per message when a list
of them goes in one call. Nothing is validated on this path: the triples hold exactly
what validation would have made.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel
from pydantic_core import SchemaValidator, core_schema

__all__ = ["Maker", "maker"]

# one instance's parts: its field dict, its extra fields (None: none allowed), the names
# of the fields set (shared by every instance of a class: see stored_messages._built)
Triple = tuple[dict[str, Any], None, set[str]]
Maker = Callable[[list[Triple]], list[Any]]

_new = object.__new__
_put = BaseModel.__dict__["__dict__"].__set__
_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_private = BaseModel.__dict__["__pydantic_private__"].__set__


def _in_python(cls: type[BaseModel]) -> Maker:
    """The same builder in Python: where pydantic-core's cannot be had."""

    def make(triples: list[Triple]) -> list[Any]:
        out = []
        for fields, extra, names in triples:
            model = _new(cls)
            _put(model, fields)
            _fields_set(model, names)
            _extra(model, extra)
            _private(model, None)
            out.append(model)
        return out

    return make


def maker(cls: type[BaseModel]) -> Maker:
    """A builder of ``cls`` instances: a list of ``(fields, None, fields_set)`` triples
    -> the instances, each holding that very dict and set, no ``__init__`` run and no
    field validated (``model_construct`` without its defaults and alias look-ups).

    The builder is pydantic-core's model builder under a schema that passes the triple
    through, checked once here on a sample; if this pydantic builds something else
    from it, the Python loop doing the same is used instead.
    """
    # pydantic-core reuses a complete model's own validator for any schema naming the
    # model (one that validates the fields and runs a custom __init__): the model reads as
    # incomplete while this schema is built, so it gets a builder of its own
    complete = cls.__dict__.get("__pydantic_complete__", False)
    cls.__pydantic_complete__ = False
    try:
        built = SchemaValidator(
            core_schema.list_schema(core_schema.model_schema(cls, core_schema.any_schema()))
        )
    except Exception:
        return _in_python(cls)
    finally:
        cls.__pydantic_complete__ = complete
    make: Maker = built.validate_python
    fields = {name: info.default for name, info in cls.model_fields.items()}
    names = set(fields)
    try:
        (model,) = make([(fields, None, names)])
        works = (
            type(model) is cls
            and model.__dict__ is fields
            and model.__pydantic_fields_set__ is names
            and model.__pydantic_extra__ is None
            and model.__pydantic_private__ is None
        )
    except Exception:
        works = False
    return make if works else _in_python(cls)
