//! Probes: one module per kind of latency, all run by the same session
//! (threads, start barrier, recorders, collector, run file).

pub mod disk;
pub mod hiccup;
pub mod net;
pub mod session;
pub mod timer;
