#!/usr/bin/env python3
"""Draws an OMPRPC_TRACE file as an SVG picture, the way Perfetto lays it out: per device a "kernels"
track and one track per port, each host call a box coloured by opcode. For the README; a user opens
the JSON itself in https://ui.perfetto.dev.

    python3 scripts/trace-picture.py trace.json picture.svg [title]
"""
import html
import json
import sys

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"]


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: python3 scripts/trace-picture.py TRACE.json PICTURE.svg [TITLE]\n"
                 "  TRACE.json: a file written with OMPRPC_TRACE=TRACE.json")
    source, target = sys.argv[1], sys.argv[2]
    title = sys.argv[3] if len(sys.argv) > 3 else source
    with open(source) as f:
        trace = json.load(f)
    spans = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    if not spans:
        sys.exit(f"{source}: no spans")
    start = min(e["ts"] for e in spans)
    end = max(e["ts"] + e["dur"] for e in spans)
    tracks = sorted({(e["pid"], e["tid"]) for e in spans})
    names = sorted({e["name"] for e in spans if e.get("cat") == "host call"})
    colour = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}
    left, width, row, top = 150, 900, 18, 40
    height = top + row * len(tracks) + 30 + 18 * ((len(names) + 3) // 4)
    scale = width / max(end - start, 1e-3)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="100%" height="100%" fill="white"/>',
        f'<text x="10" y="18" font-size="13">{html.escape(title)}: {len(spans)} spans over '
        f"{(end - start) / 1000:.1f} ms</text>",
    ]
    for i, (pid, tid) in enumerate(tracks):
        y = top + i * row
        label = f"device {pid} kernels" if tid == 0 else f"device {pid} port {tid - 1}"
        out.append(f'<text x="10" y="{y + 12}">{label}</text>')
        out.append(f'<line x1="{left}" y1="{y + row - 1}" x2="{left + width}" y2="{y + row - 1}" stroke="#eee"/>')
    for e in spans:
        y = top + tracks.index((e["pid"], e["tid"])) * row
        x = left + (e["ts"] - start) * scale
        w = max(e["dur"] * scale, 0.6)
        fill = "#bbbbbb" if e.get("cat") == "kernel" else colour[e["name"]]
        out.append(
            f'<rect x="{x:.2f}" y="{y + 2}" width="{w:.2f}" height="{row - 5}" fill="{fill}">'
            f'<title>{html.escape(e["name"])} {e["dur"]:.1f} us</title></rect>'
        )
    y = top + row * len(tracks) + 16
    out.append(f'<text x="{left}" y="{y}">0 ms</text>')
    out.append(f'<text x="{left + width - 40}" y="{y}">{(end - start) / 1000:.1f} ms</text>')
    for i, name in enumerate(names):
        x, ly = left + (i % 4) * 220, y + 18 + 18 * (i // 4)
        out.append(f'<rect x="{x}" y="{ly - 10}" width="12" height="12" fill="{colour[name]}"/>')
        out.append(f'<text x="{x + 16}" y="{ly}">{html.escape(name)}</text>')
    out.append("</svg>")
    with open(target, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
