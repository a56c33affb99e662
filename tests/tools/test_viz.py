"""Pictures of both graphs (srcgrad.viz) and ``python -m srcgrad show --graph``: rendered for
real by srcgrad's own SVG renderer (CI has no Graphviz), parsed back as XML."""

from __future__ import annotations

import importlib.util
import pathlib
import re
import subprocess
import sys
import types
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import srcgrad
from srcgrad import nn
from srcgrad.tools import cli, viz
from srcgrad.tools.viz_layout import Arrow, Box, svg

ROOT = pathlib.Path(__file__).resolve().parents[2]
NASTY = 'we"ird <b>&amp; \\ name\nline2'
NODE = re.compile(r'^\t(\w+) \[(\w+=("([^"\\]|\\.)*"|[^ "\]]+) ?)+\]$')
EDGE = re.compile(r'^\t(\w+) -> (\w+) \[(\w+=("([^"\\]|\\.)*"|[^ "\]]+) ?)+\]$')


def texts(svg_text: str) -> list[str]:
    """The text of every <tspan> and <title>, as an SVG viewer shows it (well-formed XML)."""
    root = ET.fromstring(svg_text.encode("utf-8"))
    return ["".join(e.itertext()) for e in root.iter()
            if e.tag.rsplit("}", 1)[-1] in ("tspan", "title", "text") and e.text]


def assert_valid_dot(source: str) -> None:
    lines = source.splitlines()
    assert lines[0] == "digraph srcgrad {" and lines[-1] == "}"
    for line in lines[4:-1]:
        assert NODE.match(line) or EDGE.match(line), line


def mlp_loss(W1, b1, W2, x, y):
    h = np.tanh(x @ W1 + b1)
    return np.mean((h @ W2 - y) ** 2)


def eager_loss(names=("0.weight", "0.bias", "2.weight", "2.bias")):
    srcgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    x, y = srcgrad.randn(5, 3), srcgrad.randn(5, 1)
    loss = ((model(x) - y) ** 2).mean()
    params = dict(zip(names, (p for _, p in model.named_parameters())))
    return loss, params


def grad_fn_names(t) -> set[str]:
    """An independent walk of ``next_functions``: every node's type name."""
    out, stack, seen = set(), [t.grad_fn], set()
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        out.add(type(fn).__name__)
        stack += [u for u, _ in fn.next_functions]
    return out


def test_make_dot_draws_every_grad_fn_and_names_the_leaves():
    loss, params = eager_loss()
    picture = viz.make_dot(loss, params=params)
    shown = texts(picture.pipe("svg", encoding="utf-8", renderer="builtin"))
    assert grad_fn_names(loss) <= set(shown)
    assert {"AddmmBackward0", "TanhBackward0", "AccumulateGrad", "MeanBackward0"} <= set(shown)
    for name, p in params.items():
        assert name in shown and "(" + ", ".join(map(str, p.shape)) + ")" in shown
    n_fn = sum(b.kind == "fn" for b in picture.boxes)
    assert n_fn == len({id(f) for f in _all_fns(loss)})
    assert_valid_dot(picture.source)
    assert not any(b.kind == "saved" for b in picture.boxes)


def _all_fns(t):
    stack, seen = [t.grad_fn], {}
    while stack:
        fn = stack.pop()
        if fn is not None and id(fn) not in seen:
            seen[id(fn)] = fn
            stack += [u for u, _ in fn.next_functions]
    return seen.values()


def test_make_dot_shows_saved_tensors_when_asked():
    loss, params = eager_loss()
    picture = viz.make_dot(loss, params=params, show_saved=True)
    saved = [b for b in picture.boxes if b.kind == "saved"]
    assert saved and any(b.lines[0] == "result" for b in saved)      # tanh keeps its output
    assert any(a.kind == "saved" for a in picture.arrows)
    assert "dir=none" in picture.source
    ET.fromstring(picture.pipe(renderer="builtin"))


def test_a_saved_leaf_keeps_its_own_leaf_box():
    class Cube(srcgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * x * x * g
    a = srcgrad.randn(3, requires_grad=True)
    picture = viz.make_dot(Cube.apply(a).sum(), params={"a": a}, show_saved=True)
    assert [(b.kind, b.lines) for b in picture.boxes] == [
        ("output", ("output", "()")), ("fn", ("SumBackward0",)), ("fn", ("CubeBackward",)),
        ("saved", ("saved 0", "(3)")), ("fn", ("AccumulateGrad",)), ("leaf", ("a", "(3)"))]


def test_pictures_are_deterministic():
    first = viz.make_dot(*eager_loss(), show_saved=True)
    second = viz.make_dot(*eager_loss(), show_saved=True)
    assert first.source == second.source
    assert first.pipe(renderer="builtin") == second.pipe(renderer="builtin")
    a = viz.draw(srcgrad.grad(mlp_loss, wrt=(0, 1, 2)))
    b = viz.draw(srcgrad.grad(mlp_loss, wrt=(0, 1, 2)))
    assert a.source == b.source and a.pipe(renderer="builtin") == b.pipe(renderer="builtin")


def test_draw_shows_primal_and_adjoint_nodes_with_their_lines():
    g = srcgrad.grad(mlp_loss, wrt=(0, 1, 2))
    picture = viz.draw(g)
    text = picture.pipe("svg", encoding="utf-8", renderer="builtin")
    shown = texts(text)
    first = mlp_loss.__code__.co_firstlineno
    for node, data in g.graph.nodes(data=True):
        head = f"{node}  (parameter)" if data["kind"] == "param" else f"{node} = {data['op']}"
        assert head in shown
        assert any(s.startswith(f"test_viz.py:{data['line']}") for s in shown)
        if data["active"]:
            assert f"d_{node}" in shown
        else:
            assert f"d_{node}" not in shown
    assert f"test_viz.py:{first + 1}" in shown and f"adjoint · test_viz.py:{first + 2}" in shown
    kinds = {b.kind for b in picture.boxes}
    assert kinds == {"active", "inactive", "adjoint"}           # x and y are inactive
    assert 'style="rounded,filled,dashed"' in picture.source
    assert_valid_dot(picture.source)
    assert picture._repr_svg_() == text or picture._repr_svg_().startswith("<?xml")


def test_draw_takes_a_compiled_function_and_refuses_a_fallback():
    def f(w, x):
        return np.sum(np.tanh(x @ w))
    picture = viz.draw(srcgrad.compile(f))
    assert "tanh_x_at_w = tanh" in texts(picture.pipe(renderer="builtin", encoding="utf-8"))

    def g(x):
        try:                                   # not compiled: the transform falls back
            y = np.sum(x)
        except ValueError as error:
            y = len(str(error))
        return y
    with pytest.warns(srcgrad.FallbackWarning):
        t = srcgrad.grad(g)
    with pytest.raises(ValueError, match=r"no compiled graph to draw: it runs on the eager "
                                         r"engine \(srcgrad compiles `except \.\.\. as "
                                         r"error` where 'error' is read only by print"):
        viz.draw(t)


def test_user_text_never_breaks_the_dot_or_the_svg(tmp_path):
    loss, params = eager_loss(names=(NASTY, "<&>", '"', "a\x00b\udcff"))
    picture = viz.make_dot(loss, params=params)
    assert_valid_dot(picture.source)
    shown = texts(picture.pipe(encoding="utf-8", renderer="builtin"))
    assert 'we"ird <b>&amp; \\ name\\nline2' in shown               # shown, not obeyed
    assert "<&>" in shown and '"' in shown and "a\\x00b\\udcff" in shown
    assert "&amp;amp;" in picture.source and '\\"' in picture.source and "\n\t" in picture.source
    # a file name with the same characters, through the compiled graph
    file = tmp_path / 'm"o<d>&e\nl.py'
    file.write_text("import numpy as np\n\ndef f(x):\n    return np.sum(np.sin(x))\n")
    spec = importlib.util.spec_from_file_location("weird_module", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    drawn = viz.draw(srcgrad.grad(module.f))
    assert_valid_dot(drawn.source)
    shown = texts(drawn.pipe(encoding="utf-8", renderer="builtin"))
    assert 'm"o<d>&e\\nl.py:4' in shown


def test_png_without_graphviz_names_what_to_install(monkeypatch):
    monkeypatch.setattr(viz.shutil, "which", lambda name: None)
    picture = viz.draw(srcgrad.grad(mlp_loss))
    with pytest.raises(viz.MissingRenderer, match=r"\[viz\].*Graphviz's dot"):
        picture.pipe("png")
    with pytest.raises(viz.MissingRenderer, match="graphviz package"):
        picture.pipe("svg", renderer="graphviz")
    assert picture.pipe("svg") == picture.pipe("svg", renderer="builtin")    # auto: builtin
    assert picture.pipe("dot") == picture.source.encode()
    with pytest.raises(ValueError, match="unknown renderer"):
        picture.pipe(renderer="cairo")


def test_graphviz_is_used_when_the_package_and_dot_are_there(monkeypatch):
    calls = []

    class Source:
        def __init__(self, text):
            self.text = text

        def pipe(self, format):
            calls.append((self.text, format))
            return b"PNG" if format == "png" else b"<svg/>"
    monkeypatch.setitem(sys.modules, "graphviz", types.SimpleNamespace(Source=Source))
    monkeypatch.setattr(viz.shutil, "which", lambda name: "/usr/bin/dot")
    picture = viz.make_dot(*eager_loss())
    assert picture.pipe("png") == b"PNG" and calls == [(picture.source, "png")]
    assert picture._repr_svg_() == "<svg/>"
    assert picture.pipe(renderer="builtin").startswith(b"<?xml")


def test_the_layout_survives_cycles_and_long_edges():
    boxes = [Box(f"n{k}", (f"node {k}",), "fn") for k in range(5)]
    arrows = [Arrow("n0", "n1"), Arrow("n1", "n2"), Arrow("n2", "n0"), Arrow("n0", "n4"),
              Arrow("n3", "n4"), Arrow("n0", "n3", "saved")]
    text = svg("a title", boxes, arrows, "a legend")
    assert {f"node {k}" for k in range(5)} <= set(texts(text))
    assert text == svg("a title", boxes, arrows, "a legend")


def test_the_example_draws_both_graphs_and_its_files_are_current(tmp_path):
    sys.path.insert(0, str(ROOT / "examples"))
    import mlp_graphs
    written = [pathlib.Path(p) for p in mlp_graphs.pictures(tmp_path)]
    assert [p.name for p in written] == ["mlp_eager_graph.svg", "mlp_compiled_graph.svg"]
    for path in written:
        ET.fromstring(path.read_bytes())
        committed = ROOT / "examples" / path.name
        assert committed.read_bytes() == path.read_bytes(), \
            f"{committed} is stale: run python examples/mlp_graphs.py"
    assert "AddmmBackward0" in texts(written[0].read_text())
    assert "d_W1" in texts(written[1].read_text())


SCRIPT = '''\
import pathlib

import numpy as np

import srcgrad

SCALE = 0.5
pathlib.Path(__file__).with_name("ran.txt").write_text("the top level ran")
raise RuntimeError("the top level ran")


@srcgrad.grad
def loss(w, x, y=SCALE):
    return helper(np.tanh(x @ w), y)


def helper(h, y):
    return np.sum((h - y) ** 2) * SCALE


weights = np.ones(3) * 2


def reads_a_computed_global(x):
    return np.sum(weights * x)
'''


def test_show_finds_a_function_without_running_the_script(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    assert cli.main(["show", f"{script}:loss"]) == 0
    assert "def loss_grad(w, x, y" in capsys.readouterr().out
    out = tmp_path / "graph.svg"
    assert cli.main(["show", f"{script}:loss", "--graph", str(out)]) == 0
    shown = texts(out.read_text())
    assert "w  (parameter)" in shown and "d_w" in shown and "train.py:13" in shown
    assert not (tmp_path / "ran.txt").exists()


def test_show_says_when_the_module_must_run(tmp_path):
    script = tmp_path / "train2.py"
    script.write_text(SCRIPT)
    with pytest.raises(SystemExit) as info:
        cli.main(["show", f"{script}:reads_a_computed_global"])
    message = str(info.value.code)
    assert "'weights' is computed by running code (train2.py:21)" in message
    assert "--run-module" in message
    assert not (tmp_path / "ran.txt").exists()
    with pytest.raises(SystemExit, match="RuntimeError: the top level ran"):
        cli.main(["show", f"{script}:reads_a_computed_global", "--run-module"])
    assert (tmp_path / "ran.txt").exists()


@pytest.mark.parametrize("body, reason", [
    ("import numpy as np\nK = 1\nK = 2\ndef f(x):\n    return np.sum(x) * K\n",
     "bound more than once"),
    ("import numpy as np\nif True:\n    K = 1\ndef f(x):\n    return np.sum(x) * K\n",
     "inside a block"),
    ("from numpy import *\ndef f(x):\n    return sum(x)\n", "'*' import"),
    ("import numpy as np\nimport functools\n@functools.lru_cache\ndef f(x):\n"
     "    return np.sum(x)\n", "decorated"),
    ("import numpy as np\nK = [1.0]\ndef f(x):\n    return np.sum(x) * K[0]\n",
     "computed by running code"),
    ("import numpy as np\nK = 1.0\ndef f(x):\n    return np.sum(x) * K\ndef g():\n"
     "    global K\n    K = 2.0\n", "declared global"),
    ("import numpy as np\nclass A:\n    def f(self, x):\n        return np.sum(x)\n",
     "not a module-level function"),
])
def test_show_refuses_what_only_running_the_module_can_resolve(tmp_path, body, reason):
    script = tmp_path / "case.py"
    script.write_text(body)
    target = "A.f" if "class A" in body else "f"
    with pytest.raises(SystemExit, match=re.escape(reason)):
        cli.main(["show", f"{script}:{target}"])


def test_python_m_srcgrad_show_graph(tmp_path):
    script = tmp_path / "model.py"
    script.write_text("import numpy as np\n\nraise SystemExit('ran')\n\n"
                      "def f(a, b):\n    return np.sum(a * np.exp(b))\n")
    out = tmp_path / "f.svg"
    run = subprocess.run([sys.executable, "-m", "srcgrad", "show", f"{script}:f", "--wrt", "b",
                          "--graph", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "d_b" in texts(out.read_text()) and "model.py:6" in texts(out.read_text())
    png = subprocess.run([sys.executable, "-m", "srcgrad", "show", f"{script}:f", "--graph",
                          str(tmp_path / "f.png")], capture_output=True, text=True)
    if viz._graphviz() is None:
        assert png.returncode != 0 and "[viz]" in png.stderr
