"""``python -m srcgrad show`` runs none of the script's code, nor any file next to it.

Each payload would write a marker file if it ran: a default value (of the function, of a
helper, keyword-only, positional-only, inside a lambda), a decorator's arguments, an
annotation, a class body, a computed constant, a module next to the script.  Without
``--run-module`` the marker never appears (show prints the gradient, or says what needs the
module run); with it, the control shows the payload does run.  Files named like the libraries
srcgrad imports (numpy.py, numba.py, dask.py, ...) next to the script never run in their place.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from srcgrad.tools import cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAY = "open(MARKER, 'w')"

# (name, source of the module after `import numpy as np`, the target, None where show
# prints the gradient, else a piece of its refusal)
PAYLOADS = [
    ("default", f"def f(x, _={PAY}):\n    return np.sum(x ** 2)\n", "f",
     "the default value of '_' in f"),
    ("import-call default", "def f(x, _=__import__('os').system('touch ' + MARKER)):\n"
     "    return np.sum(x ** 2)\n", "f", "may run code when evaluated"),
    ("keyword-only default", f"def f(x, *, k={PAY}):\n    return np.sum(x)\n", "f",
     "the default value of 'k'"),
    ("positional-only default", f"def f(x, k={PAY}, /):\n    return np.sum(x)\n", "f",
     "the default value of 'k'"),
    ("helper's default", f"def h(v, k={PAY}):\n    return v * 2\n\n"
     "def f(x):\n    return np.sum(h(x))\n", "f", "the default value of 'k' in h"),
    ("lambda default", f"def f(x, g=lambda v, d={PAY}: v):\n    return np.sum(x)\n", "f",
     "the default value of 'g'"),
    ("call inside a tuple", f"def f(x, k=(1, {PAY})):\n    return np.sum(x)\n", "f",
     "the Call"),
    ("walrus default", f"def f(x, k=(y := {PAY})):\n    return np.sum(x)\n", "f",
     "the default value of 'k'"),
    ("f-string default", "def f(x, k=f'{SCALE}'):\n    return np.sum(x)\n", "f",
     "the default value of 'k'"),
    ("subscript default", "def f(x, k=TABLE[0]):\n    return np.sum(x)\n", "f",
     "the default value of 'k'"),
    ("huge power", "def f(x, k=10 ** 10 ** 10):\n    return np.sum(x)\n", "f",
     "may run code when evaluated"),
    ("comparison", "def f(x, k=SCALE == SCALE):\n    return np.sum(x)\n", "f",
     "the default value of 'k'"),
    ("decorated", f"import functools\n@functools.lru_cache({PAY})\ndef f(x):\n"
     "    return np.sum(x)\n", "f", "decorated"),
    ("decorated helper", f"import functools\n@functools.lru_cache({PAY})\ndef h(v):\n"
     "    return v\n\ndef f(x):\n    return np.sum(h(x))\n", "f", "is decorated"),
    ("srcgrad's decorator", f"import srcgrad\n@srcgrad.grad(wrt={PAY})\ndef f(x):\n"
     "    return np.sum(x ** 2)\n", "f", None),
    ("annotations", f"def f(x: {PAY}, y: {PAY} = 1.0) -> {PAY}:\n    return np.sum(x * y)\n",
     "f", None),
    ("annotated constant", f"K: {PAY} = 2.0\n\ndef f(x):\n    return np.sum(x * K)\n", "f",
     None),
    ("helper's annotations", f"def h(v: {PAY}) -> {PAY}:\n    return v * 3\n\n"
     "def f(x):\n    return np.sum(h(x))\n", "f", None),
    ("class body", f"class C:\n    {PAY}\n    k = 2.0\n\ndef f(x):\n    return np.sum(x * C.k)\n",
     "f", "'C' is computed by running code"),
    ("computed constant", f"K = {PAY} and 2.0\n\ndef f(x):\n    return np.sum(x * K)\n", "f",
     "'K' is computed by running code"),
    ("lambda helper", f"h = lambda v, d={PAY}: v\n\ndef f(x):\n    return np.sum(h(x))\n", "f",
     "'h' is computed by running code"),
    ("sibling module", "import payload_module\n\ndef f(x):\n"
     "    return np.sum(payload_module.g(x))\n", "f", "next to the script"),
    ("from a sibling module", "from payload_module import g\n\ndef f(x):\n"
     "    return np.sum(g(x))\n", "f", "next to the script"),
    ("nested default", f"def f(x):\n    def inner(v, d={PAY}):\n        return v\n"
     "    return np.sum(inner(x))\n", "f", "compiles literal default values"),
    ("arithmetic on a tuple", "def f(x, k=TABLE * 2):\n    return np.sum(x)\n", "f",
     "the default value of 'k'"),
    ("power of a name", "def f(x, k=SCALE ** 10 ** 10):\n    return np.sum(x)\n", "f",
     "the default value of 'k'"),
]
PRELUDE = "import numpy as np\n\nMARKER = {marker!r}\nSCALE = 2.0\nTABLE = (1.0, 2.0)\n\n"


def script(folder: pathlib.Path, body: str, name: str = "train.py") -> pathlib.Path:
    marker = folder / "marker"
    (folder / "payload_module.py").write_text(f"open({str(marker)!r}, 'w')\n"
                                              "def g(v):\n    return v\n")
    path = folder / name
    path.write_text(PRELUDE.format(marker=str(marker)) + body)
    return path


@pytest.mark.parametrize("name, body, target, refusal", PAYLOADS, ids=[p[0] for p in PAYLOADS])
def test_show_runs_no_payload(tmp_path, capsys, name, body, target, refusal):
    path = script(tmp_path, body)
    try:
        code, message = cli.main(["show", f"{path}:{target}"]), ""
    except SystemExit as exit:
        code, message = 2, str(exit.code)
    message += capsys.readouterr().out
    if refusal is None:
        assert code == 0 and f"def {target}_grad(x" in message, message
    else:
        assert code != 0 and refusal in message, message
        assert code == 1 or "--run-module" in message    # 1: the compiler's own refusal
    assert not (tmp_path / "marker").exists()


@pytest.mark.parametrize("name", ["default", "helper's default", "sibling module"])
def test_control_with_run_module_the_payload_runs(tmp_path, monkeypatch, name):
    monkeypatch.delitem(sys.modules, "payload_module", raising=False)   # imported afresh
    body = next(p[1] for p in PAYLOADS if p[0] == name)
    path = script(tmp_path, body, f"control_{name.replace(' ', '_').replace(chr(39), '')}.py")
    cli.main(["show", f"{path}:f", "--run-module"])
    assert (tmp_path / "marker").exists()


SAFE = """\
def h(v, k=SCALE, act=np.tanh):
    return act(v) * k

def ok(x, eps=1e-3, s=-1 / 255, k=(1, None, True, 'a', -2.5j), p=2 ** -10, y=SCALE, q=[1, 2],
       d={'a': (1.0,)}, e=SCALE * 2 ** SCALE, *, z=-SCALE, w=np.float64):
    return np.sum(h(x) * eps * s * p * y * z)
"""


def test_defaults_that_run_nothing_still_work(tmp_path, capsys):
    path = script(tmp_path, SAFE)
    assert cli.main(["show", f"{path}:ok"]) == 0
    out = capsys.readouterr().out
    assert "def ok_grad(x" in out and "np.tanh(x)" in out


def test_a_target_named_like_a_module_does_not_replace_it(tmp_path, capsys):
    import json
    path = tmp_path / "json.py"
    path.write_text("import numpy as np\n\ndef f(x):\n    return np.sum(x ** 2)\n")
    assert cli.main(["show", f"{path}:f", "--run-module"]) == 0
    assert sys.modules["json"] is json and "def f_grad(x)" in capsys.readouterr().out
    assert str(tmp_path) not in sys.path


LIBRARIES = ["numpy", "networkx", "numba", "llvmlite", "dask", "graphviz", "scipy"]
MODEL = "import numpy as np\n\n\ndef f(a, b):\n    return np.sum(a * np.exp(b))\n"


def siblings(folder: pathlib.Path, names: list[str]) -> pathlib.Path:
    """A model.py with files named like the libraries next to it, each writing the marker."""
    folder.mkdir(exist_ok=True)
    marker = folder / "marker"
    for name in names:
        (folder / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r} + ' ')\n")
    (folder / "model.py").write_text(MODEL)
    return marker


def show(folder: pathlib.Path, cwd: pathlib.Path, *extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    return subprocess.run([sys.executable, "-m", "srcgrad", "show", f"{folder / 'model.py'}:f",
                           "--wrt", "b", *extra], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


@pytest.mark.parametrize("extra", [(), ("--backend", "numba"), ("--backend", "dask"),
                                   ("--graph", "OUT.svg"), ("--graph", "OUT.png"),
                                   ("--run-module",), ("--run-module", "--backend", "dask")],
                         ids=["numpy", "numba", "dask", "svg", "png", "run-module",
                              "run-module-dask"])
def test_library_names_next_to_the_script_never_run(tmp_path, extra):
    folder = tmp_path / "project"
    marker = siblings(folder, LIBRARIES)
    extra = tuple(e.replace("OUT", str(tmp_path / "graph")) for e in extra)
    done = show(folder, tmp_path, *extra)
    assert not marker.exists(), marker.read_text()
    if "--graph" in extra and extra[-1].endswith(".png"):
        assert done.returncode == 0 or "srcgrad show: cannot write" in done.stderr, done.stderr
    elif "--graph" in extra:
        assert done.returncode == 0, done.stderr
        assert "d_b" in (tmp_path / "graph.svg").read_text()
    else:
        assert done.returncode == 0, done.stderr
        assert "def f_grad(a, b):" in done.stdout and "model.py:5" in done.stdout
        if "dask" in extra:
            assert "import dask.array as da" in done.stdout


def test_run_from_the_scripts_folder(tmp_path):
    """Run from there, Python itself puts the folder first on sys.path, and srcgrad's own
    imports (numpy, networkx) come from it before anything of srcgrad runs; the libraries
    srcgrad imports later never do."""
    folder = tmp_path / "project"
    marker = siblings(folder, ["numba", "llvmlite", "dask", "graphviz", "scipy"])
    for extra in [("--backend", "numba"), ("--backend", "dask"), ("--run-module",),
                  ("--graph", str(tmp_path / "g.png"))]:
        done = show(folder, folder, *extra)
        assert not marker.exists(), (extra, marker.read_text())
        assert done.returncode == 0 or "--graph" in extra, (extra, done.stderr)


def test_run_module_imports_its_own_modules_but_not_library_names(tmp_path):
    folder = tmp_path / "project"
    marker = siblings(folder, ["networkx", "graphviz"])
    (folder / "mine.py").write_text("SCALE = 3.0\n")
    (folder / "model.py").write_text(
        "import numpy as np\nimport networkx\nimport mine\ntry:\n    import graphviz\n"
        "except ImportError:\n    graphviz = None\n\n\ndef f(a, b):\n"
        "    return np.sum(a * np.exp(b)) * mine.SCALE\n")
    done = show(folder, tmp_path, "--run-module")
    assert done.returncode == 0, done.stderr
    assert not marker.exists() and "def f_grad(a, b):" in done.stdout
