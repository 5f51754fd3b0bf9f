//! The `net` probe's connections as the run engine runs them: one thread
//! each, connected and warmed up while preparing (opened again when the
//! start came much later), then measured; each connection's counts are
//! added up for the completion.

use std::net::SocketAddr;
use std::sync::Mutex;

use anyhow::{Context, Result, anyhow};

use super::client::{self, Conversation, Counts, Pacing, SharedCounts};
use super::config::{NetConfig, Proto, SeriesIds};
use super::link::Link;
use crate::error::input_error;
use crate::record::{MonotonicClock, Recorder, StopFlag};
use crate::sys;

/// A connection idle this long before the run starts is opened again.
const REOPEN_AFTER_NS: u64 = 1_000_000_000;

/// What every connection of a run shares, and each one between preparing
/// and measuring.
pub(super) struct Conns<'a> {
    config: &'a NetConfig,
    target: SocketAddr,
    ids: SeriesIds,
    max_frame: u32,
    /// Each connection, warmed up, and when it was (monotonic ns).
    links: Vec<Mutex<Option<(Link, Conversation, u64)>>>,
    shared: SharedCounts,
    stop: &'a StopFlag,
}

impl<'a> Conns<'a> {
    /// The connections of a run to `target`, recording into `ids`.
    pub(super) fn new(
        config: &'a NetConfig,
        target: SocketAddr,
        ids: SeriesIds,
        stop: &'a StopFlag,
    ) -> Conns<'a> {
        Conns {
            config,
            target,
            ids,
            max_frame: config.size.max(config.response_size),
            links: (0..config.conns).map(|_| Mutex::new(None)).collect(),
            shared: SharedCounts::default(),
            stop,
        }
    }

    /// Connects and warms up connection `thread`.
    fn open(&self, thread: usize) -> Result<(Link, Conversation)> {
        let config = self.config;
        let target = self.target;
        let mut link = Link::connect(
            config.proto,
            target,
            config.timeout_ns,
            config.busy_poll,
            self.max_frame,
            self.stop,
        )
        .map_err(|e| {
            if self.stop.is_raised() {
                crate::error::interrupted("interrupted while connecting: nothing was measured")
            } else if config.loopback {
                anyhow!(
                    "{e}: the in-process responder did not take connection {} of {}",
                    thread + 1,
                    config.conns
                )
            } else {
                let udp = if config.proto == Proto::Udp {
                    " --udp"
                } else {
                    ""
                };
                anyhow!("{e}; is `cauda serve --listen {target}{udp}` running there?")
            }
        })?;
        let mut talk = Conversation::new(config.size, config.response_size);
        client::warm_up(
            &MonotonicClock,
            &mut link,
            &mut talk,
            config.timeout_ns,
            self.stop,
        )?;
        talk.counts = Counts::default();
        Ok((link, talk))
    }

    /// Pins thread `thread` (with `--cpus`) and opens its connection.
    pub(super) fn prepare(&self, thread: usize) -> Result<()> {
        let config = self.config;
        if !config.cpus.is_empty() {
            let cpu = config.cpus[thread % config.cpus.len()];
            sys::pin_current_thread(cpu).map_err(|e| {
                input_error(format!("--cpus: cannot pin a thread to CPU {cpu} ({e})"))
            })?;
        }
        let _ = sys::set_timer_slack_ns(1);
        let (link, talk) = self.open(thread)?;
        *self.links[thread].lock().map_err(|_| anyhow!("poisoned"))? =
            Some((link, talk, sys::monotonic_ns()));
        Ok(())
    }

    /// How connection `thread` paces its messages from `start`: in rate
    /// mode, the connections' schedules are spread over one period.
    fn pacing(&self, thread: usize, start: u64) -> Pacing {
        let config = self.config;
        Pacing {
            rate: config.rate_of(thread),
            gap_ns: config.gap_ns,
            timeout_ns: config.timeout_ns,
            busy_poll: config.busy_poll,
            start_ns: start,
            end_ns: start + config.runtime_ns,
        }
    }

    /// Measures connection `thread` from `start` for `--runtime`; its
    /// counts are added up whatever the outcome.
    pub(super) fn body(
        &self,
        thread: usize,
        start: u64,
        recorder: &mut Recorder,
        stop: &StopFlag,
    ) -> Result<u64> {
        let (mut link, mut talk, opened) = self.links[thread]
            .lock()
            .map_err(|_| anyhow!("poisoned"))?
            .take()
            .ok_or_else(|| anyhow!("connection {thread} was not prepared"))?;
        // After a wait (--start-at) the responder may have closed the
        // idle connection: open it afresh. The one made while preparing
        // checked, before the wait, that the target answers.
        if start.saturating_sub(opened) > REOPEN_AFTER_NS {
            drop(link);
            (link, talk) = self.open(thread)?;
        }
        let result = client::ping(
            &MonotonicClock,
            &mut link,
            &mut talk,
            self.pacing(thread, start),
            self.ids,
            recorder,
            stop,
        );
        self.shared.add(&talk.counts);
        result.with_context(|| {
            format!(
                "connection {thread}: after {} replies to {} messages",
                talk.counts.answered, talk.counts.sent
            )
        })
    }

    /// Every finished connection's counts, added up.
    pub(super) fn total(&self) -> Counts {
        self.shared.total()
    }
}
