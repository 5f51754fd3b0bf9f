//! The host: its root and identity (`root`), which every reader, tuner and
//! tracer goes through; reading what it is set to (snapshot, audit) and
//! what it does during a run (counters, and the kernel's own view through
//! BPF: `trace`) into the model's types (`crate::model::host`,
//! `crate::model::check`, `crate::model::kernel`); and the mechanisms of
//! tuning it (`tuning`).

pub mod audit;
pub mod counters;
pub mod cpulist;
pub mod root;
pub mod snapshot;
pub mod trace;
pub mod tuning;
