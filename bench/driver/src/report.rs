//! What a workload run reports: named metrics (a value, its unit, and which direction is
//! better) and correctness checks. Serialised as the JSON object `bench/run` reads.
//!
//! A metric whose value is `None` is one the server cannot provide (for instance a status
//! counter it does not have); `missing` says why, and the report shows "not supported".

use serde_json::{Value, json};

/// Which direction of a metric is an improvement; the harness computes ratios so that a
/// ratio above 1 always means Quill did better.
#[derive(Clone, Copy)]
pub enum Better {
    Higher,
    Lower,
}

pub struct Metric {
    pub name: String,
    pub value: Option<f64>,
    pub unit: &'static str,
    pub better: Better,
    /// Why there is no value.
    pub missing: Option<String>,
    /// The missing value is missing because the server lacks a feature (rather than, say, a
    /// counter that did not move in this run).
    pub unsupported: bool,
}

pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

#[derive(Default)]
pub struct Report {
    metrics: Vec<Metric>,
    checks: Vec<Check>,
    /// Named lists of raw samples (for a histogram in the report).
    series: Vec<(String, Vec<f64>)>,
}

impl Report {
    pub fn metric(&mut self, name: &str, value: f64, unit: &'static str, better: Better) {
        assert!(value.is_finite(), "metric {name} is not finite: {value}");
        self.metrics.push(Metric { name: name.to_owned(), value: Some(value), unit, better, missing: None, unsupported: false });
    }

    /// A metric the server cannot provide (it lacks the feature), with the reason.
    pub fn missing(&mut self, name: &str, unit: &'static str, better: Better, why: String) {
        self.metrics.push(Metric { name: name.to_owned(), value: None, unit, better, missing: Some(why), unsupported: true });
    }

    /// A metric with no value in this run although the server supports it, with the reason.
    pub fn no_value(&mut self, name: &str, unit: &'static str, better: Better, why: String) {
        self.metrics.push(Metric { name: name.to_owned(), value: None, unit, better, missing: Some(why), unsupported: false });
    }

    /// Records a metric when `value` is known, and the reason when it is not.
    pub fn maybe(&mut self, name: &str, value: Result<f64, String>, unit: &'static str, better: Better) {
        match value {
            Ok(value) => self.metric(name, value, unit, better),
            Err(why) => self.missing(name, unit, better, why),
        }
    }

    /// Every sample of a measurement, kept in the results for a histogram.
    pub fn series(&mut self, name: &str, samples: Vec<f64>) {
        self.series.push((name.to_owned(), samples));
    }

    pub fn check(&mut self, name: &str, ok: bool, detail: String) {
        self.checks.push(Check { name: name.to_owned(), ok, detail });
    }

    pub fn to_json(&self) -> Value {
        let metrics: Vec<Value> = self
            .metrics
            .iter()
            .map(|m| {
                json!({
                    "name": m.name,
                    "value": m.value,
                    "unit": m.unit,
                    "better": match m.better { Better::Higher => "higher", Better::Lower => "lower" },
                    "missing": m.missing,
                    "unsupported": m.unsupported,
                })
            })
            .collect();
        let checks: Vec<Value> = self.checks.iter().map(|c| json!({"name": c.name, "ok": c.ok, "detail": c.detail})).collect();
        let series: serde_json::Map<String, Value> = self.series.iter().map(|(n, v)| (n.clone(), json!(v))).collect();
        json!({ "metrics": metrics, "checks": checks, "series": series })
    }
}

/// Mean of durations in microseconds.
pub fn mean_us(samples: &[std::time::Duration]) -> f64 {
    assert!(!samples.is_empty(), "mean of no samples");
    samples.iter().map(|d| d.as_secs_f64() * 1e6).sum::<f64>() / samples.len() as f64
}

/// The `fraction` quantile (nearest rank) of durations, in microseconds.
pub fn quantile_us(samples: &[std::time::Duration], fraction: f64) -> f64 {
    assert!(!samples.is_empty(), "quantile of no samples");
    assert!((0.0..=1.0).contains(&fraction), "quantile fraction out of range: {fraction}");
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = ((fraction * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1e6
}
