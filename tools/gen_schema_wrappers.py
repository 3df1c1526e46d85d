"""Generate the Python schema wrapper modules from simrt's ``generatedSchema.usda`` files.

Isaac scripts use ``IsaacSensorSchema`` / ``RangeSensorSchema``: USD-generated schema
classes with ``Define``, ``Get``, ``Get<Name>Attr`` / ``Create<Name>Attr`` (and ``Apply`` for
API schemas). simrt registers those schemas codeless, so this tool writes equivalent Python
modules, one class per schema of the layer (the class names, kinds and bases come from the
plugin's ``plugInfo.json``; the properties, fallbacks and docs from the layer)::

    python tools/gen_schema_wrappers.py           # (re)write runtime/compat/<Module>.py
    python tools/gen_schema_wrappers.py --check   # exit 1 when a module is out of date

The output is deterministic and already ``ruff format`` clean; the test suite regenerates
the text and compares it with the committed modules.
"""

from __future__ import annotations

import argparse
import json
import keyword
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESOURCES = REPO / "runtime" / "schema" / "resources"
OUT = REPO / "runtime" / "compat"

MODULES = {
    "IsaacSensorSchema": "sensor_schema",
    "RangeSensorSchema": "range_sensor_schema",
}
"""Generated module name -> resource folder holding plugInfo.json + generatedSchema.usda."""


def _plug_types(folder: Path) -> dict[str, dict]:
    """TfType name -> type info of the folder's plugInfo.json (``#`` comment lines allowed)."""
    text = (folder / "plugInfo.json").read_text()
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    types: dict[str, dict] = {}
    for plugin in json.loads(text)["Plugins"]:
        types.update(plugin["Info"].get("Types", {}))
    return types


def _camel(name: str) -> str:
    """``isaac:fooBar`` -> ``IsaacFooBar`` (method-name part of a property)."""
    return "".join(part[:1].upper() + part[1:] for part in name.split(":"))


def _doc_lines(text: str, indent: str) -> list[str]:
    text = " ".join(str(text or "").split())
    return textwrap.wrap(text, 100 - len(indent)) if text else []


def _docstring(summary: str, body: str, indent: str) -> list[str]:
    lines = _doc_lines(body, indent)
    if not lines:
        return [f'{indent}"""{summary}"""']
    return [f'{indent}"""{summary}', "", *[f"{indent}{line}" for line in lines], f'{indent}"""']


class _Property:
    def __init__(self, spec) -> None:  # an Sdf.AttributeSpec or Sdf.RelationshipSpec
        from pxr import Sdf

        self.name = str(spec.name)
        self.is_rel = isinstance(spec, Sdf.RelationshipSpec)
        self.doc = str(spec.documentation or "")
        if self.is_rel:
            return
        self.type_name = str(spec.typeName)
        self.uniform = spec.variability == Sdf.VariabilityUniform
        self.fallback = spec.default if spec.HasDefaultValue() else None
        tokens = spec.GetInfo("allowedTokens") if spec.HasInfo("allowedTokens") else []
        self.allowed = [str(t) for t in tokens]


def _schemas(folder: Path) -> list[tuple[str, str, str, list[_Property], str]]:
    """(python name, kind, base python name or '', properties, doc) per schema, file order."""
    from pxr import Sdf

    layer = Sdf.Layer.FindOrOpen(str(folder / "generatedSchema.usda"))
    if layer is None:
        raise SystemExit(f"{folder / 'generatedSchema.usda'}: cannot open")
    types = _plug_types(folder)
    alias = {tf: info.get("alias", {}).get("UsdSchemaBase", tf) for tf, info in types.items()}
    by_alias = {a: tf for tf, a in alias.items()}
    out = []
    for spec in layer.rootPrims:
        name = str(spec.name)
        tf = by_alias.get(name)
        if tf is None:
            raise SystemExit(f"{folder / 'plugInfo.json'}: no type with alias {name!r}")
        info = types[tf]
        bases = info.get("bases", [])
        base = alias.get(bases[0], "") if bases and bases[0] in types else ""
        props = [_Property(p) for p in sorted(spec.properties, key=lambda p: str(p.name))]
        out.append((name, info["schemaKind"], base, props, str(spec.documentation or "")))
    return out


def _value(value) -> str:
    """A Python literal for a fallback (docstrings only)."""
    if hasattr(value, "__len__") and not isinstance(value, str):
        return "(" + ", ".join(_value(v) for v in value) + ")"
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, float):
        return f"{value:.7g}"  # authored as float32: 7 significant digits
    return repr(value)


def _methods(prop: _Property, indent: str) -> list[str]:
    part = _camel(prop.name)
    body = indent + "    "
    if prop.is_rel:
        return [
            f"{indent}def Get{part}Rel(self) -> Usd.Relationship:",
            *_docstring(f"``{prop.name}`` relationship.", prop.doc, body),
            f'{body}return self._get_rel("{prop.name}")',
            "",
            f"{indent}def Create{part}Rel(self) -> Usd.Relationship:",
            f'{body}"""``{prop.name}`` relationship, authored if missing."""',
            f'{body}return self._create_rel("{prop.name}")',
            "",
        ]
    facts = f"{'uniform ' if prop.uniform else ''}{prop.type_name}"
    if prop.fallback is not None:
        facts += f", fallback {_value(prop.fallback)}"
    if prop.allowed:
        facts += f", allowed {', '.join(prop.allowed)}"
    doc = f"{prop.doc} ({facts})."
    signature = (
        f"{indent}def Create{part}Attr(self, defaultValue: Any = None, writeSparsely: bool = False)"
        " -> Usd.Attribute:"
    )
    if len(signature) > 100:
        signature_lines = [
            f"{indent}def Create{part}Attr(",
            f"{body}self, defaultValue: Any = None, writeSparsely: bool = False",
            f"{indent}) -> Usd.Attribute:",
        ]
    else:
        signature_lines = [signature]
    args = f'"{prop.name}", "{prop.type_name}", {prop.uniform}, defaultValue, writeSparsely'
    call = f"{body}return self._create_attr({args})"
    if len(call) > 100:
        call_lines = [f"{body}return self._create_attr(", f"{body}    {args}", f"{body})"]
    else:
        call_lines = [call]
    return [
        f"{indent}def Get{part}Attr(self) -> Usd.Attribute:",
        *_docstring(f"``{prop.name}`` attribute.", doc, body),
        f'{body}return self._get_attr("{prop.name}")',
        "",
        *signature_lines,
        f'{body}"""``{prop.name}`` authored if missing (``defaultValue`` set when given)."""'
        if len(prop.name) < 28
        else f'{body}"""``{prop.name}`` authored if missing."""',
        *call_lines,
        "",
    ]


def _names(label: str, names: list[str]) -> list[str]:
    if not names:
        return [f"    {label} = ()"]
    return [f"    {label} = (", *[f'        "{n}",' for n in names], "    )"]


def generate(module: str) -> str:
    """The source text of the wrapper module ``module`` (a key of :data:`MODULES`)."""
    folder = RESOURCES / MODULES[module]
    schemas = _schemas(folder)
    rel = folder.relative_to(REPO).as_posix()
    bases_used = set()
    tokens: set[str] = set()
    own_names: dict[str, list[str]] = {}
    all_names: dict[str, list[str]] = {}
    for name, kind, base, props, _doc in schemas:
        inherited = all_names.get(base, [])
        own_names[name] = [p.name for p in props if not p.is_rel and p.name not in inherited]
        all_names[name] = inherited + own_names[name]
        for p in props:
            tokens.add(p.name)
            if not p.is_rel:
                tokens.update(p.allowed)
        if not base:
            bases_used.add("APISchemaBase" if kind.endswith("API") else "TypedSchema")
    lines = [
        f'"""``{module}``: schema classes generated from the schema layer below.',
        "",
        f"Source: ``{rel}/generatedSchema.usda``.",
        "Generated by ``tools/gen_schema_wrappers.py`` -- do not edit; regenerate instead.",
        "Each class wraps a prim like USD's generated schema classes: ``Define`` / ``Get``",
        "(typed schemas), ``Apply`` / ``CanApply`` (API schemas), ``Get<Name>Attr`` /",
        "``Create<Name>Attr`` and ``Get<Name>Rel`` / ``Create<Name>Rel``.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        "from pxr import Usd",
        "",
        "import runtime.schema  # noqa: F401  (registers the schemas before any stage exists)",
        f"from runtime.compat._schema_base import {', '.join(sorted(bases_used))}",
        "",
        "__all__ = [",
        *[f'    "{n}",' for n in sorted([s[0] for s in schemas] + ["Tokens"])],
        "]",
        "",
        "",
        "class Tokens:",
        f'    """Token strings of the ``{module}`` schemas (attribute names, allowed values)."""',
        "",
    ]
    for token in sorted(tokens):
        ident = token.replace(":", "_")
        if ident.isidentifier() and not keyword.iskeyword(ident):
            lines.append(f'    {ident} = "{token}"')
    lines.append("")
    for name, kind, base, props, doc in schemas:
        parent = base or ("APISchemaBase" if kind.endswith("API") else "TypedSchema")
        lines += ["", f"class {name}({parent}):"]
        lines += _docstring(f"``{name}`` ({kind}).", doc, "    ")
        lines += [
            "",
            f'    _schema_type_name = "{name}"',
        ]
        if kind == "concreteTyped":
            lines.append("    _concrete = True")
        own = own_names[name]
        inherited = all_names[name][: len(all_names[name]) - len(own)]
        lines += _names("_attribute_names", own)
        lines += _names("_inherited_attribute_names", inherited)
        lines.append("")
        inherited_set = set(inherited)
        for prop in props:
            if not prop.is_rel and prop.name in inherited_set:
                continue
            if prop.is_rel and base:
                continue  # relationships are declared on the in-file base
            lines += _methods(prop, "    ")
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) every generated module."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if stale")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    import runtime.schema  # noqa: F401  (registers the schemas)
    from runtime._files import atomic_write

    stale = []
    for module in MODULES:
        text = generate(module)
        path = OUT / f"{module}.py"
        if path.is_file() and path.read_text() == text:
            continue
        if args.check:
            stale.append(path)
            continue
        atomic_write(path, lambda tmp, text=text: Path(tmp).write_text(text))
        print(f"wrote {path.relative_to(REPO)}")
    for path in stale:
        print(f"{path.relative_to(REPO)} is out of date: run tools/gen_schema_wrappers.py")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
