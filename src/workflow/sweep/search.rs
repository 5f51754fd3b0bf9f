//! Where to measure next: the search for the knee, apart from how a step is
//! measured. Geometric steps (×2) from the lowest value bracket the knee,
//! then the widest gap inside the bracket is halved geometrically until the
//! bracket lies within the precision, no gap is left that a measurement
//! could narrow, or the caller runs out of budget.
//!
//! The bracket is the highest value whose objective percentile lies wholly
//! below the objective (its confidence interval included) and the lowest
//! whose interval lies wholly above. Values the sample could not judge sit
//! between them; values where the generator fell behind are a ceiling the
//! search never measures at or beyond again, and never count as the
//! target's capacity.

pub use crate::model::sweep::Ending;
use crate::model::sweep::StepClass as Class;

/// The search's state: the values measured so far and their classes.
#[derive(Clone, Debug)]
pub struct Search {
    from: f64,
    to: f64,
    precision: f64,
    integer: bool,
    points: Vec<(f64, Class)>,
}

/// What to do next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Next {
    /// Measure at this value.
    Measure(f64),
    /// Stop.
    Done(Ending),
}

/// The capacity found so far.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bracket {
    /// The highest value wholly below the objective.
    pub below: Option<f64>,
    /// The lowest value wholly above it.
    pub above: Option<f64>,
    /// The lowest value where the generator fell behind.
    pub ceiling: Option<f64>,
}

impl Search {
    /// A search over `from..=to` (both > 0, `from < to`), stopping when the
    /// bracket's ends are within ±`precision` of its middle; `integer`
    /// values only (queue depths) when asked.
    pub fn new(from: f64, to: f64, precision: f64, integer: bool) -> Search {
        Search {
            from,
            to,
            precision,
            integer,
            points: Vec::new(),
        }
    }

    /// Records (or, for a value measured again, replaces) a class.
    pub fn record(&mut self, value: f64, class: Class) {
        match self.points.iter_mut().find(|(v, _)| *v == value) {
            Some(point) => point.1 = class,
            None => self.points.push((value, class)),
        }
        self.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }

    /// The bracket from what was measured.
    pub fn bracket(&self) -> Bracket {
        let lowest = |class| {
            self.points
                .iter()
                .find(|(_, c)| *c == class)
                .map(|(v, _)| *v)
        };
        let ceiling = lowest(Class::GeneratorLimited);
        let above = lowest(Class::Above).filter(|a| ceiling.is_none_or(|c| *a < c));
        let limit = above.or(ceiling).unwrap_or(f64::INFINITY);
        let below = self
            .points
            .iter()
            .rev()
            .find(|(v, c)| *c == Class::Below && *v < limit)
            .map(|(v, _)| *v);
        Bracket {
            below,
            above,
            ceiling,
        }
    }

    /// What to measure next, or why to stop.
    pub fn next(&self) -> Next {
        if self.points.is_empty() {
            return Next::Measure(self.from);
        }
        let bracket = self.bracket();
        let Some(above) = bracket.above else {
            // Still bracketing: double, up to `to`, and below the ceiling
            // (narrowing it instead when doubling would reach it).
            let limit = bracket.ceiling.unwrap_or(f64::INFINITY);
            let top = self
                .points
                .iter()
                .filter(|(v, _)| *v < limit)
                .map(|(v, _)| *v)
                .fold(0.0, f64::max);
            if top == 0.0 || top * 2.0 >= limit {
                return self.between(top, limit, Ending::GeneratorLimit);
            }
            if top >= self.to {
                let met = self
                    .points
                    .iter()
                    .any(|&(v, c)| v == top && c == Class::Below);
                return Next::Done(if met {
                    Ending::NeverViolated
                } else {
                    Ending::Unresolved
                });
            }
            return Next::Measure(self.round((top * 2.0).min(self.to)));
        };
        let Some(below) = bracket.below else {
            return Next::Done(Ending::ViolatedAtLowest);
        };
        if (above - below) / (above + below) <= self.precision {
            return Next::Done(Ending::Converged);
        }
        // The widest gap between measured values inside the bracket.
        let inside: Vec<f64> = self
            .points
            .iter()
            .map(|(v, _)| *v)
            .filter(|v| (below..=above).contains(v))
            .collect();
        let (a, b) = inside
            .windows(2)
            .map(|w| (w[0], w[1]))
            .max_by(|x, y| (x.1 / x.0).total_cmp(&(y.1 / y.0)))
            .unwrap_or((below, above));
        self.between(a, b, Ending::Unresolved)
    }

    /// The geometric middle of a gap, or `ending` when the gap is too
    /// narrow to hold a value worth measuring.
    fn between(&self, a: f64, b: f64, ending: Ending) -> Next {
        // Nothing lies between zero and the lowest value: the generator
        // fell behind at `--from` already.
        if a <= 0.0 {
            return Next::Done(ending);
        }
        let middle = self.round((a * b).sqrt());
        let wide = (b - a) / (b + a) > self.precision / 2.0;
        if wide && middle > a && middle < b {
            Next::Measure(middle)
        } else {
            Next::Done(ending)
        }
    }

    fn round(&self, value: f64) -> f64 {
        if self.integer {
            value.round().max(1.0)
        } else {
            if value <= 0.0 || !value.is_finite() {
                return value;
            }
            // Rates to three significant digits: step names stay readable.
            let magnitude = 10f64.powi(value.log10().floor() as i32 - 2);
            (value / magnitude).round() * magnitude
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search against a target whose knee is at `knee` (below it
    /// met, above missed), with `unsure` around it and a generator that
    /// cannot offer more than `generator`.
    fn drive(search: &mut Search, knee: f64, unsure: f64, generator: f64) -> (Ending, usize) {
        let mut steps = 0;
        loop {
            match search.next() {
                Next::Done(ending) => return (ending, steps),
                Next::Measure(v) => {
                    steps += 1;
                    assert!(steps < 60, "the search does not end");
                    let class = if v >= generator {
                        Class::GeneratorLimited
                    } else if (v - knee).abs() <= unsure {
                        Class::Unsure
                    } else if v < knee {
                        Class::Below
                    } else {
                        Class::Above
                    };
                    search.record(v, class);
                }
            }
        }
    }

    #[test]
    fn the_bracket_closes_on_the_knee_within_the_precision() {
        for knee in [150.0, 1_234.0, 9_999.0, 80_000.0] {
            let mut s = Search::new(100.0, 1e6, 0.05, false);
            let (ending, steps) = drive(&mut s, knee, 0.0, f64::INFINITY);
            assert_eq!(ending, Ending::Converged, "knee {knee}");
            let b = s.bracket();
            let (lo, hi) = (b.below.unwrap(), b.above.unwrap());
            assert!(lo < knee && knee <= hi, "knee {knee}: [{lo}, {hi}]");
            assert!((hi - lo) / (hi + lo) <= 0.05);
            assert!(steps <= 20, "{steps} steps for knee {knee}");
        }
    }

    #[test]
    fn the_ends_of_the_range_and_the_generator_say_what_they_mean() {
        let mut s = Search::new(100.0, 10_000.0, 0.05, false);
        assert_eq!(
            drive(&mut s, 1e9, 0.0, f64::INFINITY).0,
            Ending::NeverViolated
        );
        assert_eq!(s.bracket().below, Some(10_000.0));

        let mut s = Search::new(100.0, 10_000.0, 0.05, false);
        assert_eq!(
            drive(&mut s, 50.0, 0.0, f64::INFINITY).0,
            Ending::ViolatedAtLowest
        );

        // The generator tops out at 3,000/s, the target at 20,000/s.
        let mut s = Search::new(100.0, 1e6, 0.05, false);
        assert_eq!(
            drive(&mut s, 20_000.0, 0.0, 3_000.0).0,
            Ending::GeneratorLimit
        );
        let b = s.bracket();
        assert_eq!(b.above, None);
        assert!(
            b.below.unwrap() < 3_000.0 && b.below.unwrap() > 2_700.0,
            "{b:?}"
        );
        assert!(b.ceiling.unwrap() >= 3_000.0);
    }

    #[test]
    fn a_generator_behind_at_the_first_value_ends_the_search() {
        let mut s = Search::new(1000.0, 1e6, 0.05, false);
        assert_eq!(drive(&mut s, 1e9, 0.0, 500.0).0, Ending::GeneratorLimit);
        assert_eq!(s.bracket().below, None);
        let mut s = Search::new(1.0, 256.0, 0.05, true);
        assert_eq!(drive(&mut s, 1e9, 0.0, 0.5).0, Ending::GeneratorLimit);
    }

    #[test]
    fn a_knee_the_sample_cannot_place_ends_unresolved_not_forever() {
        let mut s = Search::new(100.0, 1e6, 0.01, false);
        let (ending, _) = drive(&mut s, 5_000.0, 600.0, f64::INFINITY);
        assert_eq!(ending, Ending::Unresolved);
        let b = s.bracket();
        assert!(
            b.below.unwrap() <= 4_400.0 && b.above.unwrap() >= 5_600.0,
            "{b:?}"
        );
    }

    #[test]
    fn queue_depths_stay_whole_and_stop_at_neighbours() {
        let mut s = Search::new(1.0, 256.0, 0.05, true);
        let (ending, _) = drive(&mut s, 11.5, 0.0, f64::INFINITY);
        let b = s.bracket();
        assert_eq!((b.below, b.above), (Some(11.0), Some(12.0)), "{ending:?}");
        assert!(matches!(ending, Ending::Converged | Ending::Unresolved));
    }

    #[test]
    fn a_value_measured_again_takes_its_new_class() {
        let mut s = Search::new(100.0, 1e6, 0.05, false);
        s.record(100.0, Class::Below);
        s.record(200.0, Class::Unsure);
        s.record(200.0, Class::Above);
        assert_eq!(s.bracket().above, Some(200.0));
    }
}
