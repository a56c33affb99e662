"""Pictures of both graphs.

:func:`make_dot` draws the eager backward graph as torchviz does: one box per ``grad_fn`` (its
type name), the leaves with their parameter names and shapes, the output, and optionally the
tensors each node saved.  :func:`draw` draws a compiled function's ``.graph``: its primal
values and their adjoints, active or not, each with its source line.

Both return a :class:`Picture`: Graphviz DOT text (``.source``), SVG for Jupyter, ``pipe`` and
``render``.  With the ``graphviz`` package (``pip install srcgrad[viz]``) and Graphviz's ``dot``
program, Graphviz lays the picture out and every format works; without them srcgrad's own
layered layout (:mod:`srcgrad.tools.viz_layout`) renders SVG.
"""

from __future__ import annotations

import os
import pathlib
import shutil
from typing import Any

from srcgrad.tools.viz_layout import ARROWS, STYLES, Arrow, Box, svg, visible

__all__ = ["Picture", "MissingRenderer", "make_dot", "draw"]

_NEEDS = ("install the [viz] extra (pip install 'srcgrad[viz]') and Graphviz's dot program "
          "(https://graphviz.org/download/)")


class MissingRenderer(RuntimeError):
    """A format srcgrad cannot render without Graphviz (it says what to install)."""


def _graphviz() -> Any:
    """The ``graphviz`` package when it and the ``dot`` program are both there, else None."""
    try:
        import graphviz
    except ImportError:
        return None
    return graphviz if shutil.which("dot") else None


def _quote(text: object) -> str:
    """A DOT double-quoted string showing ``text`` as it is (escapes, entities, controls)."""
    text = visible(text).replace("\\", "\\\\").replace('"', '\\"').replace("&", "&amp;")
    return f'"{text}"'


def _label(lines: tuple[str, ...]) -> str:
    return "\\n".join(_quote(line)[1:-1] for line in lines).join('""')


class Picture:
    """A graph to look at: ``.source`` (DOT), ``pipe(format)``, ``render(path)``, and inline
    SVG in Jupyter."""

    def __init__(self, title: str, boxes: list[Box], arrows: list[Arrow],
                 legend: str = "") -> None:
        self.title, self.legend = title, legend
        self.boxes, self.arrows = list(boxes), list(arrows)

    def __repr__(self) -> str:
        return f"<srcgrad.tools.viz.Picture {self.title!r}: {len(self.boxes)} nodes>"

    @property
    def source(self) -> str:
        """The picture in Graphviz's DOT language (deterministic)."""
        heading = (self.title, self.legend) if self.legend else (self.title,)
        out = ["digraph srcgrad {",
               f"\tgraph [label={_label(heading)} labelloc=t fontname=monospace]",
               "\tnode [shape=box style=\"rounded,filled\" fontname=monospace fontsize=11]",
               "\tedge [fontname=monospace]"]
        for b in self.boxes:
            style = STYLES[b.kind]
            attrs = [f"label={_label(b.lines)}", f'fillcolor="{style["fill"]}"',
                     f'color="{style["stroke"]}"', f'fontcolor="{style["text"]}"']
            if style["dash"]:
                attrs.append('style="rounded,filled,dashed"')
            if b.double:
                attrs.append("peripheries=2")
            if b.tooltip:
                attrs.append(f"tooltip={_quote(b.tooltip)}")
            out.append(f"\t{b.id} [{' '.join(attrs)}]")
        for a in self.arrows:
            style = ARROWS[a.kind]
            attrs = [f'color="{style["stroke"]}"']
            if style["dash"]:
                attrs.append("style=dashed")
            if not style["head"]:
                attrs.append("dir=none")
            out.append(f"\t{a.tail} -> {a.head} [{' '.join(attrs)}]")
        return "\n".join(out + ["}"]) + "\n"

    def pipe(self, format: str = "svg", encoding: str | None = None,
             renderer: str = "auto") -> bytes | str:
        """The rendered picture (bytes, or text in ``encoding``).  ``renderer``: ``"auto"``
        (Graphviz when installed, else srcgrad's own, SVG only), ``"graphviz"`` or
        ``"builtin"``."""
        if renderer not in ("auto", "graphviz", "builtin"):
            raise ValueError(f"unknown renderer {renderer!r}: 'auto', 'graphviz' or 'builtin'")
        graphviz = None if renderer == "builtin" else _graphviz()
        if graphviz is not None:
            data = graphviz.Source(self.source).pipe(format=format)
        elif renderer == "graphviz":
            raise MissingRenderer(f"rendering with Graphviz needs the graphviz package and the "
                                  f"dot program: {_NEEDS}")
        elif format == "svg":
            data = svg(self.title, self.boxes, self.arrows, self.legend).encode("utf-8")
        elif format in ("dot", "gv"):
            data = self.source.encode("utf-8")
        else:
            raise MissingRenderer(f"srcgrad renders only SVG (and DOT) by itself; for "
                                  f"{format!r}, {_NEEDS}")
        return data if encoding is None else data.decode(encoding)

    def render(self, path: str | os.PathLike, format: str | None = None,
               renderer: str = "auto") -> str:
        """Write the picture to ``path`` (format from its suffix unless given); return the path."""
        path = pathlib.Path(path)
        fmt = format or path.suffix.lstrip(".").lower() or "svg"
        path.write_bytes(self.pipe(fmt, renderer=renderer))
        return str(path)

    def _repr_svg_(self) -> str:
        return self.pipe("svg", encoding="utf-8")

    def to_graphviz(self) -> Any:
        """The picture as a ``graphviz.Source`` (needs the ``[viz]`` extra)."""
        try:
            import graphviz
        except ImportError:
            raise MissingRenderer(f"to_graphviz needs the graphviz package: {_NEEDS}") from None
        return graphviz.Source(self.source)


# --------------------------------------------------------------------------- the eager graph
def _shape(t: Any) -> str:
    return "(" + ", ".join(str(int(n)) for n in tuple(getattr(t, "shape", ()))) + ")"


def _saved(fn: Any) -> list[tuple[str, Any]]:
    """What a node keeps for its backward: ``(label, tensor or array)`` pairs."""
    from srcgrad.runtime.eager.node import TensorBase
    out = []
    inputs = getattr(fn, "inputs", None)
    if isinstance(inputs, list):
        out += [(f"input {k}", x) for k, x in enumerate(inputs) if isinstance(x, TensorBase)]
    prim, needs = getattr(fn, "prim", None), getattr(fn, "needs", None)
    ans = getattr(fn, "ans", None) if prim is not None and needs is not None else None
    if ans is not None and hasattr(ans, "shape") and prim.saves(needs)[0] == "data":
        out.append(("result", ans))
    ctx = getattr(fn, "ctx", None)
    kept = getattr(ctx, "_saved", None) if ctx is not None else None
    if isinstance(kept, tuple):
        out += [(f"saved {k}", x) for k, x in enumerate(kept) if hasattr(x, "shape")]
    return out


def make_dot(var: Any, params: dict[str, Any] | None = None,
             show_saved: bool = False) -> Picture:
    """The eager backward graph behind ``var`` (a Tensor, or a tuple of them), as torchviz's
    ``make_dot`` draws it; ``params`` (``dict(model.named_parameters())``) names the leaves."""
    names = {id(t): str(k) for k, t in (params or {}).items()}
    boxes: list[Box] = []
    arrows: list[Arrow] = []
    ids: dict[tuple[str, int], str] = {}
    keep: list[Any] = []              # every object given an id stays alive while we draw

    def ident(obj: Any, role: str = "") -> tuple[str, bool]:
        key = (role, id(obj))         # a saved leaf gets its own box, apart from the leaf's
        known = key in ids
        if not known:
            ids[key] = f"n{len(ids)}"
            keep.append(obj)
        return ids[key], known

    def tensor_lines(t: Any) -> tuple[str, ...]:
        name = names.get(id(t))
        return (name, _shape(t)) if name else (_shape(t),)

    outputs = var if isinstance(var, (tuple, list)) else (var,)
    stack: list[Any] = []
    for k, out in enumerate(outputs):
        node, _ = ident(out)
        label = names.get(id(out)) or (f"output {k}" if len(outputs) > 1 else "output")
        boxes.append(Box(node, (label, _shape(out)), "output"))
        fn = getattr(out, "grad_fn", None)
        if fn is not None:
            arrows.append(Arrow(ident(fn)[0], node))
            stack.append(fn)
    stack.reverse()
    done: set[int] = set()
    while stack:
        fn = stack.pop()
        if id(fn) in done:
            continue
        done.add(id(fn))
        node, _ = ident(fn)
        boxes.append(Box(node, (type(fn).__name__,), "fn", tooltip=fn.name()))
        if show_saved:
            for label, t in _saved(fn):
                sid, seen = ident(t, "saved")
                if not seen:
                    boxes.append(Box(sid, (label, _shape(t)), "saved"))
                arrows.append(Arrow(node, sid, "saved"))
        leaf = getattr(fn, "variable", None)
        if leaf is not None:
            vid, seen = ident(leaf)
            if not seen:
                boxes.append(Box(vid, tensor_lines(leaf), "leaf"))
            arrows.append(Arrow(vid, node))
        nexts = [u for u, _ in getattr(fn, "next_functions", ()) if u is not None]
        for u in nexts:
            arrows.append(Arrow(ident(u)[0], node))
        stack.extend(reversed(nexts))
    title = "backward graph of " + (f"an output of shape {_shape(outputs[0])}" if len(
        outputs) == 1 else "outputs of shapes " + ", ".join(_shape(o) for o in outputs))
    legend = "grey: grad_fn nodes; blue: leaves; green: the output" + (
        "; orange: saved tensors" if show_saved else "")
    return Picture(title, boxes, _unique(arrows), legend)


def _unique(arrows: list[Arrow]) -> list[Arrow]:
    return list(dict.fromkeys(arrows))


# ------------------------------------------------------------------------ the compiled graph
def _where(obj: Any) -> str:
    """The base name of the file that defines a transform's function, or ``""``."""
    fn = getattr(obj, "_target", None) or getattr(obj, "__wrapped__", None)
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    return os.path.basename(code.co_filename) if code is not None else ""


def draw(transform: Any) -> Picture:
    """A compiled function's ``.graph``: primal values (active ones shaded, inactive ones
    dashed, saved ones with a double border) and the adjoints of the active ones, in red, each
    labelled with its source line.  ``transform`` is a ``srcgrad.grad``/``value_and_grad``/
    ``vjp`` transform, a ``srcgrad.compile`` function, or a ``.graph`` itself."""
    import networkx as nx
    owner = getattr(transform, "transform", transform)
    g = transform if isinstance(transform, nx.DiGraph) else getattr(owner, "graph", None)
    if g is None:
        reason = getattr(owner, "fallback_reason", None)
        raise ValueError(f"{transform!r} has no compiled graph to draw" + (
            f": it runs on the eager engine ({reason.splitlines()[0]})" if reason else ""))
    where = _where(owner) or str(g.graph.get("filename", ""))

    def at(line: int) -> str:
        return f"{where}:{line}" if where else f"line {line}"

    ids = {n: f"p{k}" for k, n in enumerate(g.nodes)}
    boxes: list[Box] = []
    arrows: list[Arrow] = []
    for n, d in g.nodes(data=True):
        head = f"{n}  (parameter)" if d["kind"] == "param" else f"{n} = {d['op']}"
        tail = at(d["line"]) + ("  saved" if d.get("saved") else "")
        state = "active" if d.get("active") else "inactive"
        boxes.append(Box(ids[n], (head, tail), state, f"{state} {head} at {at(d['line'])}",
                         bool(d.get("saved"))))
    for u, v, d in g.edges(data=True):
        arrows.append(Arrow(ids[u], ids[v], "flow" if d.get("differentiable") else "static"))
    active = [n for n, on in g.nodes(data="active") if on]
    adj = {n: f"a{k}" for k, n in enumerate(active)}
    for n in active:
        d = g.nodes[n]
        boxes.append(Box(adj[n], (f"d_{n}", f"adjoint · {at(d['line'])}"), "adjoint",
                         f"adjoint of {n} at {at(d['line'])}"))
    for n in active:
        feeds = [u for u in g.predecessors(n)
                 if u in adj and g.edges[u, n].get("differentiable")]
        arrows += [Arrow(adj[n], adj[u], "adjoint") for u in feeds]
        if not any(v in adj and g.edges[n, v].get("differentiable") for v in g.successors(n)):
            arrows.append(Arrow(ids[n], adj[n], "seed"))
    kind = getattr(owner, "kind", "graph")
    name = g.graph.get("name", "?")
    title = f"{kind} of {name}" + (f" ({where})" if where else "")
    legend = ("blue: active (carries a gradient); dashed: inactive; double border: saved for "
              "the adjoint; red: adjoints")
    return Picture(title, boxes, _unique(arrows), legend)
