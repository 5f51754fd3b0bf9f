//! A producer: one thread, one connection to each partition leader, records
//! spread round robin over the partitions.
//!
//! Open loop: each record has an intended send time from the schedule. It
//! joins its partition's batch; a batch is written once it is full
//! (`--batch-bytes`) or has waited `--linger`, when its leader has fewer
//! than `max_in_flight` requests outstanding. Between sends the thread
//! sleeps in `ppoll` on its sockets until the next record is due, so an
//! acknowledgement is timed when it arrives and a send leaves on time.
//!
//! Series: `publish` (intended → ack), `publish.service` (written → ack),
//! `publish.queue` (intended → written: schedule lag, linger, the in-flight
//! limit). With `acks=0` the broker sends no response: only the queue is
//! timed here, and `e2e` at the consumer.

mod acks;
mod due;
mod encode;
mod holds;
mod state;

use std::collections::VecDeque;
use std::time::Duration;

use anyhow::{Result, anyhow};
use kafka_protocol::messages::{ApiKey, ProduceRequest};

pub use self::state::{Pace, ProduceSeries, ProduceSettings, Producer};

/// Producer `index`'s schedule from `start_ns` at `rate` records per second
/// (its own share): the producers' schedules are spread over one period.
pub fn schedule(
    rate: f64,
    arrivals: crate::record::Arrivals,
    index: usize,
    producers: usize,
    start_ns: u64,
) -> Schedule {
    let period = 1e9 / rate;
    let phase = (period * index as f64 / producers as f64) as u64;
    Schedule::new(
        start_ns + phase,
        period,
        arrivals,
        0x6361_7564_6100 + index as u64,
    )
}

use self::acks::{advice, first_error};
use self::due::Due;
use self::state::{Batch, InFlight, Leader, Pending};
use super::ledger::{Ledger, Produced};
use super::stamp::Stamp;
use super::wire::{self, Conn, error_name};
use crate::record::{Clock, Schedule, Sink, StopFlag};

impl Producer {
    /// Connects producer `index` to the leaders of its partitions:
    /// `partitions` are (partition, leader address).
    pub fn connect(
        index: usize,
        settings: &ProduceSettings,
        partitions: &[(i32, String)],
        stop: &StopFlag,
    ) -> Result<Producer> {
        let mut leaders: Vec<(String, Leader)> = Vec::new();
        let mut slots = Vec::new();
        for (partition, address) in partitions {
            let at = match leaders.iter().position(|(a, _)| a == address) {
                Some(i) => i,
                None => {
                    let conn = Conn::connect(address, settings.io_timeout, stop)?;
                    leaders.push((
                        address.clone(),
                        Leader {
                            conn,
                            in_flight: VecDeque::new(),
                        },
                    ));
                    leaders.len() - 1
                }
            };
            slots.push((*partition, at));
        }
        // Producers start on different partitions, so one record per
        // producer does not all land on partition 0.
        let next_slot = index % slots.len().max(1);
        Ok(Producer {
            index,
            settings: settings.clone(),
            leaders: leaders.into_iter().map(|(_, l)| l).collect(),
            batches: slots.iter().map(|_| Batch::default()).collect(),
            slots,
            next_slot,
            seq: 0,
            produced: Produced {
                producer: index,
                ..Produced::default()
            },
            payload: vec![0; settings.client.record_bytes],
            frames: Vec::new(),
            blocked: Vec::new(),
            ready: Vec::new(),
        })
    }

    /// For `length_ns` (and at least once per partition), sends warm-up
    /// records one at a time, each acknowledged (or, with acks=0, written)
    /// before the next, to every partition in turn: connections, the broker's code paths and the
    /// partitions' segments are warm when measuring starts. Not measured;
    /// consumers skip them.
    pub fn warm_up(
        &mut self,
        clock: &impl Clock,
        length_ns: u64,
        ledger: &Ledger,
        stop: &StopFlag,
    ) -> Result<()> {
        let end = clock.now() + length_ns;
        // A partition just created may not be led yet where the metadata
        // says: retry what the broker calls retriable, for a while.
        let patience = end + 15_000_000_000;
        let mut i = 0u64;
        while clock.now() < end || i < self.slots.len() as u64 {
            if stop.is_raised() {
                return Err(crate::error::interrupted(
                    "interrupted during the warm-up: nothing was measured",
                ));
            }
            let slot = (self.next_slot + i as usize) % self.slots.len();
            i += 1;
            let now = clock.now();
            let stamp = Stamp {
                run: ledger.run,
                producer: self.index as u32,
                warmup: true,
                seq: i - 1,
                intended_ns: now,
            };
            let mut request = self.request(&[(slot, vec![])], Some(stamp))?;
            // Acknowledged even with acks=0: the warm-up checks that each
            // partition takes records.
            request.acks = if self.settings.client.acks == 0 {
                1
            } else {
                self.settings.client.acks
            };
            let leader = &mut self.leaders[self.slots[slot].1];
            let corr = leader.conn.send(&request, self.settings.versions.produce)?;
            {
                let frame = leader.conn.read_frame(ApiKey::Produce)?;
                let response = wire::decode::<ProduceRequest>(
                    frame,
                    self.settings.versions.produce,
                    corr,
                    &leader.conn.peer,
                )?;
                if let Some(code) = first_error(&response) {
                    if RETRIABLE.contains(&code) && clock.now() < patience {
                        std::thread::sleep(Duration::from_millis(50));
                        i -= 1;
                        continue;
                    }
                    return Err(anyhow!(
                        "the broker refused a warm-up record: {}{}",
                        error_name(code),
                        advice(code)
                    ));
                }
            }
        }
        Ok(())
    }

    /// Produces until the schedule ends at `end_ns` (then waits for the
    /// outstanding acknowledgements) or `stop` rises; returns when it
    /// stopped. Every record's fate goes to `ledger` on every path.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        mut self,
        clock: &impl Clock,
        sink: &mut impl Sink,
        stop: &StopFlag,
        pace: Pace,
        start_ns: u64,
        end_ns: u64,
        producers: usize,
        series: ProduceSeries,
        ledger: &Ledger,
    ) -> Result<u64> {
        let result = match pace {
            Pace::Rate(rate, arrivals) => {
                let schedule = schedule(rate, arrivals, self.index, producers, start_ns);
                self.open_loop(clock, sink, stop, schedule, end_ns, series, ledger)
            }
            Pace::Closed => self.closed_loop(clock, sink, stop, end_ns, series, ledger),
        }
        // A wait ended by a stop is the run stopping, not failing.
        .or_else(|e| if wire::stopped(&e) { Ok(()) } else { Err(e) });
        let now = clock.now();
        self.settle();
        ledger.producer_done(std::mem::take(&mut self.produced), now);
        result.map(|()| now)
    }

    #[allow(clippy::too_many_arguments)]
    fn open_loop(
        &mut self,
        clock: &impl Clock,
        sink: &mut impl Sink,
        stop: &StopFlag,
        schedule: Schedule,
        end_ns: u64,
        series: ProduceSeries,
        ledger: &Ledger,
    ) -> Result<()> {
        let mut due = Due::new(schedule, end_ns);
        let result = self.paced(clock, sink, stop, &mut due, series, ledger);
        // However it ended (a stop, a failure, the last wait over),
        // records due and never taken from the schedule were not sent:
        // those due before the stop (where the run's `offered` ends too).
        let now = clock.now();
        let until = stop
            .raised_at()
            .map_or(now, |at| at.saturating_sub(1).min(now));
        let left = due.left_behind(until);
        self.produced.held_ns = due.held_ns();
        self.produced.counts.sent += left;
        self.produced.counts.fail("NOT_SENT", left);
        result
    }

    fn paced(
        &mut self,
        clock: &impl Clock,
        sink: &mut impl Sink,
        stop: &StopFlag,
        due: &mut Due,
        series: ProduceSeries,
        ledger: &Ledger,
    ) -> Result<()> {
        let last_wait = self.last_wait(due.end_ns());
        loop {
            // Past the schedule's end, what is still queued or unanswered
            // after --timeout is given up (`settle`): a stalled broker ends
            // the run at --runtime + --timeout.
            if stop.is_raised() || clock.now() >= last_wait {
                return Ok(());
            }
            let now = clock.now();
            due.take(now, self.queue_room(), |intended, lag| {
                if let Some(id) = series.lag {
                    sink.record(now, id, lag);
                }
                self.enqueue(intended, now);
            });
            let flushed = self.flush(clock, sink, series, ledger, false);
            // A leader that kept its send buffer full held the producer.
            for (from, to) in self.blocked.drain(..) {
                due.broker_held(from, to);
            }
            flushed?;
            due.broker_holds(clock.now(), self.held_by_broker(), self.queue_room());
            self.expire(clock.now(), sink, series);
            if !due.scheduled() && self.idle() {
                return Ok(());
            }
            let mut deadline = now + 100_000_000;
            if let Some(next) = due.wake_at() {
                deadline = deadline.min(next);
            }
            if let Some(at) = self.linger_due() {
                deadline = deadline.min(at);
            }
            self.wait(clock, sink, deadline, series, ledger)?;
        }
    }

    fn closed_loop(
        &mut self,
        clock: &impl Clock,
        sink: &mut impl Sink,
        stop: &StopFlag,
        end_ns: u64,
        series: ProduceSeries,
        ledger: &Ledger,
    ) -> Result<()> {
        let tick = Duration::from_millis(100);
        let last_wait = self.last_wait(end_ns);
        while !stop.is_raised() && clock.now() < end_ns {
            let now = clock.now();
            let seq = self.seq;
            self.enqueue(now, now);
            self.flush(clock, sink, series, ledger, true)?;
            // The acknowledgement, then the consumer's sight of the record.
            while !self.idle() && !stop.is_raised() && clock.now() < last_wait {
                let deadline = clock.now() + 100_000_000;
                self.wait(clock, sink, deadline, series, ledger)?;
                self.expire(clock.now(), sink, series);
            }
            // A failed record is not waited for; one acknowledged but not
            // consumed within --timeout is counted lost at the end, and the
            // loop goes on.
            if !self.produced.delivered.contains(seq) {
                continue;
            }
            let given_up = clock.now() + self.settings.client.delivery_timeout_ns;
            while !ledger.wait_consumed(self.index, seq, tick) {
                if stop.is_raised() {
                    return Ok(());
                }
                if clock.now() > given_up.min(last_wait) {
                    break;
                }
            }
        }
        Ok(())
    }

    /// When waiting ends at the latest: --timeout after the schedule's end.
    fn last_wait(&self, end_ns: u64) -> u64 {
        end_ns.saturating_add(self.settings.client.delivery_timeout_ns)
    }

    fn enqueue(&mut self, intended: u64, now: u64) {
        let slot = self.next_slot;
        self.next_slot = (self.next_slot + 1) % self.slots.len();
        let batch = &mut self.batches[slot];
        if batch.records.is_empty() {
            batch.opened_ns = now;
        }
        batch.records.push_back(Pending {
            seq: self.seq,
            intended,
        });
        self.seq += 1;
    }

    fn idle(&self) -> bool {
        self.batches.iter().all(|b| b.records.is_empty())
            && self
                .leaders
                .iter()
                .all(|l| l.in_flight.iter().all(|f| f.abandoned))
    }

    /// When the oldest waiting batch has lingered long enough, among the
    /// batches whose leader may take another request now (a batch waiting
    /// for an acknowledgement to free a slot waits on the socket instead:
    /// a deadline already past would spin).
    fn linger_due(&self) -> Option<u64> {
        (0..self.batches.len())
            .filter(|&s| !self.batches[s].records.is_empty() && !self.saturated(self.slots[s].1))
            .map(|s| self.batches[s].opened_ns + self.settings.client.linger_ns)
            .min()
    }

    /// Whether `leader` has `--max-in-flight` requests awaiting an
    /// acknowledgement (abandoned ones do not count).
    fn saturated(&self, leader: usize) -> bool {
        let outstanding = self.leaders[leader]
            .in_flight
            .iter()
            .filter(|f| !f.abandoned)
            .count();
        outstanding >= self.settings.client.max_in_flight
    }

    /// Whether the broker holds this producer: records are queued and
    /// every leader they are for has `max_in_flight` requests unanswered,
    /// so nothing more can be written until it answers.
    fn held_by_broker(&self) -> bool {
        let mut queued = self
            .batches
            .iter()
            .zip(&self.slots)
            .filter(|(b, _)| !b.records.is_empty())
            .peekable();
        queued.peek().is_some() && queued.all(|(_, &(_, leader))| self.saturated(leader))
    }

    fn batch_full(&self, batch: &Batch) -> bool {
        batch.records.len() * (self.settings.client.record_bytes + RECORD_OVERHEAD)
            >= self.settings.client.batch_bytes
    }

    /// How many more records the batches may hold: [`QUEUE_BYTES`] of
    /// records (one per partition at least). Full, they are written
    /// without waiting to fill a batch or for `--linger`.
    fn queue_room(&self) -> usize {
        let record = self.settings.client.record_bytes + RECORD_OVERHEAD;
        let most = (QUEUE_BYTES / record).max(self.batches.len());
        let queued: usize = self.batches.iter().map(|b| b.records.len()).sum();
        most.saturating_sub(queued)
    }

    /// Writes every batch that is due, as many requests to each leader as
    /// it has room for in flight (one request holds at most
    /// `--batch-bytes` per partition): a producer that wrote one request
    /// per leader and pass kept its own loop, not the broker, as the
    /// limit (578,000 records a second of 1 KiB to a broker answering in
    /// 50 µs).
    fn flush(
        &mut self,
        clock: &impl Clock,
        sink: &mut impl Sink,
        series: ProduceSeries,
        ledger: &Ledger,
        all: bool,
    ) -> Result<()> {
        let all = all || self.queue_room() == 0;
        for leader in 0..self.leaders.len() {
            while !self.saturated(leader)
                && self.write_due(clock, sink, series, ledger, leader, all)?
            {}
        }
        Ok(())
    }

    /// Writes one request to `leader` of its batches that are due (all
    /// with records, with `all`); whether there was one.
    fn write_due(
        &mut self,
        clock: &impl Clock,
        sink: &mut impl Sink,
        series: ProduceSeries,
        ledger: &Ledger,
        leader: usize,
        all: bool,
    ) -> Result<bool> {
        let now = clock.now();
        let due: Vec<usize> = (0..self.slots.len())
            .filter(|&s| self.slots[s].1 == leader)
            .filter(|&s| {
                let b = &self.batches[s];
                !b.records.is_empty()
                    && (all
                        || self.batch_full(b)
                        || now >= b.opened_ns + self.settings.client.linger_ns)
            })
            .collect();
        if due.is_empty() {
            return Ok(false);
        }
        // At most --batch-bytes per partition and request; the rest of
        // a backlog goes in the next one.
        let most = (self.settings.client.batch_bytes
            / (self.settings.client.record_bytes + RECORD_OVERHEAD))
            .max(1);
        let batches: Vec<(usize, Vec<Pending>)> = due
            .into_iter()
            .map(|s| {
                let records = &mut self.batches[s].records;
                (s, records.drain(..most.min(records.len())).collect())
            })
            .collect();
        let count: u64 = batches.iter().map(|(_, r)| r.len() as u64).sum();
        let request = match self.request_for(&batches, ledger) {
            Ok(request) => request,
            Err(e) => {
                self.give_up(&batches, "NOT_SENT", clock.now(), sink);
                return Err(e);
            }
        };
        let sent_ns = clock.now();
        // The request is the operation `--kernel blame` explains (one
        // in flight: `check_blame`), its window from here to its ack.
        sink.begin(sent_ns);
        let conn = &mut self.leaders[leader].conn;
        let corr = conn.send(&request, self.settings.versions.produce);
        self.blocked.extend(conn.take_blocked());
        let corr = match corr {
            Ok(corr) => corr,
            Err(e) => {
                // Not written (or not wholly): failed, said so; or not
                // sent, when the run stopped meanwhile.
                let why = if wire::stopped(&e) {
                    "NOT_SENT"
                } else {
                    "SEND_FAILED"
                };
                self.give_up(&batches, why, sent_ns, sink);
                return Err(e);
            }
        };
        self.produced.counts.sent += count;
        for (_, records) in &batches {
            for r in records {
                sink.record(sent_ns, series.queue, sent_ns.saturating_sub(r.intended));
            }
        }
        if self.settings.client.acks == 0 {
            self.produced.counts.unacknowledged += count;
            for (_, records) in &batches {
                for r in records {
                    self.produced.delivered.insert(r.seq);
                }
            }
        } else {
            self.leaders[leader].in_flight.push_back(InFlight {
                corr,
                sent_ns,
                batches,
                abandoned: false,
            });
        }
        Ok(true)
    }
}

/// A record's framing in a v2 batch beside its value, about.
const RECORD_OVERHEAD: usize = 20;

/// What a producer's batches may hold at most, in record bytes, as the
/// Java producer's `buffer.memory` (32 MiB): at a rate beyond the broker,
/// the records behind wait in the schedule, their intended times kept.
const QUEUE_BYTES: usize = 32 << 20;

/// Produce errors a new or moving partition gives for a moment:
/// UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER,
/// NOT_ENOUGH_REPLICAS.
const RETRIABLE: [i16; 4] = [3, 5, 6, 19];
