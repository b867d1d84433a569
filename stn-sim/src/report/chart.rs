//! SVG line charts of a benchmark report, drawn with `plotters`' SVG
//! backend (text is left to the SVG viewer: no fonts are needed to build
//! or run).
//!
//! - [`loss_chart`]: loss suite, total time per client against the loss rate
//!   (one chart per platform, [`loss_charts`]);
//! - [`sensitivity_chart`]: sensitivity suite, completion time per client
//!   against the outage length R, with the oracle as a dashed line and
//!   failed calls as crosses at the time they failed (one chart per
//!   platform and scenario variant, [`sensitivity_charts`]).

use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::bench::record::RunRecord;
use crate::report::file_stem;
use crate::report::table::{end_time, first_number, loss_percent, ordered, scenario_variant};

/// One named line of a chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// Points `(x, y)`, sorted by `x`.
    pub points: Vec<(f64, f64)>,
    /// Points drawn as crosses and not joined (failures).
    pub failures: Vec<(f64, f64)>,
    /// Drawn dashed in black (the oracle).
    pub reference: bool,
}

/// A line chart ready to draw.
#[derive(Clone, Debug, PartialEq)]
pub struct LineChart {
    /// Caption.
    pub title: String,
    /// X axis description.
    pub x_label: String,
    /// Y axis description.
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
    /// A logarithmic y axis (totals that span orders of magnitude).
    pub log_y: bool,
}

/// Drawing failed (plotters reports layout errors this way).
#[derive(Debug, thiserror::Error)]
#[error("chart: {0}")]
pub struct ChartError(pub(crate) String);

const COLORS: [RGBColor; 8] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
];

impl LineChart {
    fn bounds(&self) -> (f64, f64, f64) {
        let pts = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().chain(&s.failures));
        let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
        for &(x, y) in pts {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y1 = y1.max(y);
        }
        if !x0.is_finite() {
            return (0.0, 1.0, 1.0);
        }
        if x1 - x0 < 1e-9 {
            x1 = x0 + 1.0;
        }
        (x0, x1, if y1 > 0.0 { y1 * 1.1 } else { 1.0 })
    }

    /// Draws the chart as an SVG document (`width` × `height` pixels).
    pub fn to_svg(&self, width: u32, height: u32) -> Result<String, ChartError> {
        stacked_svg(std::slice::from_ref(self), width, height)
    }

    fn draw_area<'a>(
        &self,
        area: &DrawingArea<SVGBackend<'a>, plotters::coord::Shift>,
    ) -> Result<(), ChartError> {
        let (x0, x1, y1) = self.bounds();
        let mut builder = ChartBuilder::on(area);
        builder
            .caption(&self.title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(65);
        if self.log_y {
            let y0 = self.min_positive_y().unwrap_or(1.0) * 0.8;
            let mut chart = builder
                .build_cartesian_2d(x0..x1, (y0..y1.max(y0 * 2.0)).log_scale())
                .map_err(|e| err(&e))?;
            self.draw_on(&mut chart)?;
        } else {
            let mut chart = builder
                .build_cartesian_2d(x0..x1, 0.0..y1)
                .map_err(|e| err(&e))?;
            self.draw_on(&mut chart)?;
        }
        Ok(())
    }

    fn min_positive_y(&self) -> Option<f64> {
        self.series
            .iter()
            .flat_map(|s| s.points.iter().chain(&s.failures))
            .map(|p| p.1)
            .filter(|y| *y > 0.0)
            .min_by(f64::total_cmp)
    }

    fn draw_on<'a, Y>(
        &self,
        chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordf64, Y>>,
    ) -> Result<(), ChartError>
    where
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        chart
            .configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .axis_desc_style(("sans-serif", 16))
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .draw()
            .map_err(|e| err(&e))?;
        // Colours follow the series' order; stn is drawn last, on top of
        // the clients it is compared with.
        let mut palette = COLORS.iter().cycle();
        let colors: Vec<RGBColor> = self
            .series
            .iter()
            .map(|s| {
                if s.reference {
                    BLACK
                } else {
                    *palette.next().unwrap_or(&BLACK)
                }
            })
            .collect();
        let mut order: Vec<usize> = (0..self.series.len()).collect();
        order.sort_by_key(|&i| self.series[i].name == "stn");
        for idx in order {
            let s = &self.series[idx];
            // Earlier series get larger dots, so a later series drawn
            // over identical points leaves a ring of the earlier colour.
            let dot = 9u32
                .saturating_sub(2 * u32::try_from(idx).unwrap_or(3))
                .max(3);
            let color = colors[idx];
            let style = color.stroke_width(2);
            if s.reference {
                chart
                    .draw_series(DashedLineSeries::new(s.points.iter().copied(), 8, 5, style))
                    .map_err(|e| err(&e))?
                    .label(&s.name)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
            } else {
                chart
                    .draw_series(LineSeries::new(s.points.iter().copied(), style))
                    .map_err(|e| err(&e))?
                    .label(&s.name)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
                chart
                    .draw_series(
                        s.points
                            .iter()
                            .map(|&p| Circle::new(p, dot, color.filled())),
                    )
                    .map_err(|e| err(&e))?;
            }
            chart
                .draw_series(
                    s.failures
                        .iter()
                        .map(|&p| Cross::new(p, 6, color.stroke_width(2))),
                )
                .map_err(|e| err(&e))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(|e| err(&e))?;
        Ok(())
    }
}

/// Draws `charts` one above the other in one SVG document, each
/// `width` × `height` pixels.
pub fn stacked_svg(charts: &[LineChart], width: u32, height: u32) -> Result<String, ChartError> {
    let rows = u32::try_from(charts.len().max(1)).unwrap_or(u32::MAX);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height.saturating_mul(rows)))
            .into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let areas = root.split_evenly((charts.len().max(1), 1));
        for (chart, area) in charts.iter().zip(&areas) {
            chart.draw_area(area)?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}

/// An axis tick: whole numbers without a fraction (`10000`, not
/// `10000.0`), others with the digits they need.
fn tick(v: &f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

fn err(e: &dyn std::fmt::Display) -> ChartError {
    ChartError(e.to_string())
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The platforms of `suite`'s records, in first-appearance order.
fn platforms_of<'a>(runs: &'a [RunRecord], suite: &str) -> Vec<&'a str> {
    let these: Vec<&RunRecord> = runs.iter().filter(|r| r.suite == suite).collect();
    ordered(&these, |r| r.platform.as_str())
}

/// `<suite>-<platform>.svg`: [`loss_chart`] for every platform of
/// `suite`'s records that has a point.
pub fn loss_charts(runs: &[RunRecord], suite: &str) -> Vec<(String, LineChart)> {
    platforms_of(runs, suite)
        .into_iter()
        .filter_map(|platform| {
            let c = loss_chart(runs, suite, platform)?;
            Some((format!("{}.svg", file_stem(&[suite, platform])), c))
        })
        .collect()
}

/// `<suite>-<platform>[-<variant>].svg`: [`sensitivity_chart`] for every
/// platform and scenario variant of `suite`'s records that has a point.
pub fn sensitivity_charts(runs: &[RunRecord], suite: &str) -> Vec<(String, LineChart)> {
    let mut out = Vec::new();
    for platform in platforms_of(runs, suite) {
        let mine: Vec<&RunRecord> = runs
            .iter()
            .filter(|r| r.suite == suite && r.platform == platform)
            .collect();
        for variant in ordered(&mine, |r| scenario_variant(&r.scenario).1) {
            if let Some(c) = sensitivity_chart(runs, suite, platform, variant) {
                out.push((format!("{}.svg", file_stem(&[suite, platform, variant])), c));
            }
        }
    }
    out
}

/// Total time per client against the loss rate, for one platform of the
/// loss suite. Scenarios whose name carries no `N%` are left out; several
/// runs of one point are averaged. `None` when no point is left.
pub fn loss_chart(runs: &[RunRecord], suite: &str, platform: &str) -> Option<LineChart> {
    let these: Vec<&RunRecord> = runs
        .iter()
        .filter(|r| r.suite == suite && r.platform == platform)
        .collect();
    let mut series = Vec::new();
    for client in ordered(&these, |r| r.client.as_str()) {
        let mut points = Vec::new();
        let mut failures = Vec::new();
        for scenario in ordered(&these, |r| r.scenario.as_str()) {
            let Some(x) = loss_percent(scenario) else {
                continue;
            };
            let cell: Vec<&&RunRecord> = these
                .iter()
                .filter(|r| r.client == client && r.scenario == scenario)
                .collect();
            if cell.is_empty() {
                continue;
            }
            let y = mean(&cell.iter().map(|r| r.total_s).collect::<Vec<_>>());
            if cell.iter().all(|r| r.ok) {
                points.push((x, y));
            } else {
                failures.push((x, y));
            }
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        if !points.is_empty() || !failures.is_empty() {
            series.push(Series {
                name: client.to_owned(),
                points,
                failures,
                reference: client == "oracle",
            });
        }
    }
    (!series.is_empty()).then(|| LineChart {
        title: format!("{suite} suite, {platform}: total time to the target successes"),
        x_label: "loss rate each way (%)".into(),
        y_label: "total time (s, log scale); × = target not reached".into(),
        series,
        log_y: true,
    })
}

/// Completion time per client against the outage length R, for one
/// platform and scenario variant (`""` for `outage-Rs`, `fit` for
/// `outage-Rs/fit`) of the sensitivity suite; runs averaged; failed calls
/// as crosses at their failure time; the oracle dashed.
pub fn sensitivity_chart(
    runs: &[RunRecord],
    suite: &str,
    platform: &str,
    variant: &str,
) -> Option<LineChart> {
    let these: Vec<&RunRecord> = runs
        .iter()
        .filter(|r| {
            r.suite == suite && r.platform == platform && scenario_variant(&r.scenario).1 == variant
        })
        .collect();
    let mut series = Vec::new();
    for client in ordered(&these, |r| r.client.as_str()) {
        let mut points = Vec::new();
        let mut failures = Vec::new();
        for scenario in ordered(&these, |r| r.scenario.as_str()) {
            let Some(x) = first_number(scenario) else {
                continue;
            };
            let cell: Vec<&&RunRecord> = these
                .iter()
                .filter(|r| r.client == client && r.scenario == scenario)
                .collect();
            let ok: Vec<f64> = cell
                .iter()
                .filter(|r| r.ok && r.completion_s.is_some())
                .map(|r| end_time(r))
                .collect();
            let failed: Vec<f64> = cell
                .iter()
                .filter(|r| !(r.ok && r.completion_s.is_some()))
                .map(|r| end_time(r))
                .collect();
            if !ok.is_empty() {
                points.push((x, mean(&ok)));
            }
            if !failed.is_empty() {
                failures.push((x, mean(&failed)));
            }
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        if !points.is_empty() || !failures.is_empty() {
            series.push(Series {
                name: client.to_owned(),
                points,
                failures,
                reference: client == "oracle",
            });
        }
    }
    (!series.is_empty()).then(|| LineChart {
        title: if variant.is_empty() {
            format!("{suite} suite, {platform}: one call into an R-second outage")
        } else {
            format!("{suite} suite, {platform} ({variant}): one call into an R-second outage")
        },
        x_label: "outage length R (s)".into(),
        y_label: "completion time (s); × = call failed at".into(),
        series,
        log_y: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::table::tests::{rec, single};

    #[test]
    fn loss_chart_draws_every_client_with_a_legend() {
        let mut runs = Vec::new();
        for (i, loss) in ["3g", "3g+10%", "3g+30%", "3g+50%"].iter().enumerate() {
            for client in ["stn", "okhttp-2017", "oracle"] {
                let mut r = rec("loss", loss, "android", client, 0);
                r.total_s = 100.0 * (i as f64 + 1.0);
                runs.push(r);
            }
        }
        let chart = loss_chart(&runs, "loss", "android").unwrap();
        assert_eq!(chart.series.len(), 3);
        // "3g" has no loss rate and is not a point.
        assert_eq!(
            chart.series[0].points,
            vec![(10.0, 200.0), (30.0, 300.0), (50.0, 400.0)]
        );
        assert!(chart.series[2].reference);
        let svg = chart.to_svg(800, 500).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        for text in [
            "okhttp-2017",
            "oracle",
            "loss rate each way (%)",
            "total time (s, log scale)",
        ] {
            assert!(svg.contains(text), "missing {text}");
        }
        assert!(loss_chart(&runs, "loss", "ios").is_none());
        // stn's legend entry is drawn last: its line is on top.
        let at = |name: &str| {
            svg.find(&format!(">\n{name}\n</text>"))
                .unwrap_or_else(|| panic!("{name}"))
        };
        assert!(
            at("stn") > at("okhttp-2017") && at("stn") > at("oracle"),
            "{svg}"
        );
    }

    #[test]
    fn ticks_are_whole_numbers_when_they_are() {
        assert_eq!(tick(&10000.0), "10000");
        assert_eq!(tick(&0.0), "0");
        assert_eq!(tick(&2.5), "2.5");
        assert_eq!(tick(&0.125), "0.125");
    }

    #[test]
    fn sensitivity_chart_marks_failures() {
        let runs = vec![
            single("outage-5s", "ios", "nsurlsession", 0, Some(5.41), 0.0),
            single("outage-40s", "ios", "nsurlsession", 0, None, 60.0),
            single("outage-5s", "ios", "oracle", 0, Some(5.41), 0.0),
            single("outage-40s", "ios", "oracle", 0, Some(40.41), 0.0),
        ];
        let chart = sensitivity_chart(&runs, "sensitivity", "ios", "").unwrap();
        assert_eq!(chart.series[0].points, vec![(5.0, 5.41)]);
        assert_eq!(chart.series[0].failures, vec![(40.0, 60.0)]);
        let svg = chart.to_svg(800, 500).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("outage length R (s)"));
    }
}
