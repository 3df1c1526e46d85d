"""Opening USD files: every way a file can fail to load becomes one :class:`SchemaError`.

``Usd.Stage.Open`` reports a syntax error, an empty or corrupt file, a duplicate prim or
relationship target or an invalid prim name as a multi-line ``Tf.ErrorException`` (the
useful part, ``file:line:column: message``, sits in its second paragraph), and a reference,
payload or sublayer whose file is missing only as a composition error on an otherwise open
stage. :func:`open_stage` turns both into one line naming the file (and the line and
column, when USD gives them) or the prim that introduced the missing asset.

Part of :mod:`runtime.schema` (the public import path is ``runtime.schema.open_stage``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pxr import Tf, Usd

from runtime.errors import SchemaError

USD_SUFFIXES = (".usd", ".usda", ".usdc", ".usdz")
"""File name suffixes :func:`open_stage` accepts."""

_TF_ERROR = re.compile(r"Error in '[^']*' at line \d+ in file [^:]+ : '(.*?)'\s*$", re.M | re.S)
_POSITIONED = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<text>.*)$", re.S)


def _tf_messages(exc: BaseException) -> list[str]:
    """The individual error texts of a (multi-line) ``Tf.ErrorException``."""
    text = str(exc).strip()
    parts = re.split(r"\n\s*(?=Error in ')", "\n" + text)
    found = []
    for part in parts:
        match = _TF_ERROR.search(part.strip())
        if match:
            found.append(" ".join(match.group(1).split()))
    return found or ([text.splitlines()[0]] if text else [type(exc).__name__])


def tf_error_line(exc: BaseException) -> str:
    """One line from a (multi-line) ``Tf.ErrorException``, preferring one with a position.

    Args:
        exc: the exception raised by USD.

    Returns:
        ``"FILE:LINE:COL: message"`` when USD gave a position, else the first error's own
        text, e.g. ``"Failed to open layer @x.usd@"``.
    """
    messages = _tf_messages(exc)
    for message in messages:
        if _POSITIONED.match(message):
            return message
    generic = ("Failed to open layer", "Failed to open")
    for message in messages:
        if not message.startswith(generic):
            return message
    return messages[0]


def _located(path: str, exc: BaseException) -> SchemaError:
    """The :class:`SchemaError` of a file USD could not parse."""
    line = tf_error_line(exc)
    match = _POSITIONED.match(line)
    if match:
        where = f"{path}:{match.group('line')}:{match.group('col')}"
        text = match.group("text")
        text = re.sub(r" in </[^>]*>$", "", text)
        return SchemaError(where, "", f"cannot read as USD: {text}")
    return SchemaError(path, "", f"cannot read as USD: {line}")


def _composition_problem(stage: Usd.Stage) -> str | None:
    """The first composition error of ``stage`` (missing reference / payload / sublayer)."""
    get_errors = getattr(stage, "GetCompositionErrors", None)
    errors = get_errors() if get_errors is not None else []
    for error in errors:
        text = " ".join(str(error).split())
        if text:
            return text
    return None


def open_stage(
    path: str | os.PathLike[str],
    *,
    allow_composition_errors: bool = False,
) -> Usd.Stage:
    """Open a USD file as a stage, or raise one clear error.

    Registers the Isaac schemas first (importing this module does). Never raises
    ``Tf.ErrorException``.

    Args:
        path: the USD file (``.usd``, ``.usda``, ``.usdc`` or ``.usdz``).
        allow_composition_errors: keep a stage whose references, payloads or sublayers
            could not all be opened (default: raise, naming the missing asset and the prim
            that introduced it).

    Returns:
        The opened ``Usd.Stage`` (everything loaded).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        SchemaError: ``path`` is a directory, has no USD suffix, is empty, cannot be parsed
            (message ``FILE:LINE:COL: cannot read as USD: ...`` when USD gives a position:
            syntax error, duplicate prim, duplicate relationship target, invalid prim name)
            or composes with errors (e.g. ``references a missing file``).
    """
    file = Path(path)
    name = str(path)
    if not file.exists():
        raise FileNotFoundError(f"{name}: no such file")
    if file.is_dir():
        raise SchemaError(name, "", "is a directory, expected a USD file")
    if file.suffix.lower() not in USD_SUFFIXES:
        raise SchemaError(
            name,
            "",
            f"not a USD file (suffix {file.suffix or 'none'!r})",
            ", ".join(USD_SUFFIXES),
        )
    if file.stat().st_size == 0:
        raise SchemaError(name, "", "cannot read as USD: the file is empty (0 bytes)")
    try:
        stage = Usd.Stage.Open(str(file), Usd.Stage.LoadAll)
    except Tf.ErrorException as exc:
        raise _located(name, exc) from None
    if stage is None:
        raise SchemaError(name, "", "cannot read as USD")
    if not allow_composition_errors:
        problem = _composition_problem(stage)
        if problem is not None:
            raise SchemaError(name, "", f"composition error: {problem}")
    return stage
