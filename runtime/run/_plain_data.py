"""Plain-data files for the scene cache: objects as JSON plus NumPy arrays, never pickle.

A value (``None``, bools, ints, floats, strings, lists, tuples, dicts with string keys,
NumPy arrays and scalars of numeric or bool dtype, ``runtime.*`` modules, and instances of
the classes the caller names) is written to one ``.npz`` file of two ``uint8`` members: a
JSON document (``__plain__``, UTF-8) describing the value, and every array's bytes packed
into one buffer (``__arrays__``, each array 64-byte aligned, its dtype, shape and offset in
the document), with arrays and repeated objects referred to by number (an array or object
held twice is one object again when read). One member for all arrays: a ray scene's 180
arrays as members took 7 ms to open, the buffer well under one. Reading uses
``numpy.load(allow_pickle=False)`` and ``json``; an instance is made with ``cls.__new__``
and its attributes set from the document, for classes in the reader's allow-list only:
nothing in a file can name code to run.
"""

from __future__ import annotations

import importlib
import io
import json
import types
import zipfile
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["PlainDataError", "read_plain", "write_plain"]

_DOC = "__plain__"
_ARRAYS = "__arrays__"
_ALIGN = 64
_KINDS = "biuf"  # array / scalar dtypes kept: bool, signed, unsigned, float


class PlainDataError(ValueError):
    """A value that cannot be written as plain data, or a file that does not read as one."""


def _class_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


class _Encoder:
    def __init__(self, classes: Iterable[type]) -> None:
        self.classes = {_class_name(c): c for c in classes}
        self.arrays: dict[str, np.ndarray] = {}
        self.seen: dict[int, int] = {}
        self.keep: list[Any] = []  # (ids stay unique while encoding)
        self.objects = 0

    def encode(self, value: Any) -> Any:
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int) and type(value) is int:
            return value
        if type(value) is float:
            return {"t": "float", "v": repr(value)}
        if isinstance(value, np.ndarray):
            return self._array(value)
        if isinstance(value, np.generic):
            if value.dtype.kind not in _KINDS:
                raise PlainDataError(f"scalar of dtype {value.dtype}")
            return {"t": "scalar", "dtype": value.dtype.str, "v": repr(value.item())}
        if isinstance(value, (list, tuple)):
            kind = "list" if isinstance(value, list) else "tuple"
            return {"t": kind, "v": [self.encode(item) for item in value]}
        if isinstance(value, dict):
            if not all(isinstance(key, str) for key in value):
                raise PlainDataError("dict with non-string keys")
            return {"t": "dict", "v": {key: self.encode(item) for key, item in value.items()}}
        if isinstance(value, types.ModuleType):
            if not value.__name__.startswith("runtime."):
                raise PlainDataError(f"module {value.__name__}")
            return {"t": "module", "v": value.__name__}
        name = _class_name(type(value))
        if name not in self.classes or not hasattr(value, "__dict__"):
            raise PlainDataError(f"object of class {name}")
        if id(value) in self.seen:
            return {"t": "ref", "v": self.seen[id(value)]}
        number = self.objects
        self.objects += 1
        self.seen[id(value)] = number
        self.keep.append(value)
        state = {key: self.encode(item) for key, item in vars(value).items()}
        return {"t": "obj", "cls": name, "n": number, "v": state}

    def _array(self, array: np.ndarray) -> Any:
        if array.dtype.kind not in _KINDS:
            raise PlainDataError(f"array of dtype {array.dtype}")
        if id(array) not in self.seen:
            self.seen[id(array)] = len(self.arrays)
            self.keep.append(array)
            self.arrays[f"a{len(self.arrays)}"] = array
        return {"t": "array", "v": self.seen[id(array)]}

    def pack(self) -> tuple[list[dict[str, Any]], np.ndarray]:
        """The arrays' table (dtype, shape, offset) and their bytes in one buffer."""
        table, offset = [], 0
        for array in self.arrays.values():
            offset = -(-offset // _ALIGN) * _ALIGN
            table.append({"dtype": array.dtype.str, "shape": list(array.shape), "at": offset})
            offset += array.nbytes
        buffer = np.zeros(offset, np.uint8)
        for entry, array in zip(table, self.arrays.values(), strict=True):
            data = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
            buffer[entry["at"] : entry["at"] + data.size] = data
        return table, buffer


class _Decoder:
    def __init__(self, arrays: dict[str, np.ndarray], classes: Iterable[type]) -> None:
        self.arrays = arrays
        self.classes = {_class_name(c): c for c in classes}
        self.objects: dict[int, Any] = {}

    def decode(self, node: Any) -> Any:
        if node is None or isinstance(node, (bool, int, str)):
            return node
        if not isinstance(node, dict) or not isinstance(node.get("t"), str):
            raise PlainDataError(f"unexpected node {str(node)[:40]!r}")
        kind, value = node["t"], node.get("v")
        if kind == "float":
            return float(value)
        if kind == "scalar":
            dtype = np.dtype(str(node["dtype"]))
            if dtype.kind not in _KINDS:
                raise PlainDataError(f"scalar of dtype {dtype}")
            if dtype.kind == "b":
                return dtype.type(value == "True")
            return dtype.type(float(value) if dtype.kind == "f" else int(value))
        if kind == "array":
            return self.arrays[f"a{int(value)}"]
        if kind in ("list", "tuple"):
            items = [self.decode(item) for item in value]
            return items if kind == "list" else tuple(items)
        if kind == "dict":
            return {str(key): self.decode(item) for key, item in value.items()}
        if kind == "module":
            if not str(value).startswith("runtime."):
                raise PlainDataError(f"module {value}")
            return importlib.import_module(str(value))
        if kind == "ref":
            return self.objects[int(value)]
        if kind == "obj":
            cls = self.classes.get(str(node.get("cls")))
            if cls is None:
                raise PlainDataError(f"class {node.get('cls')} not allowed")
            instance = cls.__new__(cls)
            self.objects[int(node["n"])] = instance
            state = {str(key): self.decode(item) for key, item in value.items()}
            instance.__dict__.update(state)
            return instance
        raise PlainDataError(f"unknown node kind {kind!r}")


def write_plain(path: Any, value: Any, classes: Iterable[type] = (), **meta: Any) -> None:
    """Write ``value`` (and JSON-able ``meta``) to ``path`` as plain data (``.npz``).

    Raises:
        PlainDataError: a part of ``value`` is not plain data or of a class not listed.
    """
    encoder = _Encoder(classes)
    document = {"meta": meta, "value": encoder.encode(value)}
    document["arrays"], packed = encoder.pack()
    text = json.dumps(document, separators=(",", ":"), allow_nan=False)
    members = {_DOC: np.frombuffer(text.encode(), np.uint8), _ARRAYS: packed}
    buffer = io.BytesIO()
    np.savez(buffer, **members)
    with open(path, "wb") as handle:
        handle.write(buffer.getvalue())


def _unpack(packed: np.ndarray, entry: dict[str, Any]) -> np.ndarray:
    """One array (a copy: its own aligned, writable memory) out of the packed buffer."""
    dtype = np.dtype(str(entry["dtype"]))
    if dtype.kind not in _KINDS:
        raise PlainDataError(f"array of dtype {dtype}")
    shape = tuple(int(n) for n in entry["shape"])
    at = int(entry["at"])
    count = int(np.prod(shape, dtype=np.int64))
    if at < 0 or any(n < 0 for n in shape) or at + count * dtype.itemsize > packed.size:
        raise PlainDataError("an array outside the packed buffer")
    return np.frombuffer(packed, dtype, count, at).reshape(shape).copy()


def read_plain(path: Any, classes: Iterable[type] = ()) -> tuple[Any, dict[str, Any]]:
    """``(value, meta)`` read from a file of :func:`write_plain`; no pickle is ever loaded.

    Raises:
        PlainDataError: the file is not such a file (or names a class not listed).
    """
    try:
        with np.load(path, allow_pickle=False) as members:
            if sorted(members.files) != sorted((_DOC, _ARRAYS)):
                raise PlainDataError(f"members {members.files}, not {_DOC} and {_ARRAYS}")
            raw, packed = members[_DOC], members[_ARRAYS]
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
        raise PlainDataError(f"not a plain-data file ({error})") from None
    if raw.dtype != np.uint8 or packed.dtype != np.uint8 or packed.ndim != 1:
        raise PlainDataError("members not of bytes")
    try:
        document = json.loads(raw.tobytes().decode())
        meta = document["meta"]
        arrays = {f"a{n}": _unpack(packed, entry) for n, entry in enumerate(document["arrays"])}
        value = _Decoder(arrays, classes).decode(document["value"])
    except PlainDataError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as error:
        raise PlainDataError(f"bad document ({type(error).__name__}: {error})") from None
    if not isinstance(meta, dict):
        raise PlainDataError("bad document (meta)")
    return value, meta
