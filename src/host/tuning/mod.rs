//! The mechanisms of host tuning: the plan built only from the audit's
//! checks ([`plan`]) and the only paths it may write ([`paths`]), the
//! journal written before each change ([`journal`], [`apply`]), rollback
//! byte for byte ([`mod@rollback`]), both reading and writing setting files
//! through [`files`], cauda-named boot-time files through the same journal
//! ([`persist`]), the lock that keeps two tunings apart ([`lock`]), and
//! `host hold-latency`'s PM QoS limit for one command ([`hold`]). The
//! commands that string them together, with `--verify`'s measurements, are
//! the tune workflow's (`crate::workflow::tune`).

pub mod apply;
pub mod files;
pub mod hold;
pub mod journal;
pub mod lock;
pub mod paths;
pub mod persist;
pub mod plan;
pub mod rollback;
