//! A `metrics` recorder that keeps every series in memory and renders them in the Prometheus
//! text format (version 0.0.4), for node_exporter's textfile collector.

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The buckets of every histogram, in seconds: from a fast store request to an hour's wait.
const BUCKETS: [f64; 16] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
];

/// A series: its labels, sorted by name.
type Labels = Vec<(String, String)>;

/// What the recorder holds of one metric name.
#[derive(Default)]
struct Family {
    help: Option<String>,
    counters: BTreeMap<Labels, Arc<Count>>,
    gauges: BTreeMap<Labels, Arc<Level>>,
    histograms: BTreeMap<Labels, Arc<Buckets>>,
}

/// Every series, by name; and the labels added to all of them (`--metrics-label`).
#[derive(Default)]
pub(crate) struct TextRecorder {
    families: Mutex<BTreeMap<String, Family>>,
    extra: Labels,
}

#[derive(Default)]
struct Count(AtomicU64);

impl CounterFn for Count {
    fn increment(&self, value: u64) {
        self.0.fetch_add(value, Ordering::Relaxed);
    }
    fn absolute(&self, value: u64) {
        self.0.fetch_max(value, Ordering::Relaxed);
    }
}

/// A gauge's value, as the bits of an `f64`.
#[derive(Default)]
struct Level(AtomicU64);

impl Level {
    fn update(&self, f: impl Fn(f64) -> f64) {
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some(f(f64::from_bits(bits)).to_bits())
            });
    }
    fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

impl GaugeFn for Level {
    fn increment(&self, value: f64) {
        self.update(|v| v + value);
    }
    fn decrement(&self, value: f64) {
        self.update(|v| v - value);
    }
    fn set(&self, value: f64) {
        self.0.store(value.to_bits(), Ordering::Relaxed);
    }
}

/// A histogram: how many samples fell at or below each bound, their sum and count.
#[derive(Default)]
struct Buckets(Mutex<([u64; BUCKETS.len()], f64, u64)>);

impl HistogramFn for Buckets {
    fn record(&self, value: f64) {
        let mut b = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for (i, bound) in BUCKETS.iter().enumerate() {
            if value <= *bound {
                b.0[i] += 1;
            }
        }
        b.1 += value;
        b.2 += 1;
    }
}

impl TextRecorder {
    /// A recorder that adds `extra` to every series.
    pub(crate) fn new(extra: Labels) -> TextRecorder {
        TextRecorder {
            families: Mutex::default(),
            extra,
        }
    }

    fn family<T>(&self, name: &str, f: impl FnOnce(&mut Family) -> T) -> T {
        let mut families = self.families.lock().unwrap_or_else(PoisonError::into_inner);
        f(families.entry(name.to_owned()).or_default())
    }

    fn describe(&self, key: &KeyName, description: &SharedString) {
        self.family(key.as_str(), |f| f.help = Some(description.to_string()));
    }

    fn labels(&self, key: &Key) -> Labels {
        let mut labels: Labels = key
            .labels()
            .map(|l| (l.key().to_owned(), l.value().to_owned()))
            .chain(self.extra.iter().cloned())
            .collect();
        labels.sort();
        labels
    }

    /// Every series in the text format: `# HELP`, `# TYPE`, then one line a series (a
    /// histogram's buckets, sum and count).
    pub(crate) fn render(&self) -> String {
        let families = self.families.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = String::new();
        for (name, f) in families.iter() {
            let kind = if !f.counters.is_empty() {
                "counter"
            } else if !f.gauges.is_empty() {
                "gauge"
            } else if !f.histograms.is_empty() {
                "histogram"
            } else {
                continue;
            };
            let help = f.help.as_deref().unwrap_or("sets3lock");
            let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (labels, c) in &f.counters {
                let _ = writeln!(
                    out,
                    "{name}{} {}",
                    braces(labels, None),
                    c.0.load(Ordering::Relaxed)
                );
            }
            for (labels, g) in &f.gauges {
                let _ = writeln!(out, "{name}{} {}", braces(labels, None), number(g.get()));
            }
            for (labels, h) in &f.histograms {
                let (buckets, sum, count) = *h.0.lock().unwrap_or_else(PoisonError::into_inner);
                for (bound, n) in BUCKETS.iter().zip(buckets) {
                    let le = number(*bound);
                    let _ = writeln!(out, "{name}_bucket{} {n}", braces(labels, Some(&le)));
                }
                let _ = writeln!(out, "{name}_bucket{} {count}", braces(labels, Some("+Inf")));
                let _ = writeln!(out, "{name}_sum{} {}", braces(labels, None), number(sum));
                let _ = writeln!(out, "{name}_count{} {count}", braces(labels, None));
            }
        }
        out
    }
}

impl Recorder for TextRecorder {
    fn describe_counter(&self, key: KeyName, _: Option<Unit>, description: SharedString) {
        self.describe(&key, &description);
    }
    fn describe_gauge(&self, key: KeyName, _: Option<Unit>, description: SharedString) {
        self.describe(&key, &description);
    }
    fn describe_histogram(&self, key: KeyName, _: Option<Unit>, description: SharedString) {
        self.describe(&key, &description);
    }
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let labels = self.labels(key);
        let c = self.family(key.name(), |f| {
            f.counters.entry(labels).or_default().clone()
        });
        Counter::from_arc(c)
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        let labels = self.labels(key);
        let g = self.family(key.name(), |f| f.gauges.entry(labels).or_default().clone());
        Gauge::from_arc(g)
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        let labels = self.labels(key);
        let h = self.family(key.name(), |f| {
            f.histograms.entry(labels).or_default().clone()
        });
        Histogram::from_arc(h)
    }
}

/// `{a="1",b="2"}` (with `le` last, for a bucket), or nothing without labels.
fn braces(labels: &Labels, le: Option<&str>) -> String {
    let mut parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_value(v)))
        .collect();
    if let Some(le) = le {
        parts.push(format!("le=\"{le}\""));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

/// A sample value as the format writes it.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

fn escape_value(v: &str) -> String {
    v.replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

fn escape_help(v: &str) -> String {
    v.replace('\\', r"\\").replace('\n', r"\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_each_kind_with_its_labels_escaped() {
        let r = TextRecorder::new(vec![("job".into(), "nightly".into())]);
        metrics::with_local_recorder(&r, || {
            metrics::describe_counter!("x_total", "Xs.");
            metrics::counter!("x_total", "lock" => "s3://b/\"k\"").increment(2);
            metrics::gauge!("held").set(1.5);
            metrics::histogram!("wait_seconds").record(0.3);
            metrics::histogram!("wait_seconds").record(7.0);
        });
        let text = r.render();
        assert!(
            text.contains("# HELP x_total Xs.\n# TYPE x_total counter\n"),
            "{text}"
        );
        assert!(
            text.contains("x_total{job=\"nightly\",lock=\"s3://b/\\\"k\\\"\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE held gauge\nheld{job=\"nightly\"} 1.5\n"),
            "{text}"
        );
        assert!(
            text.contains("wait_seconds_bucket{job=\"nightly\",le=\"0.25\"} 0\n"),
            "{text}"
        );
        assert!(
            text.contains("wait_seconds_bucket{job=\"nightly\",le=\"0.5\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("wait_seconds_bucket{job=\"nightly\",le=\"+Inf\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("wait_seconds_sum{job=\"nightly\"} 7.3\n"),
            "{text}"
        );
        assert!(
            text.contains("wait_seconds_count{job=\"nightly\"} 2\n"),
            "{text}"
        );
    }
}
