//! `mgpu bench --chart DIR`: one SVG per primitive and type, throughput (G items/s) against the
//! input size (log2), a line per variant of mgpu, per peer and for a memcpy of the same bytes.
//! Written by hand (no plotting or font dependency): the text is SVG `<text>`, drawn by the
//! viewer.

use crate::output::Record;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// A line of the chart: its name, points (log2 n, G items/s), and whether it is a peer / memcpy.
struct Series {
    name: String,
    points: Vec<(f64, f64)>,
    style: Style,
}

#[derive(Clone, Copy, PartialEq)]
enum Style {
    Mgpu,
    Peer,
    Memcpy,
}

const COLORS: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
];

/// Writes one chart per (primitive, type) of `records` into `dir`; returns the files written.
pub fn write(dir: &Path, records: &[Record]) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let mut groups: Vec<(String, String)> = Vec::new();
    for r in records {
        let key = (r.primitive.clone(), r.ty.clone());
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    let mut written = Vec::new();
    for (primitive, ty) in groups {
        let rows: Vec<&Record> = records
            .iter()
            .filter(|r| r.primitive == primitive && r.ty == ty)
            .collect();
        let path = dir.join(format!("{}-{ty}.svg", file_name(&primitive)));
        let title = format!("mgpu bench {primitive} ({ty})");
        std::fs::write(&path, svg(&title, &series(&rows)))
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

fn file_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The lines of one chart: mgpu's variants, then each peer of each variant, then memcpy (of the
/// first variant's bytes).
fn series(rows: &[&Record]) -> Vec<Series> {
    let mut variants: Vec<&str> = Vec::new();
    for r in rows {
        if !variants.contains(&r.variant.as_str()) {
            variants.push(&r.variant);
        }
    }
    let mut out = Vec::new();
    for v in &variants {
        let of: Vec<&&Record> = rows.iter().filter(|r| r.variant == *v).collect();
        out.push(Series {
            name: format!("mgpu {v}"),
            points: of.iter().map(|r| (r.log2 as f64, r.gitems(r.ms))).collect(),
            style: Style::Mgpu,
        });
    }
    for v in &variants {
        let of: Vec<&&Record> = rows.iter().filter(|r| r.variant == *v).collect();
        let mut names: Vec<&str> = Vec::new();
        for r in &of {
            for (name, ms) in &r.peers {
                if ms.is_some() && !names.contains(&name.as_str()) {
                    names.push(name);
                }
            }
        }
        for name in names {
            let points = of
                .iter()
                .filter_map(|r| {
                    let ms = r.peers.iter().find(|p| p.0 == name)?.1?;
                    Some((r.log2 as f64, r.gitems(ms)))
                })
                .collect();
            out.push(Series {
                name: format!("{name} {v}"),
                points,
                style: Style::Peer,
            });
        }
    }
    if let Some(first) = variants.first() {
        let points = rows
            .iter()
            .filter(|r| r.variant == *first && r.memcpy_ms > 0.0)
            .map(|r| (r.log2 as f64, r.gitems(r.memcpy_ms)))
            .collect();
        out.push(Series {
            name: "memcpy (same bytes)".into(),
            points,
            style: Style::Memcpy,
        });
    }
    out.retain(|s| !s.points.is_empty());
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A round step for about `target` ticks over `0..max`.
fn tick_step(max: f64, target: f64) -> f64 {
    let raw = (max / target).max(1e-12);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

fn svg(title: &str, lines: &[Series]) -> String {
    let (w, h) = (960.0, 560.0);
    let (left, right, top, bottom) = (70.0, 300.0, 44.0, 56.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let xs = lines.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (mut x0, mut x1) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    if x0 == x1 {
        (x0, x1) = (x0 - 1.0, x1 + 1.0);
    }
    let ymax = lines
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|y| y.is_finite())
        .fold(0.0f64, f64::max);
    let step = tick_step(if ymax > 0.0 { ymax } else { 1.0 }, 6.0);
    let y1 = ((ymax / step).ceil().max(1.0)) * step;
    let px = |x: f64| left + (x - x0) / (x1 - x0) * pw;
    let py = |y: f64| top + ph - (y / y1) * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="24" font-size="16" text-anchor="middle">{}</text>"#,
        left + pw / 2.0,
        escape(title)
    );
    // Grid and axes.
    let mut y = 0.0;
    while y <= y1 + step / 2.0 {
        let yy = py(y);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            left + pw,
            left - 6.0,
            yy + 4.0,
            format_number(y)
        );
        y += step;
    }
    let mut x = x0.ceil();
    while x <= x1 {
        let xx = px(x);
        let _ = writeln!(
            s,
            r##"<line x1="{xx:.1}" y1="{top}" x2="{xx:.1}" y2="{:.1}" stroke="#eee"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">2^{x}</text>"##,
            top + ph,
            top + ph + 18.0
        );
        x += 1.0;
    }
    let _ = writeln!(
        s,
        r##"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">input size (elements, log2)</text>"#,
        left + pw / 2.0,
        h - 14.0
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(18 {:.1}) rotate(-90)" text-anchor="middle">throughput (G items/s)</text>"#,
        top + ph / 2.0
    );
    // Lines, markers and the legend.
    for (i, line) in lines.iter().enumerate() {
        let (color, dash, width) = match line.style {
            Style::Memcpy => ("#555", r#" stroke-dasharray="2 3""#, 2.5),
            Style::Peer => (COLORS[i % COLORS.len()], r#" stroke-dasharray="6 4""#, 1.5),
            Style::Mgpu => (COLORS[i % COLORS.len()], "", 2.0),
        };
        let mut pts: Vec<(f64, f64)> = line
            .points
            .iter()
            .copied()
            .filter(|p| p.1.is_finite())
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let path: Vec<String> = pts
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="{width}"{dash}/>"#,
            path.join(" ")
        );
        for &(x, y) in &pts {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{color}"><title>{}: 2^{x} {:.3} G items/s</title></circle>"#,
                px(x),
                py(y),
                escape(&line.name),
                y
            );
        }
        let ly = top + 8.0 + i as f64 * 16.0;
        let lx = left + pw + 16.0;
        let _ = writeln!(
            s,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="{width}"{dash}/><text x="{}" y="{}">{}</text>"#,
            lx + 24.0,
            lx + 30.0,
            ly + 4.0,
            escape(&line.name)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn format_number(v: f64) -> String {
    let t = format!("{v:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(variant: &str, log2: u32, ms: f64) -> Record {
        Record {
            primitive: "scan".into(),
            variant: variant.into(),
            ty: "i32".into(),
            log2,
            items: (1u64 << log2) as f64,
            ms,
            bytes: 0.0,
            memcpy_ms: ms / 2.0,
            peers: vec![("cub".into(), Some(ms * 1.1)), ("radix".into(), None)],
            extra: Vec::new(),
            tuning: "128x39x11".into(),
        }
    }

    #[test]
    fn a_chart_has_a_line_per_variant_peer_and_memcpy() {
        let rows = [
            record("scan", 20, 0.01),
            record("scan", 21, 0.02),
            record("scan<&>", 20, 0.03),
        ];
        let refs: Vec<&Record> = rows.iter().collect();
        let lines = series(&refs);
        let names: Vec<&str> = lines.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "mgpu scan",
                "mgpu scan<&>",
                "cub scan",
                "cub scan<&>",
                "memcpy (same bytes)"
            ]
        );
        let text = svg("t", &lines);
        assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
        assert!(text.contains("scan&lt;&amp;&gt;"));
        assert_eq!(text.matches("<polyline").count(), 5);
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(10.0, 5.0), 2.0);
        assert_eq!(tick_step(300.0, 6.0), 50.0);
        assert_eq!(format_number(2.5), "2.5");
        assert_eq!(format_number(10.0), "10");
    }
}
