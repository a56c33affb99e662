"""Generated modules run from real files, so that numba can cache their kernels on disk.

numba's ``cache=True`` keys a function's compiled code on its source file's path and
modification time; code compiled from a string has no file, and cannot be cached.  A module
is written once to a file named by the SHA-1 of its text, in ``SRCGRAD_CACHE_DIR`` (else
``$XDG_CACHE_HOME/srcgrad/modules``, else ``~/.cache/srcgrad/modules``, else a private folder
under the temporary directory).  A file already there with the same text is left as it is,
so its modification time, and numba's cache, hold from one process to the next.

numba unpickles the files it finds next to the module, so a folder someone else can write
would let them run code in this process.  A folder is used only when it is a real folder (not
a link), this user's, writable by no one else, and no folder above it can be changed by
another user (a sticky one, as ``/tmp``, excepted); folders made here are private (0700); the
module file and numba's files for it must be this user's and writable only by them.  Where no
folder qualifies, or none can be written (a full or read-only disk), the module runs from its
text, its kernels compiled in each process, and a :class:`KernelCacheWarning` says so once.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import linecache
import os
import pathlib
import re
import stat
import sys
import tempfile
import types
import warnings
from typing import Any

from srcgrad.ir import GENERATED

__all__ = ["KernelCacheWarning", "cache_folders", "load_from_file", "module_file"]

_UID = os.getuid() if hasattr(os, "getuid") else None
_WARNED: set[str] = set()
_CACHED = re.compile(r"^(\s*@njit\(cache=)True\b", re.MULTILINE)


class KernelCacheWarning(UserWarning):
    """numba's compiled kernels are not kept on disk, or not where they would be."""


class _Unsafe(Exception):
    """A cache folder or file another user could have written (the message says how)."""


def cache_folders() -> list[pathlib.Path]:
    """The folders to try, in order, for the module files."""
    named = os.environ.get("SRCGRAD_CACHE_DIR")
    if named:
        return [pathlib.Path(named).expanduser()]
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    uid = "user" if _UID is None else _UID
    return [pathlib.Path(home) / "srcgrad" / "modules",
            pathlib.Path(tempfile.gettempdir()) / f"srcgrad-{uid}" / "modules"]


def _check_path(folder: pathlib.Path) -> None:
    """Raise :class:`_Unsafe` where another user could replace ``folder`` or a folder above
    it: each one, links followed, must belong to this user or root, and be writable by no
    one else unless sticky.  Folders not made yet end the walk."""
    if _UID is None:
        return
    todo = list(pathlib.Path(os.path.abspath(folder)).parts)
    here, hops = pathlib.Path(todo.pop(0)), 0
    while True:
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            return
        if st.st_uid not in (0, _UID):
            raise _Unsafe(f"{here} belongs to another user (uid {st.st_uid})")
        if stat.S_ISLNK(st.st_mode):
            hops += 1
            if hops > 40:
                raise _Unsafe(f"{here}: too many symbolic links")
            resolved = pathlib.Path(os.path.realpath(here))
            todo = list(resolved.parts[1:]) + todo
            here = pathlib.Path(resolved.parts[0])
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise _Unsafe(f"{here} is not a folder")
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            raise _Unsafe(f"{here} is writable by other users (mode {st.st_mode & 0o777:o})")
        if not todo:
            return
        here = here / todo.pop(0)


def _check_own(path: pathlib.Path, folder: bool = True) -> None:
    """Raise :class:`_Unsafe` unless ``path`` is a real folder (or regular file), not a link,
    of this user, that no one else may write."""
    if _UID is None:
        return
    st = os.lstat(path)
    what = "folder" if folder else "file"
    if stat.S_ISLNK(st.st_mode):
        raise _Unsafe(f"{path} is a symbolic link, not a {what}")
    if not (stat.S_ISDIR if folder else stat.S_ISREG)(st.st_mode):
        raise _Unsafe(f"{path} is not a {what}")
    if st.st_uid != _UID:
        raise _Unsafe(f"{path} belongs to another user (uid {st.st_uid})")
    if st.st_mode & 0o022:
        raise _Unsafe(f"{path} is writable by other users (mode {st.st_mode & 0o777:o})")


def _private_folder(folder: pathlib.Path) -> pathlib.Path:
    """``folder`` checked (:func:`_check_path`), made where missing (private), checked again,
    with its ``__pycache__`` (where numba writes) made and checked; its ``__pycache__``."""
    _check_path(folder)
    missing, here = [], folder
    while not os.path.lexists(here) and here != here.parent:
        missing.append(here)
        here = here.parent
    for here in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(here, 0o700)
    _check_path(folder)
    _check_own(folder)
    pycache = folder / "__pycache__"
    with contextlib.suppress(FileExistsError):
        os.mkdir(pycache, 0o700)
    _check_own(pycache)
    if not os.access(folder, os.W_OK | os.X_OK) or not os.access(pycache, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, "not writable", str(folder))   # read-only, too
    return pycache


def _read(path: pathlib.Path) -> bytes | None:
    """The bytes of the module file ``path`` (checked: ours, a regular file), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError:                              # a link (O_NOFOLLOW): checked just below
        _check_own(path, folder=False)
        raise
    with os.fdopen(fd, "rb") as file:
        _check_own(path, folder=False)
        return file.read()


def _write(folder: pathlib.Path, name: str, data: bytes) -> pathlib.Path:
    """``folder/name`` holding ``data``, written only when it does not already: through a
    temporary file and a link (or rename), so that concurrent processes never see a part of
    it, and the first complete file stays, with its modification time.  Raises
    :class:`_Unsafe` where the folder, the file or numba's files for it are not safe."""
    pycache = _private_folder(folder)
    path = folder / name
    if _read(path) != data:
        fd, temp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".py")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            try:
                os.link(temp, path)              # fails if another process got there first
            except FileExistsError:
                if _read(path) != data:          # a damaged file: replace it
                    os.replace(temp, path)
            except OSError:                      # no hard links here
                os.replace(temp, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temp)
    _check_own(path, folder=False)
    for entry in os.listdir(pycache):            # numba's index and data for this module
        if entry.startswith(path.stem + "."):
            _check_own(pycache / entry, folder=False)
    return path


def _warn(message: str) -> None:
    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(message, KernelCacheWarning, stacklevel=4)


def module_file(text: str) -> pathlib.Path | None:
    """The file holding ``text``, written where it is not yet (see the module's docstring),
    or None where no folder is safe and writable (a warning says why, once)."""
    data = text.encode()
    name = f"srcgrad_{hashlib.sha1(data).hexdigest()}.py"
    unsafe, errors = [], []
    for folder in cache_folders():
        try:
            path = _write(folder, name, data)
        except _Unsafe as why:
            unsafe.append(f"{folder} ({why})")
        except OSError as error:
            errors.append(f"{folder} ({error.strerror or type(error).__name__})")
        else:
            if unsafe:
                _warn(f"srcgrad: numba's cache is not kept in {'; '.join(unsafe)}: files there "
                      f"could be another user's code; it is kept in {folder} instead")
            return path
    _warn("srcgrad: numba's compiled kernels are not cached on disk (each process compiles "
          "them again): " + "; ".join(unsafe + errors) + (
              ". Files in a folder another user can write could be their code; set "
              "SRCGRAD_CACHE_DIR to a folder only you can write" if unsafe else ""))
    return None


def _guard_saves(namespace: dict) -> None:
    """numba's kernels in ``namespace`` keep running when their cache cannot be written
    (a full disk): the error becomes a warning."""
    folder = pathlib.Path(namespace["__file__"]).parent
    for value in list(namespace.values()):
        cache = getattr(value, "_cache", None) if \
            type(value).__module__.startswith("numba") else None
        save = getattr(cache, "save_overload", None)
        if save is None or getattr(save, "srcgrad_guarded", False):
            continue

        def guarded(sig: Any, data: Any, save: Any = save) -> None:
            try:
                save(sig, data)
            except OSError as error:
                _warn(f"srcgrad: numba could not write its cache in {folder} "
                      f"({error.strerror or error}); its kernels compile again in the next "
                      "process")
        guarded.srcgrad_guarded = True           # type: ignore[attr-defined]
        cache.save_overload = guarded


def load_from_file(text: str, label: str, free: dict[str, Any]) -> dict:
    """Run the module ``text`` from its file (as :func:`srcgrad.codegen.module.load` runs it
    from a string): its namespace, with ``free`` bound; its lines registered with
    ``linecache`` (``label`` names the transform; the file's name is its content hash).
    Without a safe file, it runs from the text, its kernels not cached on disk."""
    digest = hashlib.sha1(text.encode()).hexdigest()
    file = module_file(text)
    if file is None:
        path = f"<srcgrad {label} {digest[:10]}>"
        text = _CACHED.sub(r"\1False", text)     # numba caches only what has a file
    else:
        path = str(file)
    name = f"{GENERATED}{digest[:10]}"
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
    _guard_saves(module.__dict__)
    return module.__dict__
