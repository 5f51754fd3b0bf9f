//! Files in other tools' formats and cauda's own, in both directions, and
//! the `merge` command built on them. Every importer turns a file into
//! tagged interval series, so analysis never needs to know where data came
//! from; every exporter is a pure function from loaded inputs to bytes.
//!
//! - [`import`]: detection and one reader per format, driven by one table
//!   ([`import::IMPORTERS`]).
//! - [`export`]: .hlog, run file, CSV, .hgrm, Parquet, OMB and the
//!   Prometheus encodings of the live page.
//! - [`merge`]: `cauda merge`, the exact merge of runs and logs.
//! - [`hlog_comments`] and [`seal`]: what a writer writes and its reader
//!   reads back (an .hlog's cauda comments, a run file's checksum).

pub mod export;
pub mod hlog_comments;
pub mod import;
pub mod merge;
pub mod seal;
