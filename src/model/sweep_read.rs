//! Reading a sweep file: recognising one among other inputs, and the
//! checks that refuse a damaged or forged one, naming the field, before
//! `analyze`, `report` or `compare` work with its values.

use serde::Deserialize;

use super::sweep::{Judged, SWEEP_SCHEMA, SweepFile, SweepStep};

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
    use crate::model::Tool;
    use crate::model::sweep::{Capacity, Ending, Knob, StepClass, Verdict};

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
