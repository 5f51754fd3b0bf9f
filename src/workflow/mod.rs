//! Workflows: commands made of other commands' steps, above the probes,
//! the analysis and the reports they string together.
//!
//! - [`lab`]: `cauda lab`, the default suite on this host (audit, timer,
//!   hiccup, disk, net), each step a child `cauda`, then one summary and
//!   report;
//! - [`matrix`]: `cauda broker --acks-matrix`, the broker probe per acks
//!   setting in rounds of alternating order, pooled and compared;
//! - [`tune`]: `cauda host tune` and `host rollback`: audit, plan, apply
//!   through the journal, and with `--verify` measure, compare, keep or
//!   roll back (the mechanisms are `crate::host::tuning`'s).

pub mod child;
pub mod lab;
pub mod matrix;
pub mod sweep;
pub mod tune;
