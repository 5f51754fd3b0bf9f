//! A producer's state: the settings every producer of a run shares, the
//! series it records into, its pacing, and its batches and requests in
//! flight per leader. Sending (`produce`) and settling acknowledgements
//! (`acks`) both work on it.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;

use crate::model::broker::ClientSettings;
use crate::probe::broker::admin::Versions;
use crate::probe::broker::ledger::Produced;
use crate::probe::broker::wire::Conn;
use crate::record::Arrivals;

/// What every producer of a run shares.
#[derive(Clone, Debug)]
pub struct ProduceSettings {
    /// The topic.
    pub topic: String,
    /// acks, record size, linger, batch size, in-flight requests and
    /// timeouts: the settings the run file records, read from there.
    pub client: ClientSettings,
    /// Protocol versions.
    pub versions: Versions,
    /// Socket timeout for blocking reads and writes.
    pub io_timeout: Duration,
}

/// Where a producer's measurements go.
#[derive(Clone, Copy, Debug)]
pub struct ProduceSeries {
    /// Intended → ack (`None` with acks=0).
    pub publish: Option<usize>,
    /// Written → ack (`None` with acks=0).
    pub service: Option<usize>,
    /// Intended → written.
    pub queue: usize,
    /// Open loop: how late each record was queued against its intended
    /// time (the producer's own lag).
    pub lag: Option<usize>,
}

/// How a producer paces its records.
#[derive(Clone, Copy, Debug)]
pub enum Pace {
    /// Open loop: this producer's records per second and arrivals.
    Rate(f64, Arrivals),
    /// Closed loop: the next record once the previous one was consumed.
    Closed,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Pending {
    pub(super) seq: u64,
    pub(super) intended: u64,
}

#[derive(Debug, Default)]
pub(super) struct Batch {
    /// Taken from the front, a batch's worth at a time.
    pub(super) records: VecDeque<Pending>,
    pub(super) opened_ns: u64,
}

#[derive(Debug)]
pub(super) struct InFlight {
    pub(super) corr: i32,
    pub(super) sent_ns: u64,
    /// (partition slot, its records).
    pub(super) batches: Vec<(usize, Vec<Pending>)>,
    /// Given up after the delivery timeout; its response is ignored.
    pub(super) abandoned: bool,
}

#[derive(Debug)]
pub(super) struct Leader {
    pub(super) conn: Conn,
    pub(super) in_flight: VecDeque<InFlight>,
}

/// One producer thread's state.
#[derive(Debug)]
pub struct Producer {
    pub(super) index: usize,
    pub(super) settings: ProduceSettings,
    pub(super) leaders: Vec<Leader>,
    /// Per partition slot: (partition, leader index).
    pub(super) slots: Vec<(i32, usize)>,
    pub(super) batches: Vec<Batch>,
    pub(super) next_slot: usize,
    pub(super) seq: u64,
    pub(super) produced: Produced,
    pub(super) payload: Vec<u8>,
    pub(super) frames: Vec<Bytes>,
    pub(super) ready: Vec<bool>,
    /// When a leader kept its send buffer full, since the last pass.
    pub(super) blocked: Vec<(u64, u64)>,
}
