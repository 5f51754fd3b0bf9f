//! What every importer is given beside its bytes ([`ReadOptions`]) and
//! what it gives back ([`Imported`]), in a file of their own so that the
//! readers and the table that lists them share them without using each
//! other.

use crate::model::{RunFile, Series, Warning};
use crate::units::TimeUnit;

/// Options that only some formats use.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// The unit of plain numbers (and of .hlog and .hgrm values).
    pub unit: TimeUnit,
    /// Whether the user said the unit (an .hgrm cannot be read without it).
    pub unit_given: bool,
    /// The format, when the user says rather than detection.
    pub format: Option<crate::model::Format>,
    /// Interval length for logs of timestamped values (fio, sockperf), ns.
    pub interval_ns: u64,
    /// The CSV column holding the values.
    pub column: Option<Column>,
}

impl ReadOptions {
    /// Nanoseconds, detected format, 1 s intervals.
    pub fn new(unit: TimeUnit) -> Self {
        ReadOptions {
            unit,
            unit_given: true,
            format: None,
            interval_ns: 1_000_000_000,
            column: None,
        }
    }
}

/// What one importer read from one input.
#[derive(Debug, Default)]
pub struct Imported {
    /// The series.
    pub series: Vec<Series>,
    /// The rest of the run, when the input was a run file.
    pub run: Option<RunFile>,
    /// What the importer passed over and why.
    pub warnings: Vec<Warning>,
}

impl Imported {
    /// Series alone: no run, no warnings.
    pub fn of(series: Vec<Series>) -> Imported {
        Imported {
            series,
            ..Imported::default()
        }
    }
}

/// Which column of a CSV file holds the values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Column {
    /// By header name.
    Name(String),
    /// By 1-based position.
    Index(usize),
}

impl Column {
    /// `3` → position 3; anything else → a header name.
    pub fn parse(text: &str) -> Column {
        match text.parse::<usize>() {
            Ok(n) if n > 0 => Column::Index(n),
            _ => Column::Name(text.to_string()),
        }
    }
}
