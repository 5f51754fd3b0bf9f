//! The host: what it is set to, recorded with every run.

pub mod cpulist;
pub mod snapshot;
pub mod check;
