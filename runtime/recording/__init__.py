"""Recordings of runs: the streaming store, its readers and its exports.

- :class:`StoreWriter` (``store.py``): rows into chunks, chunks onto disk as they fill
  (Zarr v3 directory store, commit log, crash semantics).
- :func:`open_recording` / :func:`load_recording` (``reader.py``): committed rows chunk by
  chunk or all at once; old ``.npz`` and ``.parquet`` files too (``legacy.py``).
- :func:`export_recording` (``export.py``): ``.npz``, ``.parquet`` and Foxglove ``.mcap``,
  streamed chunk by chunk.
- :func:`sync_file_system`: one ``syncfs(2)`` of the file system holding a path (a batch
  makes its episodes' stores durable with one call before its manifest names them).

Importing this package loads neither zarr nor pyarrow.
"""

from runtime.recording._disk import sync_file_system
from runtime.recording.channels import FORMAT_NAME, FORMAT_VERSION, ChannelInfo
from runtime.recording.export import EXPORT_SUFFIXES, check_export_path, export_recording
from runtime.recording.reader import Recording, RecordingReader, load_recording, open_recording
from runtime.recording.store import RecordingError, StoreWriter, check_store_path, is_store

__all__ = [
    "EXPORT_SUFFIXES",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "ChannelInfo",
    "Recording",
    "RecordingError",
    "RecordingReader",
    "StoreWriter",
    "check_export_path",
    "check_store_path",
    "export_recording",
    "is_store",
    "load_recording",
    "open_recording",
    "sync_file_system",
]
