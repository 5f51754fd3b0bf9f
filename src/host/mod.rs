//! The host: what it is set to (snapshot, audit), what it does during a
//! run (counters), and the vocabulary shared with tuning.

pub mod audit;
pub mod counters;
pub mod cpulist;
pub mod snapshot;
pub mod tune;
