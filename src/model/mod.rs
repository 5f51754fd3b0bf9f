//! The data model: run files, series and summaries, and what a run stores
//! about its host (serde). Data only: no reading of the system, no analysis.

pub mod blame;
pub mod broker;
pub mod check;
pub mod digest;
pub mod disk;
pub mod encoding;
pub mod histogram_data;
pub mod host;
pub mod input;
pub mod interval;
pub mod kernel;
pub mod load;
pub mod names;
pub mod run;
pub mod series;
pub mod summary;
pub mod sweep;
pub mod sweep_read;
mod zlib;

pub use host::{ClockSync, HostCounters, HostInterval, HostSnapshot};
pub use input::{Format, Loaded};
pub use interval::IntervalRecord;
pub use load::OfferedLoad;
pub use run::{LoadMode, Observer, RUN_SCHEMA, RunFile, SeriesSummary, Tool, Warning};
pub use series::{CONTROL_TAG, MeasuredFrom, Reported, Role, Series};
pub use summary::{Percentiles, Summary};
