//! `omprpc trace TRACE.json PICTURE.svg`: draws an `OMPRPC_TRACE` file as Perfetto lays it out, per
//! device a "kernels" track and one track per port, each host call a box coloured by opcode; a
//! picture to put in a report or a README, where Perfetto itself cannot go.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use crate::layout::Failure;

/// Colours of the opcodes, in the order of their names.
const PALETTE: [&str; 9] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
];

/// One complete event ("ph": "X") of the trace.
struct Span {
    name: String,
    host_call: bool,
    track: (u64, u64),
    start_us: f64,
    length_us: f64,
}

/// Reads `source`, draws it into `target`; returns what to tell the user.
pub fn draw(source: &Path, target: &Path, title: Option<&str>) -> Result<String, Failure> {
    let bytes = std::fs::read(source).map_err(|e| format!("cannot read {}: {e}", source.display()))?;
    let trace: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "{} is not a trace written with OMPRPC_TRACE (not JSON: {e})",
            source.display()
        )
    })?;
    let events = trace["traceEvents"].as_array().ok_or_else(|| {
        format!(
            "{} is not a trace written with OMPRPC_TRACE (no traceEvents)",
            source.display()
        )
    })?;
    let spans: Vec<Span> = events
        .iter()
        .filter(|e| e["ph"] == "X")
        .filter_map(|e| {
            Some(Span {
                name: e["name"].as_str()?.to_string(),
                host_call: e["cat"] == "host call",
                track: (e["pid"].as_u64()?, e["tid"].as_u64()?),
                start_us: e["ts"].as_f64()?,
                length_us: e["dur"].as_f64()?,
            })
        })
        .collect();
    if spans.is_empty() {
        return Err(format!("{}: no spans to draw", source.display()));
    }
    let title = title.map_or_else(|| source.display().to_string(), str::to_string);
    let picture = svg(&spans, &title);
    std::fs::write(target, picture).map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    Ok(format!("{}: {} spans drawn", target.display(), spans.len()))
}

/// The picture: a title, a labelled row per track, a box per span, a time axis and a legend.
fn svg(spans: &[Span], title: &str) -> String {
    let start = spans.iter().map(|s| s.start_us).fold(f64::INFINITY, f64::min);
    let end = spans
        .iter()
        .map(|s| s.start_us + s.length_us)
        .fold(f64::NEG_INFINITY, f64::max);
    // Each track's row and each opcode's colour, looked up once per span (a trace holds up to a
    // million spans over thousands of ports).
    let tracks: BTreeMap<(u64, u64), usize> = spans
        .iter()
        .map(|s| s.track)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .enumerate()
        .map(|(row, track)| (track, row))
        .collect();
    let colours: BTreeMap<&str, &str> = spans
        .iter()
        .filter(|s| s.host_call)
        .map(|s| s.name.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .enumerate()
        .map(|(i, name)| (name, PALETTE[i % PALETTE.len()]))
        .collect();
    let (left, width, row, top) = (150.0, 900.0, 18.0, 40.0);
    let legend_rows = colours.len().div_ceil(4) as f64;
    let height = top + row * tracks.len() as f64 + 30.0 + 18.0 * legend_rows;
    let scale = width / (end - start).max(1e-3);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{height}" font-family="sans-serif" font-size="11">"#,
        left + width + 20.0
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="10" y="18" font-size="13">{}: {} spans over {:.1} ms</text>"#,
        escape(title),
        spans.len(),
        (end - start) / 1000.0
    );
    for (&(device, tid), &i) in &tracks {
        let y = top + i as f64 * row;
        let label = if tid == 0 {
            format!("device {device} kernels")
        } else {
            format!("device {device} port {}", tid - 1)
        };
        let _ = writeln!(out, r#"<text x="10" y="{}">{label}</text>"#, y + 12.0);
        let _ = writeln!(
            out,
            r##"<line x1="{left}" y1="{0}" x2="{1}" y2="{0}" stroke="#eee"/>"##,
            y + row - 1.0,
            left + width
        );
    }
    for span in spans {
        let track = tracks[&span.track];
        let y = top + track as f64 * row;
        let fill = if span.host_call {
            colours[span.name.as_str()]
        } else {
            "#bbbbbb"
        };
        let _ = writeln!(
            out,
            r#"<rect x="{:.2}" y="{}" width="{:.2}" height="{}" fill="{fill}"><title>{} {:.1} us</title></rect>"#,
            left + (span.start_us - start) * scale,
            y + 2.0,
            (span.length_us * scale).max(0.6),
            row - 5.0,
            escape(&span.name),
            span.length_us
        );
    }
    let y = top + row * tracks.len() as f64 + 16.0;
    let _ = writeln!(out, r#"<text x="{left}" y="{y}">0 ms</text>"#);
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{y}">{:.1} ms</text>"#,
        left + width - 40.0,
        (end - start) / 1000.0
    );
    for (i, (name, colour)) in colours.iter().enumerate() {
        let x = left + (i % 4) as f64 * 220.0;
        let label_y = y + 18.0 + 18.0 * (i / 4) as f64;
        let _ = writeln!(
            out,
            r#"<rect x="{x}" y="{}" width="12" height="12" fill="{}"/>"#,
            label_y - 10.0,
            colour
        );
        let _ = writeln!(out, r#"<text x="{}" y="{label_y}">{}</text>"#, x + 16.0, escape(name));
    }
    out.push_str("</svg>\n");
    out
}

/// Text made safe for SVG.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
