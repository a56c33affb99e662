"""srcgrad's own picture renderer, for machines without Graphviz: a layered layout (layers from
a topological order, a few barycentre sweeps to untangle them) drawn as SVG boxes and arrows.

Everything here is deterministic (no ids, no hashing of objects, fixed number formatting), and
every piece of text goes through :func:`visible` and XML escaping, so that no name or file name
can break the document.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

import networkx as nx

__all__ = ["Box", "Arrow", "STYLES", "visible", "svg"]

CHAR_W, LINE_H, PAD_X, PAD_Y = 7.2, 15.0, 10.0, 7.0     # monospace 12px
GAP_X, GAP_Y, MARGIN = 22.0, 42.0, 16.0

STYLES: dict[str, dict[str, str]] = {
    # eager graph, in torchviz's colours
    "fn": {"fill": "#d3d3d3", "stroke": "#000000", "text": "#000000", "dash": ""},
    "leaf": {"fill": "#add8e6", "stroke": "#000000", "text": "#000000", "dash": ""},
    "output": {"fill": "#caff70", "stroke": "#000000", "text": "#000000", "dash": ""},
    "saved": {"fill": "#ffa500", "stroke": "#000000", "text": "#000000", "dash": ""},
    # compiled graph
    "active": {"fill": "#cfe3f7", "stroke": "#1f4e79", "text": "#000000", "dash": ""},
    "inactive": {"fill": "#ffffff", "stroke": "#8c8c8c", "text": "#6b6b6b", "dash": "4,3"},
    "adjoint": {"fill": "#fbd5d0", "stroke": "#9c2a1c", "text": "#000000", "dash": ""},
}
ARROWS: dict[str, dict[str, str]] = {
    "flow": {"stroke": "#333333", "dash": "", "head": "1"},
    "static": {"stroke": "#9a9a9a", "dash": "4,3", "head": "1"},
    "adjoint": {"stroke": "#9c2a1c", "dash": "", "head": "1"},
    "seed": {"stroke": "#9c2a1c", "dash": "2,3", "head": "1"},
    "saved": {"stroke": "#333333", "dash": "3,3", "head": ""},
}
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Cn", "Co", "Zl", "Zp"})


@dataclass(frozen=True)
class Box:
    """A node: its lines of text (user text, unescaped), its style and a hover text."""

    id: str
    lines: tuple[str, ...]
    kind: str
    tooltip: str = ""
    double: bool = False        # a second border (a value saved for the adjoint)


@dataclass(frozen=True)
class Arrow:
    tail: str
    head: str
    kind: str = "flow"


def visible(text: object) -> str:
    """``text`` with every control, format, surrogate or unassigned character written as its
    escape (``\\n``, ``\\x00``, ``\\udcff``): safe in XML and in DOT, and shown, not obeyed."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(ch.encode("unicode_escape").decode("ascii")
                   if unicodedata.category(ch) in _HIDDEN else ch for ch in text)


def _width(text: str) -> float:
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text) * CHAR_W


def _size(box: Box) -> tuple[float, float]:
    lines = [visible(s) for s in box.lines] or [""]
    return max(_width(s) for s in lines) + 2 * PAD_X, len(lines) * LINE_H + 2 * PAD_Y


@dataclass
class _Layout:
    layers: list[list[str]] = field(default_factory=list)
    x: dict[str, float] = field(default_factory=dict)
    y: dict[str, float] = field(default_factory=dict)
    size: dict[str, tuple[float, float]] = field(default_factory=dict)
    routes: list[tuple[Arrow, list[str]]] = field(default_factory=list)


def _acyclic(g: nx.DiGraph) -> nx.DiGraph:
    """``g`` with edges that close a cycle left out (only for placing the layers)."""
    dag = nx.DiGraph()
    dag.add_nodes_from(g)
    for u, v in g.edges:
        if u != v and not (v in dag and u in dag and nx.has_path(dag, v, u)):
            dag.add_edge(u, v)
    return dag


def _layout(boxes: list[Box], arrows: list[Arrow], y0: float) -> _Layout:
    order = {b.id: i for i, b in enumerate(boxes)}
    g = nx.DiGraph()
    g.add_nodes_from(order)
    g.add_edges_from((a.tail, a.head) for a in arrows if a.tail != a.head)
    dag = g if nx.is_directed_acyclic_graph(g) else _acyclic(g)
    rank: dict[str, int] = {}
    for n in nx.lexicographical_topological_sort(dag, key=order.__getitem__):
        rank[n] = max((rank[p] + 1 for p in dag.predecessors(n)), default=0)
    out = _Layout(size={b.id: _size(b) for b in boxes})
    chains = nx.DiGraph()             # the layout graph: long edges cut by dummy points
    chains.add_nodes_from(order)
    for k, a in enumerate(arrows):
        top, bottom = (a.tail, a.head) if rank[a.tail] <= rank[a.head] else (a.head, a.tail)
        path = [top] + [f"~{k}.{r}" for r in range(rank[top] + 1, rank[bottom])] + [bottom]
        for r, dummy in enumerate(path[1:-1], rank[top] + 1):
            rank[dummy], out.size[dummy] = r, (0.0, 0.0)
        chains.add_edges_from(zip(path, path[1:]))
        out.routes.append((a, path if top == a.tail else path[::-1]))
    out.layers = [[] for _ in range(max(rank.values(), default=0) + 1)]
    for n in sorted(rank, key=lambda n: (order.get(n, len(order)), n)):
        out.layers[rank[n]].append(n)
    _untangle(out.layers, chains)
    _place(out, chains, y0)
    return out


def _untangle(layers: list[list[str]], g: nx.DiGraph) -> None:
    """Barycentre sweeps: each node moves to the mean position of its neighbours in the layer
    before (going down) or after (going up); ties keep the current order."""
    for sweep in range(8):
        down = sweep % 2 == 0
        span = range(1, len(layers)) if down else range(len(layers) - 2, -1, -1)
        for i in span:
            ref = {n: k for k, n in enumerate(layers[i - 1 if down else i + 1])}
            current = {n: k for k, n in enumerate(layers[i])}

            def centre(n: str, ref=ref, current=current, down=down) -> tuple[float, int]:
                near = [ref[m] for m in (g.predecessors(n) if down else g.successors(n))
                        if m in ref]
                return (sum(near) / len(near) if near else float(current[n]), current[n])
            layers[i].sort(key=centre)


def _place(out: _Layout, g: nx.DiGraph, y0: float) -> None:
    """x: each layer packed left to right, then pulled toward its neighbours' centres without
    overlapping; y: rows as tall as their tallest box."""
    for layer in out.layers:
        pos = 0.0
        for n in layer:
            w = out.size[n][0]
            out.x[n] = pos + w / 2
            pos += w + GAP_X
        shift = (pos - GAP_X) / 2
        for n in layer:
            out.x[n] -= shift
    for sweep in range(4):
        down = sweep % 2 == 0
        span = range(1, len(out.layers)) if down else range(len(out.layers) - 2, -1, -1)
        for i in span:
            layer = out.layers[i]
            want = []
            for n in layer:
                near = [out.x[m] for m in (g.predecessors(n) if down else g.successors(n))]
                want.append(sum(near) / len(near) if near else out.x[n])
            placed: list[float] = []
            for k, n in enumerate(layer):
                lo = placed[-1] + (out.size[layer[k - 1]][0] + out.size[n][0]) / 2 + GAP_X \
                    if placed else -1e18
                placed.append(max(want[k], lo))
            drift = sum(p - w for p, w in zip(placed, want)) / len(layer)
            for n, p in zip(layer, placed):
                out.x[n] = p - drift
    top = y0
    for layer in out.layers:
        height = max(out.size[n][1] for n in layer) if layer else 0.0
        for n in layer:
            out.y[n] = top + height / 2
        top += height + GAP_Y
    left = min((out.x[n] - out.size[n][0] / 2 for n in out.x), default=0.0)
    for n in out.x:
        out.x[n] += MARGIN - left


def _f(v: float) -> str:
    text = f"{v:.1f}"
    return "0.0" if text == "-0.0" else text


def _text(s: str) -> str:
    return escape(visible(s), {'"': "&quot;"})


def svg(title: str, boxes: list[Box], arrows: list[Arrow], legend: str = "") -> str:
    """The picture as an SVG document (UTF-8 text): a title, an optional legend line, the
    graph."""
    heading = [title] + ([legend] if legend else [])
    known = {b.id for b in boxes}
    arrows = [a for a in arrows if a.tail in known and a.head in known]
    lay = _layout(boxes, arrows, MARGIN + (len(heading) + 1) * LINE_H)
    width = max([lay.x[b.id] + lay.size[b.id][0] / 2 for b in boxes] + [
        _width(visible(line)) + MARGIN for line in heading]) + MARGIN
    height = max([lay.y[b.id] + lay.size[b.id][1] / 2 for b in boxes] + [MARGIN]) + MARGIN
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<svg xmlns="http://www.w3.org/2000/svg" width="{_f(width)}pt" '
           f'height="{_f(height)}pt" viewBox="0 0 {_f(width)} {_f(height)}" '
           'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="12">',
           f"<title>{_text(title)}</title>",
           "<defs>" + "".join(
               f'<marker id="head-{kind}" viewBox="0 0 10 10" refX="10" refY="5" '
               'markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" '
               f'fill="{style["stroke"]}"/></marker>' for kind, style in ARROWS.items()
               if style["head"]) + "</defs>",
           f'<rect width="{_f(width)}" height="{_f(height)}" fill="#ffffff"/>',
           f'<text x="{_f(MARGIN)}" y="{_f(MARGIN + LINE_H)}" font-weight="bold">'
           f"{_text(title)}</text>"]
    if legend:
        out.append(f'<text x="{_f(MARGIN)}" y="{_f(MARGIN + 2 * LINE_H)}" fill="#555555">'
                   f"{_text(legend)}</text>")
    out.append('<g class="edges">')
    into: dict[str, list[tuple[float, int]]] = {}       # arrows into a box, spread out
    for k, (_, path) in enumerate(lay.routes):
        into.setdefault(path[-1], []).append((lay.x[path[-2]], k))
    spread: dict[int, float] = {}
    for n, ends in into.items():
        step = min(10.0, (lay.size[n][0] - 2 * PAD_X) / max(len(ends), 1))
        for i, (_, k) in enumerate(sorted(ends)):
            spread[k] = (i - (len(ends) - 1) / 2) * step
    for k_route, (arrow, path) in enumerate(lay.routes):
        style = ARROWS[arrow.kind]
        points = []
        for k, n in enumerate(path):
            half = lay.size[n][1] / 2
            if k == 0:
                points.append((lay.x[n], lay.y[n] + (half if lay.y[n] < lay.y[path[1]] else -half)))
            elif k == len(path) - 1:
                points.append((lay.x[n] + spread[k_route], lay.y[n] + (
                    -half if lay.y[path[k - 1]] < lay.y[n] else half)))
            else:
                points.append((lay.x[n], lay.y[n]))
        d = "M" + " L".join(f"{_f(x)},{_f(y)}" for x, y in points)
        attrs = f' stroke-dasharray="{style["dash"]}"' if style["dash"] else ""
        if style["head"]:
            attrs += f' marker-end="url(#head-{arrow.kind})"'
        out.append(f'<path class="{arrow.kind}" d="{d}" fill="none" stroke="{style["stroke"]}"'
                   f"{attrs}/>")
    out.append("</g>")
    for b in boxes:
        style = STYLES[b.kind]
        w, h = lay.size[b.id]
        x, y = lay.x[b.id] - w / 2, lay.y[b.id] - h / 2
        dash = f' stroke-dasharray="{style["dash"]}"' if style["dash"] else ""
        out.append(f'<g class="node {b.kind}" id="{_text(b.id)}">')
        if b.tooltip:
            out.append(f"<title>{_text(b.tooltip)}</title>")
        out.append(f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(w)}" height="{_f(h)}" rx="4" '
                   f'fill="{style["fill"]}" stroke="{style["stroke"]}"{dash}/>')
        if b.double:
            out.append(f'<rect x="{_f(x + 3)}" y="{_f(y + 3)}" width="{_f(w - 6)}" '
                       f'height="{_f(h - 6)}" rx="3" fill="none" stroke="{style["stroke"]}"/>')
        out.append(f'<text text-anchor="middle" fill="{style["text"]}">')
        for k, line in enumerate(b.lines):
            ty = y + PAD_Y + LINE_H * (k + 1) - 3.5
            out.append(f'<tspan x="{_f(lay.x[b.id])}" y="{_f(ty)}">{_text(line)}</tspan>')
        out.append("</text></g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"
