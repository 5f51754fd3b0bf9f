//! The data model: run files, series and summaries (serde).

pub mod digest;
pub mod encoding;
pub mod run;
pub mod series;
pub mod summary;

pub use run::{LoadMode, RUN_SCHEMA, RunFile, SeriesSummary, Tool, Warning};
pub use series::{IntervalRecord, MeasuredFrom, Reported, Series};
pub use summary::{Percentiles, Summary};
