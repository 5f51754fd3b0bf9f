//! The host: reading what it is set to (snapshot, audit) and what it does
//! during a run (counters) into the model's types (`crate::model::host`,
//! `crate::model::check`), and the mechanisms of tuning it (`tune`).

pub mod audit;
pub mod counters;
pub mod cpulist;
pub mod kernel;
pub mod root;
pub mod snapshot;
pub mod tuning;
