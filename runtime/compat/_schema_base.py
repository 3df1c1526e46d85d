"""Base classes of the generated schema wrapper modules (``IsaacSensorSchema``, ...).

USD's generated Python schema classes (``UsdGeom.Xform``, ...) wrap a prim and give typed
access to the schema's properties: ``Define`` / ``Get`` (typed schemas), ``Apply`` /
``CanApply`` (applied API schemas), ``Get<Name>Attr`` / ``Create<Name>Attr`` and
``Get<Name>Rel`` / ``Create<Name>Rel``. simrt registers the Isaac sensor schemas as
codeless schemas (no compiled classes), so ``tools/gen_schema_wrappers.py`` generates
equivalent Python classes from the ``generatedSchema.usda`` files; they rest on these bases.
"""

from __future__ import annotations

from typing import Any

from pxr import Sdf, Usd

__all__ = ["APISchemaBase", "SchemaBase", "TypedSchema"]


class SchemaBase:
    """A schema object holding one prim (an invalid prim when constructed from nothing).

    Args:
        prim: a ``Usd.Prim`` or another schema object (its prim).
    """

    _schema_type_name = ""
    _attribute_names: tuple[str, ...] = ()
    _inherited_attribute_names: tuple[str, ...] = ()

    def __init__(self, prim: Any = None) -> None:
        if isinstance(prim, SchemaBase):
            prim = prim.GetPrim()
        self._prim = prim if prim is not None else Usd.Prim()

    def GetPrim(self) -> Usd.Prim:  # noqa: N802
        """The held prim."""
        return self._prim

    def GetPath(self) -> Sdf.Path:  # noqa: N802
        """The held prim's path."""
        return self._prim.GetPath()

    def _is_schema(self) -> bool:
        raise NotImplementedError

    def __bool__(self) -> bool:
        return bool(self._prim) and self._prim.IsValid() and self._is_schema()

    @classmethod
    def GetSchemaAttributeNames(cls, includeInherited: bool = True) -> list[str]:  # noqa: N802, N803
        """The schema's attribute names (with the inherited ones unless told otherwise)."""
        if includeInherited:
            return list(cls._inherited_attribute_names + cls._attribute_names)
        return list(cls._attribute_names)

    def _get_attr(self, name: str) -> Usd.Attribute:
        return self._prim.GetAttribute(name)

    def _create_attr(
        self,
        name: str,
        type_name: str,
        uniform: bool,
        default_value: Any,
        write_sparsely: bool,
    ) -> Usd.Attribute:
        """The attribute, authored as the schema declares it; ``default_value`` set if given.

        With ``write_sparsely`` a default equal to the schema fallback is not authored.
        """
        variability = Sdf.VariabilityUniform if uniform else Sdf.VariabilityVarying
        attr = self._prim.GetAttribute(name)
        if not attr or not attr.HasAuthoredValue():
            attr = self._prim.CreateAttribute(
                name, Sdf.ValueTypeNames.Find(type_name), False, variability
            )
        if default_value is not None:
            if write_sparsely and not attr.HasAuthoredValue() and attr.Get() == default_value:
                return attr
            attr.Set(default_value)
        return attr

    def _get_rel(self, name: str) -> Usd.Relationship:
        return self._prim.GetRelationship(name)

    def _create_rel(self, name: str) -> Usd.Relationship:
        return self._prim.GetRelationship(name) or self._prim.CreateRelationship(name, False)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._prim})"


def _tf_type(name: str) -> Any:
    return Usd.SchemaRegistry.GetTypeFromSchemaTypeName(name)


class TypedSchema(SchemaBase):
    """A typed (``IsA``) schema: ``Define`` concrete types, ``Get`` any."""

    _concrete = False

    def _is_schema(self) -> bool:
        return bool(self._prim.IsA(_tf_type(self._schema_type_name)))

    @classmethod
    def Get(cls, stage: Usd.Stage, path: Sdf.Path | str) -> Any:  # noqa: N802
        """The schema object for the prim at ``path`` (invalid when there is none)."""
        return cls(stage.GetPrimAtPath(Sdf.Path(str(path))))

    @classmethod
    def Define(cls, stage: Usd.Stage, path: Sdf.Path | str) -> Any:  # noqa: N802
        """Define (or retype) a prim of this schema's type at ``path``.

        Raises:
            TypeError: the schema is abstract.
        """
        if not cls._concrete:
            raise TypeError(f"{cls.__name__} is an abstract schema and cannot be defined")
        return cls(stage.DefinePrim(Sdf.Path(str(path)), cls._schema_type_name))


class APISchemaBase(SchemaBase):
    """A single-apply API schema: ``Apply``, ``CanApply``, ``Get``."""

    def _is_schema(self) -> bool:
        return bool(self._prim.HasAPI(self._schema_type_name))

    @classmethod
    def Get(cls, stage: Usd.Stage, path: Sdf.Path | str) -> Any:  # noqa: N802
        """The API object for the prim at ``path`` (invalid unless the API is applied)."""
        return cls(stage.GetPrimAtPath(Sdf.Path(str(path))))

    @classmethod
    def CanApply(cls, prim: Usd.Prim) -> bool:  # noqa: N802
        """True when the API can be applied to ``prim``."""
        return bool(prim and prim.IsValid() and prim.CanApplyAPI(cls._schema_type_name))

    @classmethod
    def Apply(cls, prim: Usd.Prim) -> Any:  # noqa: N802
        """Apply the API to ``prim`` and return the API object (invalid if it cannot)."""
        if not cls.CanApply(prim):
            return cls(Usd.Prim())
        prim.ApplyAPI(cls._schema_type_name)
        return cls(prim)
