"""Generated modules run from real files, so that numba can cache their kernels on disk.

numba's ``cache=True`` keys a function's compiled code on its source file's path and
modification time; code compiled from a string has no file, and cannot be cached.  A module
is written once to a file named by the SHA-1 of its text, in ``SRCGRAD_CACHE_DIR`` (else
``$XDG_CACHE_HOME/srcgrad/modules``, else ``~/.cache/srcgrad/modules``, else a private folder
under the temporary directory).  A file already there with the same text is left as it is,
so its modification time, and numba's cache, hold from one process to the next.
"""

from __future__ import annotations

import contextlib
import hashlib
import linecache
import os
import pathlib
import sys
import tempfile
import types
from typing import Any

from srcgrad.ir import GENERATED

__all__ = ["load_from_file", "cache_folders"]


def cache_folders() -> list[pathlib.Path]:
    """The folders to try, in order, for the module files."""
    named = os.environ.get("SRCGRAD_CACHE_DIR")
    if named:
        return [pathlib.Path(named).expanduser()]
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return [pathlib.Path(home) / "srcgrad" / "modules",
            pathlib.Path(tempfile.gettempdir()) / f"srcgrad-{uid}" / "modules"]


def _ours(folder: pathlib.Path) -> bool:
    """Whether ``folder`` may hold our modules: under the shared temporary directory, only
    if this user made it and the folders between (else it could hold planted code)."""
    shared, folder = pathlib.Path(tempfile.gettempdir()).resolve(), folder.resolve()
    below = [p for p in (folder, *folder.parents) if shared in p.parents]
    return not hasattr(os, "getuid") or all(p.stat().st_uid == os.getuid() for p in below)


def _write(folder: pathlib.Path, name: str, data: bytes) -> pathlib.Path:
    """``folder/name`` holding ``data``, written only when it does not already: through a
    temporary file and a link (or rename), so that concurrent processes never see a part of
    it, and the first complete file stays, with its modification time."""
    path = folder / name
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not _ours(folder):
        raise PermissionError(f"{folder} belongs to another user")
    with contextlib.suppress(OSError):
        if path.read_bytes() == data:
            return path
    fd, temp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".py")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        try:
            os.link(temp, path)                  # fails if another process got there first
        except FileExistsError:
            if path.read_bytes() != data:        # a damaged file: replace it
                os.replace(temp, path)
        except OSError:                          # no hard links here
            os.replace(temp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    return path


def module_file(text: str) -> pathlib.Path:
    """The file holding ``text``, written where it is not yet (see the module's docstring)."""
    data = text.encode()
    name = f"srcgrad_{hashlib.sha1(data).hexdigest()}.py"
    errors = []
    for folder in cache_folders():
        try:
            return _write(folder, name, data)
        except OSError as error:
            errors.append(f"{folder}: {error}")
    try:
        return _write(pathlib.Path(tempfile.mkdtemp(prefix="srcgrad-")), name, data)
    except OSError as error:
        errors.append(str(error))
        raise OSError("srcgrad cannot write the generated module to a file: "
                      + "; ".join(errors)) from None


def load_from_file(text: str, label: str, free: dict[str, Any]) -> dict:
    """Run the module ``text`` from its file (as :func:`srcgrad.codegen.module.load` runs it
    from a string): its namespace, with ``free`` bound; its lines registered with
    ``linecache`` (``label`` names the transform; the file's name is its content hash)."""
    path = str(module_file(text))
    name = f"{GENERATED}{hashlib.sha1(text.encode()).hexdigest()[:10]}"
    linecache.cache[path] = (len(text), None, text.splitlines(keepends=True), path)
    module = types.ModuleType(name)
    module.__file__ = path
    module.__dict__.update(free)
    # numba finds a function's module by its name, in this process and, for a kernel from its
    # cache, in the next one: the module must be importable by that name
    sys.modules[name] = module
    try:
        exec(compile(text, path, "exec"), module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module.__dict__
