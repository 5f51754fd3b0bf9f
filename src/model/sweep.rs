//! The sweep file (`cauda.sweep/1`): a search for the load a target takes
//! within a latency objective, written beside one run file per step.
//!
//! It holds what was asked (the objective, the probe and its arguments, the
//! range, the budget), each step as measured (the value varied, offered and
//! achieved rates, the percentiles with their intervals, the generator's
//! lag and the objective's verdict), and the capacity found: the highest
//! value wholly below the objective and the lowest wholly above it, with
//! why the search ended. The step files are named relative to it.

use serde::{Deserialize, Serialize};

use super::run::Tool;

/// The schema identifier written in every sweep file.
pub const SWEEP_SCHEMA: &str = "cauda.sweep/1";

/// What the sweep varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Knob {
    /// The offered rate (`--rate`), operations per second: open loop.
    Rate,
    /// The queue depth (`disk --iodepth`), closed loop: fio's
    /// `latency_target` case.
    Iodepth,
}

impl Knob {
    /// The probe flag that carries the value.
    pub fn flag(self) -> &'static str {
        match self {
            Knob::Rate => "--rate",
            Knob::Iodepth => "--iodepth",
        }
    }

    /// The value as the probe flag takes it (`2500/s`, `16`).
    pub fn argument(self, value: f64) -> String {
        match self {
            Knob::Rate => format!("{}/s", trim_float(value)),
            Knob::Iodepth => format!("{}", value.round() as u64),
        }
    }
}

fn trim_float(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Where a measured distribution stands against the objective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The percentile's whole confidence interval meets the objective.
    Below,
    /// The whole interval misses it.
    Above,
    /// The interval holds the threshold: the sample cannot tell.
    Straddles,
    /// Too few samples to bound the percentile at all.
    Unsupported,
}

/// One percentile of a step, with its confidence interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    /// The percentile, e.g. `99.9`.
    pub percentile: String,
    /// Samples in the distribution.
    pub count: u64,
    /// The point estimate, ns (absent with no samples).
    pub value_ns: Option<u64>,
    /// Lower end of its confidence interval, ns (absent when unbounded).
    pub lower_ns: Option<u64>,
    /// Upper end, ns (absent when unbounded).
    pub upper_ns: Option<u64>,
    /// Against the objective's latency (for the other percentiles too: the
    /// whole curve is judged against the same line).
    pub verdict: Verdict,
}

/// Why the search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ending {
    /// The bracket lies within the precision.
    Converged,
    /// No gap inside the bracket is wide enough to measure: the objective's
    /// percentile is within its interval of the threshold across it.
    Unresolved,
    /// The budget would not hold another step.
    Budget,
    /// Interrupted (Ctrl-C).
    Interrupted,
    /// The objective holds at every value up to the highest allowed.
    NeverViolated,
    /// The generator fell behind before the objective was violated.
    GeneratorLimit,
    /// The objective is already missed at the lowest value.
    ViolatedAtLowest,
    /// A step failed.
    Failed,
}

/// What one value was found to be, all its repeats pooled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepClass {
    /// The objective is met, interval and all.
    Below,
    /// The objective is missed, interval and all.
    Above,
    /// The sample could not tell.
    Unsure,
    /// The generator, not the target, fell behind: not the target's figure.
    GeneratorLimited,
}

/// One value measured (its repeats pooled).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepStep {
    /// The value varied: operations per second, or a queue depth.
    pub value: f64,
    /// The run files of its measurements, relative to the sweep file, in
    /// the order they ran.
    pub runs: Vec<String>,
    /// When each measurement ran, as its position in the sweep (1-based),
    /// so that repeats in alternating order show drift.
    pub order: Vec<usize>,
    /// Measuring time, all repeats, ns.
    pub measured_ns: u64,
    /// Operations offered per second (open loop; absent closed loop).
    pub offered_per_s: Option<f64>,
    /// Operations completed per second in the judged series.
    pub achieved_per_s: f64,
    /// The generator's lag (how late operations were issued), p99, ns,
    /// where the probe records it.
    pub lag_p99_ns: Option<u64>,
    /// Why the generator, not the target, is blamed for this step, if it is.
    pub generator_fell_behind: Option<String>,
    /// Why the target is named as the limit (it held the generator's
    /// slots and completed less than was offered), if it is.
    #[serde(default)]
    pub saturated: Option<String>,
    /// p50, p99, p99.9 and the objective's percentile of the judged series.
    pub percentiles: Vec<Judged>,
    /// The objective's percentile against the objective.
    pub objective: Judged,
    /// The class the search used.
    pub class: StepClass,
    /// The repeats' own verdicts disagreed (drift, or a knee this close).
    #[serde(default)]
    pub repeats_disagree: bool,
}

/// The capacity found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    /// The highest value wholly below the objective.
    pub below: Option<f64>,
    /// Achieved operations per second there.
    pub below_achieved_per_s: Option<f64>,
    /// The lowest value wholly above it.
    pub above: Option<f64>,
    /// The lowest value where the generator fell behind.
    pub generator_ceiling: Option<f64>,
    /// Why the search ended.
    pub ending: Ending,
    /// The finding in words.
    pub finding: String,
}

/// A sweep, as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepFile {
    /// Always [`SWEEP_SCHEMA`].
    pub schema: String,
    /// The cauda that ran it.
    pub tool: Tool,
    /// When it started (RFC 3339, UTC).
    pub start_time: String,
    /// The objective as cauda reads it, e.g. `p99.9<=1ms`.
    pub objective: String,
    /// Its percentile, e.g. `99.9`.
    pub percentile: String,
    /// Its latency, ns.
    pub threshold_ns: u64,
    /// `<` rather than `<=`.
    pub strict: bool,
    /// Confidence level of the intervals.
    pub confidence: f64,
    /// The probe swept.
    pub probe: String,
    /// The probe's arguments as given (the sweep adds the varied flag,
    /// `--runtime`, `--quiet` and `-o`).
    pub probe_args: Vec<String>,
    /// The series judged.
    pub series: String,
    /// What was varied.
    pub knob: Knob,
    /// The lowest and highest value allowed.
    pub from: f64,
    /// See `from`.
    pub to: f64,
    /// The bracket's half-width the search aims for, as a fraction.
    pub precision: f64,
    /// The time budget, ns.
    pub budget_ns: u64,
    /// Samples expected above the objective's percentile in each step.
    pub samples_above: u64,
    /// The steps, by value.
    pub steps: Vec<SweepStep>,
    /// The capacity found.
    pub capacity: Capacity,
    /// Measuring time of all steps, ns.
    pub measuring_ns: u64,
    /// Wall time of the whole sweep, ns.
    pub elapsed_ns: u64,
}

/// The largest sweep file read (a sweep of a thousand steps is ~2 MB).
const MAX_SWEEP_BYTES: u64 = 64 << 20;

impl SweepFile {
    /// Reads `path` when it is a sweep file: `Ok(None)` when it is another
    /// input (its first bytes do not name the sweep schema, or its own
    /// `schema` is another's) or cannot be opened (the other readers refuse
    /// it in their own words), an error naming the file and the field when
    /// it claims the sweep schema but does not hold a sweep cauda wrote.
    pub fn read(path: &std::path::Path) -> Result<Option<SweepFile>, String> {
        use std::io::Read;
        let shown = path.display();
        let mut head = Vec::with_capacity(512);
        let Ok(file) = crate::input::open_regular(path) else {
            return Ok(None);
        };
        if file.take(512).read_to_end(&mut head).is_err() {
            return Ok(None);
        }
        let head = String::from_utf8_lossy(&head);
        if !head.contains(SWEEP_SCHEMA) {
            return Ok(None);
        }
        let bytes = crate::input::read_regular(path, MAX_SWEEP_BYTES)
            .map_err(|e| format!("{shown}: {e}"))?;
        let damaged = |why: String| {
            format!(
                "{shown}: a damaged sweep file ({why}); the step run files beside it still hold \
                 every measurement"
            )
        };
        match serde_json::from_slice::<SweepFile>(&bytes) {
            Ok(sweep) if sweep.schema == SWEEP_SCHEMA => {
                sweep.check().map_err(damaged)?;
                Ok(Some(sweep))
            }
            Ok(_) => Ok(None),
            Err(e) => {
                // Only the schema: a run file that merely mentions the
                // sweep schema (in a label, say) is another input.
                #[derive(Deserialize)]
                struct Schema {
                    #[serde(default)]
                    schema: Option<serde_json::Value>,
                }
                let claims = match serde_json::from_slice::<Schema>(&bytes) {
                    Ok(doc) => doc.schema.as_ref().and_then(|s| s.as_str()) == Some(SWEEP_SCHEMA),
                    Err(_) => names_sweep_schema(&head),
                };
                if claims {
                    Err(damaged(e.to_string()))
                } else {
                    Ok(None)
                }
            }
        }
    }

    /// What a sweep cauda wrote always holds; the first field that does
    /// not, named (values the analysis and the curve divide by, scale by,
    /// or order by).
    pub fn check(&self) -> Result<(), String> {
        let rate_like = |field: &str, value: f64| {
            if value.is_finite() && value > 0.0 && value <= MAX_VALUE {
                Ok(())
            } else {
                Err(format!(
                    "{field} is {}; expected above 0 and at most 1e10",
                    shown(value)
                ))
            }
        };
        check_percentile("percentile", &self.percentile)?;
        let op = if self.strict { "<" } else { "<=" };
        let objective = format!(
            "p{}{op}{}",
            self.percentile,
            crate::units::format_duration_compact(self.threshold_ns)
        );
        if self.threshold_ns == 0 || self.objective != objective {
            return Err(format!(
                "objective '{}' does not match percentile, threshold_ns and strict ({objective})",
                self.objective
            ));
        }
        if !(self.confidence > 0.5 && self.confidence < 1.0) {
            return Err(format!(
                "confidence is {}; expected between 0.5 and 1",
                self.confidence
            ));
        }
        if !(self.precision > 0.0 && self.precision < 0.5) {
            return Err(format!(
                "precision is {}; expected between 0 and 0.5",
                self.precision
            ));
        }
        rate_like("from", self.from)?;
        rate_like("to", self.to)?;
        if self.steps.len() > MAX_STEPS {
            return Err(format!(
                "{} steps; a sweep holds at most {MAX_STEPS}",
                self.steps.len()
            ));
        }
        let mut previous = 0.0;
        for (i, step) in self.steps.iter().enumerate() {
            step.check(previous)
                .map_err(|why| format!("steps[{i}]: {why}"))?;
            previous = step.value;
        }
        let c = &self.capacity;
        for (field, value) in [
            ("capacity.below", c.below),
            ("capacity.above", c.above),
            ("capacity.generator_ceiling", c.generator_ceiling),
        ] {
            value.map_or(Ok(()), |v| rate_like(field, v))?;
        }
        if let Some(v) = c.below_achieved_per_s
            && !(v.is_finite() && v >= 0.0)
        {
            return Err(format!("capacity.below_achieved_per_s is {}", shown(v)));
        }
        if let (Some(below), Some(above)) = (c.below, c.above)
            && below >= above
        {
            return Err(format!(
                "capacity.below ({below}) is not under capacity.above ({above}): the highest \
                 value that met the objective lies under the lowest that missed it"
            ));
        }
        Ok(())
    }
}

impl SweepStep {
    /// One step's values (`previous`: the value of the step before it).
    fn check(&self, previous: f64) -> Result<(), String> {
        if !(self.value.is_finite() && self.value > previous && self.value <= MAX_VALUE) {
            return Err(format!(
                "value {} is not above the previous step's ({}) and at most 1e10; steps \
                 are written in rising order",
                shown(self.value),
                shown(previous)
            ));
        }
        let finite = |field: &str, v: f64| {
            if (0.0..=MAX_VALUE).contains(&v) {
                Ok(())
            } else {
                Err(format!("{field} is {}", shown(v)))
            }
        };
        finite("achieved_per_s", self.achieved_per_s)?;
        if let Some(offered) = self.offered_per_s {
            finite("offered_per_s", offered)?;
        }
        if self.runs.is_empty() || self.runs.len() != self.order.len() {
            return Err("runs and order must name the same, at least one, runs".into());
        }
        for (i, judged) in self.percentiles.iter().enumerate() {
            check_percentile(&format!("percentiles[{i}].percentile"), &judged.percentile)?;
            judged
                .check()
                .map_err(|why| format!("percentiles[{i}]: {why}"))?;
        }
        check_percentile("objective.percentile", &self.objective.percentile)?;
        self.objective
            .check()
            .map_err(|why| format!("objective: {why}"))
    }
}

impl Judged {
    fn check(&self) -> Result<(), String> {
        if let (Some(lower), Some(upper)) = (self.lower_ns, self.upper_ns)
            && lower > upper
        {
            return Err(format!("lower_ns {lower} is above upper_ns {upper}"));
        }
        Ok(())
    }
}

/// A percentile key as cauda writes it: a number strictly between 0 and
/// 100 (`99.9`).
fn check_percentile(field: &str, key: &str) -> Result<(), String> {
    let ok = key.len() <= 24
        && key.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && key.parse::<f64>().is_ok_and(|p| p > 0.0 && p < 100.0);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{field} '{}' is not a percentile (a number between 0 and 100, e.g. 99.9)",
            key.chars().take(40).collect::<String>()
        ))
    }
}

/// Whether the first bytes give the sweep schema as the `schema` field
/// (whatever the spacing: a file reformatted by jq -c), for a file too
/// damaged to parse.
fn names_sweep_schema(head: &str) -> bool {
    head.match_indices("\"schema\"").any(|(at, key)| {
        let rest = head[at + key.len()..].trim_start();
        rest.strip_prefix(':').is_some_and(|rest| {
            rest.trim_start()
                .starts_with(&format!("\"{SWEEP_SCHEMA}\""))
        })
    })
}

/// A value as an error shows it: whole digits up to the limit, 1e308
/// beyond.
fn shown(value: f64) -> String {
    if value.abs() <= MAX_VALUE {
        format!("{value}")
    } else {
        format!("{value:e}")
    }
}

/// The highest rate (or depth) a sweep file may hold: above what any
/// probe issues (1G/s) and any queue depth.
const MAX_VALUE: f64 = 1e10;

/// The most steps a sweep file may hold (a sweep takes tens).
const MAX_STEPS: usize = 10_000;

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(key: &str) -> Judged {
        Judged {
            percentile: key.into(),
            count: 3000,
            value_ns: Some(100_000),
            lower_ns: Some(90_000),
            upper_ns: Some(120_000),
            verdict: Verdict::Below,
        }
    }

    fn step(value: f64) -> SweepStep {
        SweepStep {
            value,
            runs: vec!["step-01-1000pers.json".into()],
            order: vec![1],
            measured_ns: 3_000_000_000,
            offered_per_s: Some(value),
            achieved_per_s: value,
            lag_p99_ns: None,
            generator_fell_behind: None,
            saturated: None,
            percentiles: ["50", "99", "99.9"].map(judged).to_vec(),
            objective: judged("99"),
            class: StepClass::Below,
            repeats_disagree: false,
        }
    }

    fn sweep() -> serde_json::Value {
        serde_json::to_value(SweepFile {
            schema: SWEEP_SCHEMA.into(),
            tool: Tool::this(),
            start_time: String::new(),
            objective: "p99<=1ms".into(),
            percentile: "99".into(),
            threshold_ns: 1_000_000,
            strict: false,
            confidence: 0.95,
            probe: "net".into(),
            probe_args: vec![],
            series: "rtt".into(),
            knob: Knob::Rate,
            from: 1000.0,
            to: 1e6,
            precision: 0.05,
            budget_ns: 600_000_000_000,
            samples_above: 30,
            steps: vec![step(1000.0), step(2000.0)],
            capacity: Capacity {
                below: Some(1000.0),
                below_achieved_per_s: Some(1000.0),
                above: Some(2000.0),
                generator_ceiling: None,
                ending: Ending::Converged,
                finding: String::new(),
            },
            measuring_ns: 6_000_000_000,
            elapsed_ns: 7_000_000_000,
        })
        .unwrap()
    }

    fn read(text: &str) -> Result<Option<SweepFile>, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sweep.json");
        std::fs::write(&path, text).unwrap();
        SweepFile::read(&path)
    }

    #[test]
    fn a_sweep_is_read_however_it_is_spaced_and_a_mention_is_not_one() {
        let good = sweep();
        assert!(
            read(&serde_json::to_string_pretty(&good).unwrap())
                .unwrap()
                .is_some()
        );
        // jq -c: no space after the colon.
        assert!(
            read(&serde_json::to_string(&good).unwrap())
                .unwrap()
                .is_some()
        );
        let cut = serde_json::to_string(&good).unwrap();
        let e = read(&cut[..400]).unwrap_err();
        assert!(e.contains("a damaged sweep file"), "{e}");
        // A run file whose label mentions the schema is another input.
        let run =
            r#"{"schema": "cauda.run/1", "labels": {"note": "\"schema\": \"cauda.sweep/1\""}}"#;
        assert_eq!(read(run).unwrap(), None);
    }

    #[test]
    fn a_sweep_whose_values_cauda_never_writes_is_refused_naming_the_field() {
        let cases: [(&str, serde_json::Value, &str); 12] = [
            ("/capacity/below", 5000.0.into(), "capacity.below (5000)"),
            ("/capacity/below", (-5.0).into(), "capacity.below is -5"),
            ("/capacity/above", 1e308.into(), "capacity.above is 1e308"),
            ("/capacity/above", 0.0.into(), "capacity.above is 0"),
            ("/steps/0/value", 3000.0.into(), "steps[1]: value 2000"),
            (
                "/steps/1/achieved_per_s",
                1e308.into(),
                "steps[1]: achieved_per_s",
            ),
            ("/percentile", "banana".into(), "percentile 'banana'"),
            (
                "/steps/0/objective/percentile",
                "101".into(),
                "steps[0]: objective.percentile",
            ),
            ("/threshold_ns", 0.into(), "does not match"),
            ("/objective", "p50<=1s".into(), "does not match"),
            ("/confidence", 7.0.into(), "confidence is 7"),
            ("/to", 0.0.into(), "to is 0"),
        ];
        for (pointer, value, says) in cases {
            let mut doc = sweep();
            *doc.pointer_mut(pointer).unwrap() = value;
            let e = read(&serde_json::to_string(&doc).unwrap()).unwrap_err();
            assert!(e.contains(says), "{pointer}: {e}");
        }
        let mut doc = sweep();
        let one = doc["steps"][0].clone();
        doc["steps"] = serde_json::Value::Array(
            (1..=10_001)
                .map(|i| {
                    let mut s = one.clone();
                    s["value"] = (i as f64).into();
                    s
                })
                .collect(),
        );
        let e = read(&serde_json::to_string(&doc).unwrap()).unwrap_err();
        assert!(e.contains("at most 10000"), "{e}");
    }
}
