//! The recording engine shared by every probe: clock, open-loop schedule,
//! per-thread recorders, interval rotation and the rank rule. The
//! collector that merges what recorders send lives with the run engine
//! (`crate::probe::run::collector`): it builds the model's series.

pub mod buckets;
pub mod clock;
pub mod histogram;
pub mod rank;
pub mod recorder;
pub mod schedule;
pub mod stop;

pub use clock::{Clock, FakeClock, MonotonicClock};
pub use histogram::{ExactStats, LatencyHistogram};
pub use recorder::{OpHook, Recorder, SeriesId, Sink};
pub use schedule::{Arrivals, Schedule};
pub use stop::StopFlag;
