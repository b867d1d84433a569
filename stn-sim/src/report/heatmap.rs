//! SVG heatmaps of the matrix gate (stn / best other per cell), drawn with
//! `plotters`' SVG backend like the line charts ([`crate::report::chart`]).
//!
//! - [`design_heatmap`]: RTT × loss, each square the worst ratio over the
//!   design cells with that pair (the design covers every pair, so every
//!   square has cells);
//! - [`sweep_heatmap`]: outage length × TCP stack, the sweep's ratios.

use plotters::prelude::*;

use crate::bench::gate::CellVerdict;
use crate::bench::suites::matrix::{LOSSES, RTT_MS};
use crate::report::chart::ChartError;

/// A grid of values with labelled rows and columns.
#[derive(Clone, Debug, PartialEq)]
pub struct Heatmap {
    /// Caption.
    pub title: String,
    /// Column labels (x), left to right.
    pub columns: Vec<String>,
    /// Row labels (y), top to bottom.
    pub rows: Vec<String>,
    /// `values[row][column]`; `None`: no cell.
    pub values: Vec<Vec<Option<f64>>>,
    /// Label every n-th column only (dense sweeps).
    pub column_label_every: usize,
}

/// The colour of a ratio: green at or below 1, through yellow (1.25) to red
/// at 1.5 and above.
pub fn ratio_color(r: f64) -> RGBColor {
    let t = ((r - 1.0) / 0.5).clamp(0.0, 1.0);
    if r <= 1.0 {
        // Greener the further below 1.
        let g = (1.0 - r).clamp(0.0, 0.5) * 2.0;
        return RGBColor(
            (0x9c as f64 * (1.0 - g)) as u8,
            (0xd6 as f64 - 0x30 as f64 * g) as u8,
            (0x9c as f64 * (1.0 - g)) as u8,
        );
    }
    if t < 0.5 {
        RGBColor(0xff, 0xff, (0x80 as f64 * (1.0 - 2.0 * t)) as u8)
    } else {
        RGBColor(0xff, (0xff as f64 * (2.0 - 2.0 * t)) as u8, 0)
    }
}

fn err(e: &dyn std::fmt::Display) -> ChartError {
    ChartError(e.to_string())
}

impl Heatmap {
    /// Renders the heatmap as an SVG document of `width` × `height` pixels.
    pub fn to_svg(&self, width: u32, height: u32) -> Result<String, ChartError> {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| err(&e))?;
            let (nx, ny) = (self.columns.len().max(1), self.rows.len().max(1));
            let left = 150i32;
            let top = 50i32;
            let bottom = 60i32;
            let w = (i32::try_from(width).unwrap_or(900) - left - 20).max(10);
            let h = (i32::try_from(height).unwrap_or(560) - top - bottom).max(10);
            let cw = f64::from(w) / nx as f64;
            let ch = f64::from(h) / ny as f64;
            root.draw(&Text::new(
                self.title.clone(),
                (left, 15),
                ("sans-serif", 18).into_font(),
            ))
            .map_err(|e| err(&e))?;
            for (y, row) in self.values.iter().enumerate() {
                for (x, v) in row.iter().enumerate() {
                    let x0 = left + (x as f64 * cw) as i32;
                    let y0 = top + (y as f64 * ch) as i32;
                    let x1 = left + ((x + 1) as f64 * cw) as i32;
                    let y1 = top + ((y + 1) as f64 * ch) as i32;
                    let fill = v.map_or(RGBColor(0xee, 0xee, 0xee), ratio_color);
                    root.draw(&Rectangle::new([(x0, y0), (x1, y1)], fill.filled()))
                        .map_err(|e| err(&e))?;
                    if let Some(v) = v {
                        if cw >= 30.0 && ch >= 14.0 {
                            root.draw(&Text::new(
                                format!("{v:.2}"),
                                (x0 + 4, y0 + (ch as i32) / 2 - 6),
                                ("sans-serif", 12).into_font(),
                            ))
                            .map_err(|e| err(&e))?;
                        }
                    }
                }
            }
            for (y, label) in self.rows.iter().enumerate() {
                root.draw(&Text::new(
                    label.clone(),
                    (8, top + (y as f64 * ch + ch / 2.0) as i32 - 6),
                    ("sans-serif", 13).into_font(),
                ))
                .map_err(|e| err(&e))?;
            }
            let every = self.column_label_every.max(1);
            for (x, label) in self.columns.iter().enumerate() {
                if x % every != 0 {
                    continue;
                }
                root.draw(&Text::new(
                    label.clone(),
                    (left + (x as f64 * cw) as i32, top + h + 8),
                    ("sans-serif", 13).into_font(),
                ))
                .map_err(|e| err(&e))?;
            }
            root.draw(&Text::new(
                "green ≤ 1 (stn at least as fast), yellow 1.25, red ≥ 1.5 × the best other client"
                    .to_owned(),
                (left, top + h + 32),
                ("sans-serif", 13).into_font(),
            ))
            .map_err(|e| err(&e))?;
            root.present().map_err(|e| err(&e))?;
        }
        Ok(svg)
    }
}

/// RTT × loss over the design cells: the worst ratio of each pair; `None`
/// without design verdicts.
pub fn design_heatmap(verdicts: &[CellVerdict]) -> Option<Heatmap> {
    let design: Vec<&CellVerdict> = verdicts.iter().filter(|v| v.row.is_some()).collect();
    if design.is_empty() {
        return None;
    }
    let mut values = vec![vec![None; RTT_MS.len()]; LOSSES.len()];
    for v in design {
        let Some(row) = &v.row else { continue };
        let slot: &mut Option<f64> = &mut values[row[1]][row[0]];
        *slot = Some(slot.map_or(v.ratio, |x: f64| x.max(v.ratio)));
    }
    Some(Heatmap {
        title: "matrix: stn / best other, worst cell per (RTT, loss) pair".to_owned(),
        columns: RTT_MS.iter().map(|r| format!("RTT {r} ms")).collect(),
        rows: LOSSES.iter().map(|l| l.label()).collect(),
        values,
        column_label_every: 1,
    })
}

/// Outage length × TCP stack over the sweep cells; `None` without them.
pub fn sweep_heatmap(verdicts: &[CellVerdict]) -> Option<Heatmap> {
    let sweep: Vec<&CellVerdict> = verdicts.iter().filter(|v| v.row.is_none()).collect();
    if sweep.is_empty() {
        return None;
    }
    let mut rows: Vec<String> = Vec::new();
    let mut columns: Vec<String> = Vec::new();
    for v in &sweep {
        if !rows.contains(&v.platform) {
            rows.push(v.platform.clone());
        }
        let c = v.scenario.trim_start_matches("sweep outage-").to_owned();
        if !columns.contains(&c) {
            columns.push(c);
        }
    }
    let mut values = vec![vec![None; columns.len()]; rows.len()];
    for v in &sweep {
        let c = v.scenario.trim_start_matches("sweep outage-");
        let (Some(y), Some(x)) = (
            rows.iter().position(|r| *r == v.platform),
            columns.iter().position(|x| x == c),
        ) else {
            continue;
        };
        values[y][x] = Some(v.ratio);
    }
    Some(Heatmap {
        title: "outage sweep: stn / best other, one call through an outage of R (0.1 s steps)"
            .to_owned(),
        columns,
        rows,
        values,
        column_label_every: 20,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_run_from_green_to_red() {
        assert_eq!(ratio_color(1.0), RGBColor(0x9c, 0xd6, 0x9c));
        assert_eq!(ratio_color(1.5), RGBColor(0xff, 0, 0));
        assert_eq!(ratio_color(9.0), RGBColor(0xff, 0, 0));
        assert_eq!(ratio_color(1.25).0, 0xff);
        assert!(ratio_color(0.5).1 > ratio_color(0.5).0);
    }

    #[test]
    fn renders_every_square() {
        let h = Heatmap {
            title: "t".into(),
            columns: vec!["a".into(), "b".into()],
            rows: vec!["x".into()],
            values: vec![vec![Some(0.9), Some(1.7)]],
            column_label_every: 1,
        };
        let svg = h.to_svg(400, 200).unwrap();
        assert!(svg.contains("0.90") && svg.contains("1.70"));
        assert_eq!(
            svg.matches("<rect").count(),
            3,
            "background and two squares"
        );
    }
}
