"""numba's on-disk cache of generated modules is used only where no one else can write it.

numba unpickles the index files next to a module it caches: a folder another user could
write would run their code.  Each case plants, in a folder that is unsafe one way or another,
a module file of the right name and numba's index for it, both of which would write a marker
file if they ever ran; the marker must never appear, the kernel must still give the right
numbers, and a warning must say once why the cache is not used.  A control shows that the
planted index is read where the folder is safe (so the other cases could fail)."""

from __future__ import annotations

import hashlib
import os
import pathlib
import pickle
import subprocess
import tempfile
import warnings

import numpy as np
import pytest

from srcgrad.codegen.backends.numba.kernel_files import (
    KernelCacheWarning,
    load_from_file,
    module_file,
)

pytest.importorskip("numba")

OTHER = 12345                                   # another user's uid (the tests run as root)
TEXT = '''"""A generated module (a stand-in)."""
try:
    from numba import njit
except ImportError:
    def njit(*args, **options):
        return lambda function: function


@njit(cache=True, error_model='numpy')
def affine_k(x):
    return x * 2.0 + 1.0
'''
NAME = f"srcgrad_{hashlib.sha1(TEXT.encode()).hexdigest()}.py"
X = np.array([0.5, -1.0, 3.0])

pytestmark = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0,
                                reason="simulating another user needs root (os.chown)")


class Payload:
    """Unpickled, it creates the marker file."""

    def __init__(self, marker: pathlib.Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return open, (str(self.marker), "w")


@pytest.fixture(scope="module")
def index_names(tmp_path_factory):
    """The names of numba's files for TEXT's kernel (found by caching it once)."""
    folder = tmp_path_factory.mktemp("clean")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SRCGRAD_CACHE_DIR", str(folder))
        load_from_file(TEXT, "clean", {})["affine_k"](X)
    names = sorted(p.name for p in (folder / "__pycache__").iterdir() if p.suffix == ".nbi")
    assert names and all(n.startswith(NAME[:-3] + ".") for n in names)
    return names


def plant(folder: pathlib.Path, marker: pathlib.Path, index_names: list[str]) -> None:
    """A module file that writes ``marker`` when run, and numba's index, that writes it when
    unpickled."""
    (folder / "__pycache__").mkdir(parents=True, exist_ok=True)
    (folder / NAME).write_text(f"open({str(marker)!r}, 'w')\n" + TEXT)
    for name in index_names:
        (folder / "__pycache__" / name).write_bytes(pickle.dumps(Payload(marker)))


def chown(path: pathlib.Path, uid: int = OTHER) -> None:
    for p in [path, *path.rglob("*")]:
        os.lchown(p, uid, uid)


def run(expect: str | None, marker: pathlib.Path | None = None, times: int = 2) -> list[str]:
    """Load TEXT and call its kernel ``times`` times; the warnings' messages (one at most,
    containing ``expect``; none where ``expect`` is None).  ``marker``: a planted file's,
    which must not have been written."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(times):
            np.testing.assert_array_equal(load_from_file(TEXT, "t", {})["affine_k"](X),
                                          X * 2.0 + 1.0)
    assert marker is None or not marker.exists(), "planted code ran"
    messages = [str(w.message) for w in caught if w.category is KernelCacheWarning]
    if expect is None:
        assert messages == []
    else:
        assert len(messages) == 1 and expect in messages[0], messages
    return messages


@pytest.fixture
def env(tmp_path, monkeypatch):
    """No cache variables set; a private temporary directory for the last fallback."""
    for name in ("SRCGRAD_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    shared = tmp_path / "shared-tmp"
    shared.mkdir(mode=0o700)
    os.chmod(shared, 0o1777)                      # like /tmp
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    return tmp_path


def test_control_the_planted_index_is_read_from_a_safe_folder(env, monkeypatch, index_names):
    folder, marker = env / "safe", env / "marker"
    plant(folder, marker, index_names)
    (folder / NAME).write_text(TEXT)
    os.chmod(folder, 0o700)
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(folder))
    run(None, times=1)
    assert marker.exists()                         # what the other tests must never see


def cache_path(variable: str, base: pathlib.Path) -> pathlib.Path:
    """The cache folder that ``variable`` names (set here)."""
    if variable == "SRCGRAD_CACHE_DIR":
        return base / "named"
    if variable == "XDG_CACHE_HOME":
        return base / "xdg" / "srcgrad" / "modules"
    return base / "home" / ".cache" / "srcgrad" / "modules"


def make_unsafe(case: str, folder: pathlib.Path, elsewhere: pathlib.Path) -> str:
    """Plant an unsafe ``folder`` (``case`` says how); the reason the warning gives."""
    if case in ("symlink", "other-user's-link"):
        folder.symlink_to(elsewhere)
        if case == "symlink":
            return "is a symbolic link"
        os.lchown(folder, OTHER, OTHER)
        return f"{folder} belongs to another user (uid {OTHER})"
    os.replace(elsewhere, folder)
    if case == "other-owner":
        chown(folder)
        return f"{folder} belongs to another user (uid {OTHER})"
    os.chmod(folder, 0o770 if case == "group-writable" else 0o777)
    return "writable by other users"


CASES = ["symlink", "other-owner", "group-writable", "world-writable", "other-user's-link"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("variable", ["SRCGRAD_CACHE_DIR", "XDG_CACHE_HOME", "HOME"])
def test_an_unsafe_folder_is_never_used(env, monkeypatch, index_names, case, variable):
    marker, planted = env / "marker", env / "planted"
    plant(planted, marker, index_names)
    os.chmod(planted, 0o700)
    folder = cache_path(variable, env)
    folder.parent.mkdir(parents=True, exist_ok=True)
    reason = make_unsafe(case, folder, planted)
    if variable == "XDG_CACHE_HOME":             # HOME: the env fixture set it
        monkeypatch.setenv(variable, str(env / "xdg"))
    elif variable == "SRCGRAD_CACHE_DIR":
        monkeypatch.setenv(variable, str(folder))
    fallback = pathlib.Path(tempfile.gettempdir()) / f"srcgrad-{os.getuid()}" / "modules"
    if variable == "SRCGRAD_CACHE_DIR":          # the folder named is the only one
        expect = f"not cached on disk (each process compiles them again): {folder} ("
    else:
        expect = f"not kept in {folder} ("
    message = run(expect, marker)[0]
    assert reason in message
    assert (fallback / NAME).exists() == (variable != "SRCGRAD_CACHE_DIR")
    if variable != "SRCGRAD_CACHE_DIR":
        assert f"it is kept in {fallback} instead" in message


@pytest.mark.parametrize("parent_mode, parent_uid, reason", [
    (0o777, 0, "writable by other users"),            # anyone may rename the folder
    (0o1777, OTHER, "another user"),                   # its owner may, sticky or not
])
def test_a_folder_whose_parent_others_can_change_is_never_used(env, monkeypatch, index_names,
                                                               parent_mode, parent_uid,
                                                               reason):
    marker, parent = env / "marker", env / "parent"
    real = parent / "cache"
    plant(real, marker, index_names)
    os.chmod(real, 0o700)
    os.chmod(parent, parent_mode)
    os.chown(parent, parent_uid, parent_uid)
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(real))
    assert reason in run(f"{parent} ", marker)[0]


PLANTS = {                 # a file or folder in our private folder that someone else planted
    "module-other-owner": (lambda f, n: os.chown(f / NAME, OTHER, OTHER), "another user"),
    "module-writable": (lambda f, n: os.chmod(f / NAME, 0o666), "writable by other users"),
    "module-symlink": (lambda f, n: (f / NAME).unlink() or (f / NAME).symlink_to(f / "x.py"),
                       "symbolic link"),
    "pycache-other-owner": (lambda f, n: chown(f / "__pycache__"), "another user"),
    "pycache-writable": (lambda f, n: os.chmod(f / "__pycache__", 0o777), "writable"),
    "index-other-owner": (lambda f, n: chown(f / "__pycache__" / n[0]), "another user"),
    "index-writable": (lambda f, n: os.chmod(f / "__pycache__" / n[0], 0o646), "writable"),
    "index-symlink": (lambda f, n: os.replace(f / "__pycache__" / n[0], f / "i") or (
        f / "__pycache__" / n[0]).symlink_to(f / "i"), "symbolic link"),
}


@pytest.mark.parametrize("plant_kind", list(PLANTS))
def test_a_planted_file_in_a_private_folder_is_never_read(env, monkeypatch, index_names,
                                                          plant_kind):
    marker, folder = env / "marker", env / "private"
    plant(folder, marker, index_names)
    (folder / "x.py").write_text(f"open({str(marker)!r}, 'w')\n")
    (folder / NAME).write_text(TEXT)              # the right text: only its owner is wrong
    for p in (folder, folder / "__pycache__"):
        os.chmod(p, 0o700)
    spoil, reason = PLANTS[plant_kind]
    spoil(folder, index_names)
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(folder))
    assert reason in run("not cached on disk", marker)[0]


def test_the_tmp_fallback_planted_by_another_user(env, monkeypatch, index_names):
    """The home cache cannot be made; $TMPDIR/srcgrad-<uid> is another user's link to their
    folder outside $TMPDIR (which resolving links and checking the resolved folders let
    through)."""
    marker, theirs = env / "marker", env / "theirs"
    plant(theirs / "modules", marker, index_names)
    chown(theirs)
    os.chmod(theirs, 0o755)
    (env / "home").write_text("not a folder")
    link = pathlib.Path(tempfile.gettempdir()) / "srcgrad-0"
    link.symlink_to(theirs)
    os.lchown(link, OTHER, OTHER)
    message = run("not cached on disk", marker)[0]
    assert f"{link} belongs to another user" in message


def test_folders_made_are_private_and_reused(env, monkeypatch):
    folder = env / "a" / "b" / "c"
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(folder))
    run(None)
    for p in (env / "a", env / "a" / "b", folder, folder / "__pycache__"):
        assert p.stat().st_mode & 0o777 == 0o700, p
    assert (folder / NAME).stat().st_mode & 0o077 == 0
    assert module_file(TEXT) == folder / NAME
    index = [p for p in (folder / "__pycache__").iterdir() if p.suffix == ".nbi"]
    assert index and all(p.stat().st_uid == os.getuid() for p in index)


@pytest.fixture
def tmpfs(tmp_path):
    """A small file system of its own (mounted; skipped where mounting is not allowed)."""
    point = tmp_path / "mnt"
    point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs",
                           str(point)], capture_output=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


def fill(point: pathlib.Path) -> None:
    with open(point / "filler", "wb", buffering=0) as file, pytest.raises(OSError):
        while True:
            file.write(b"\0" * 4096)


def test_a_read_only_folder_means_no_cache(tmpfs, monkeypatch):
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(tmpfs / "cache"))
    run(None, times=1)                            # a complete cache, written first
    assert subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)]).returncode == 0
    assert "not writable" in run(f"not cached on disk (each process compiles them again): "
                                 f"{tmpfs / 'cache'}")[0]
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(tmpfs / "never-made"))
    run("Read-only file system")


def test_a_full_disk_means_no_cache(tmpfs, monkeypatch):
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(tmpfs / "cache"))
    fill(tmpfs)
    run("No space left on device")
    (tmpfs / "filler").unlink()


def test_a_disk_that_fills_before_numba_saves(tmpfs, monkeypatch):
    """The module is written; numba's cache of the kernel is not: the kernel still runs."""
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(tmpfs / "cache"))
    kernel = load_from_file(TEXT, "t", {})["affine_k"]
    fill(tmpfs)
    with pytest.warns(KernelCacheWarning, match="could not write its cache"):
        np.testing.assert_array_equal(kernel(X), X * 2.0 + 1.0)


def logsumexp(x):
    y = np.sin(x) * 2.0 + x ** 2
    return np.sum(np.log(np.sum(np.exp(y - np.max(y, axis=1, keepdims=True)), axis=1)))


def test_the_gradient_is_right_without_the_cache(env, monkeypatch):
    import srcgrad
    real = env / "planted"
    real.mkdir()
    os.chmod(real, 0o777)
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(real))
    x = np.random.default_rng(3).normal(size=(6, 5))
    fused = srcgrad.grad(logsumexp, backend="numba")
    with pytest.warns(KernelCacheWarning, match="writable by other users"):
        fused(x)
        got = fused(x)
    np.testing.assert_allclose(got, srcgrad.grad(logsumexp)(x), rtol=1e-12)
    source = list(fused.sources.values())[-1]
    assert "@njit(cache=True" in source and not list(real.iterdir())
