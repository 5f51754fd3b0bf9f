//! A producer's acknowledgements: waiting on the leaders' sockets, timing
//! each response when `ppoll` returns, settling its records (acknowledged,
//! failed with the broker's error, or expired after `--timeout`), and what
//! is left in flight or unsent at the end.

use anyhow::{Result, anyhow};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};

use super::state::{InFlight, Pending, ProduceSeries, Producer};
use crate::probe::broker::ledger::Ledger;
use crate::probe::broker::wire::{self, error_name};
use crate::record::{Clock, Sink};

impl Producer {
    /// Sleeps until a socket is readable or `deadline`, then handles what
    /// arrived, timed when `ppoll` returned.
    pub(super) fn wait(
        &mut self,
        clock: &impl Clock,
        sink: &mut impl Sink,
        deadline: u64,
        series: ProduceSeries,
        ledger: &Ledger,
    ) -> Result<()> {
        let mut ready = std::mem::take(&mut self.ready);
        let conns = self.leaders.iter().map(|l| &l.conn);
        if let Some(at) = wire::wait_readable(conns, deadline, &mut ready, clock)? {
            for (leader, &is_ready) in ready.iter().enumerate() {
                if is_ready {
                    self.read_acks(leader, at, sink, series, ledger)?;
                }
            }
        }
        self.ready = ready;
        Ok(())
    }

    pub(super) fn read_acks(
        &mut self,
        leader: usize,
        at: u64,
        sink: &mut impl Sink,
        series: ProduceSeries,
        ledger: &Ledger,
    ) -> Result<()> {
        let mut frames = std::mem::take(&mut self.frames);
        // The replies that came before a failure are settled first.
        let read = self.leaders[leader].conn.read_ready(&mut frames);
        for frame in frames.drain(..) {
            let corr = wire::correlation_id(&frame);
            let entry = self.leaders[leader]
                .in_flight
                .pop_front()
                .ok_or_else(|| anyhow!("the broker answered a request cauda did not send"))?;
            let decoded = if corr != Some(entry.corr) {
                Err(anyhow!(
                    "the broker at {} answered request {corr:?} where {} was next",
                    self.leaders[leader].conn.peer,
                    entry.corr
                ))
            } else if entry.abandoned {
                continue;
            } else {
                wire::decode::<ProduceRequest>(
                    frame,
                    self.settings.versions.produce,
                    entry.corr,
                    &self.leaders[leader].conn.peer,
                )
            };
            match decoded {
                Ok(response) => self.settle_acks(&entry, &response, at, sink, series, ledger),
                Err(e) => {
                    // Its records were sent; what became of them is unknown.
                    if !entry.abandoned {
                        for (_, records) in &entry.batches {
                            self.fail(records, "BAD_RESPONSE", at, sink);
                        }
                    }
                    return Err(e);
                }
            }
        }
        self.frames = frames;
        read
    }

    pub(super) fn settle_acks(
        &mut self,
        entry: &InFlight,
        response: &ProduceResponse,
        at: u64,
        sink: &mut impl Sink,
        series: ProduceSeries,
        ledger: &Ledger,
    ) {
        let parts: Vec<_> = response
            .responses
            .iter()
            .flat_map(|t| t.partition_responses.iter())
            .collect();
        for (slot, records) in &entry.batches {
            let partition = self.slots[*slot].0;
            let code = parts
                .iter()
                .find(|p| p.index == partition)
                .map_or(-1, |p| p.error_code);
            if code == 0 {
                for r in records {
                    if let Some(id) = series.publish {
                        sink.record(at, id, at.saturating_sub(r.intended));
                    }
                    if let Some(id) = series.service {
                        sink.record(at, id, at.saturating_sub(entry.sent_ns));
                    }
                    ledger.acked(self.index, r.seq, at);
                    self.produced.delivered.insert(r.seq);
                }
                self.produced.counts.acked += records.len() as u64;
            } else {
                self.fail(records, &error_name(code), at, sink);
            }
        }
    }

    /// Records taken from the queue that cannot be written: sent (the
    /// schedule made them) and failed for `why`.
    pub(super) fn give_up(
        &mut self,
        batches: &[(usize, Vec<Pending>)],
        why: &str,
        at: u64,
        sink: &mut impl Sink,
    ) {
        for (_, records) in batches {
            self.produced.counts.sent += records.len() as u64;
            self.fail(records, why, at, sink);
        }
    }

    pub(super) fn fail(&mut self, records: &[Pending], why: &str, at: u64, sink: &mut impl Sink) {
        self.produced.counts.fail(why, records.len() as u64);
        for _ in records {
            sink.fault(at);
        }
    }

    /// Gives up requests unacknowledged past the delivery timeout; their
    /// records are recorded in `publish` at the latency they had then.
    pub(super) fn expire(&mut self, now: u64, sink: &mut impl Sink, series: ProduceSeries) {
        let timeout = self.settings.client.delivery_timeout_ns;
        let mut given_up = Vec::new();
        for leader in &mut self.leaders {
            for f in leader.in_flight.iter_mut() {
                if !f.abandoned && now.saturating_sub(f.sent_ns) > timeout {
                    f.abandoned = true;
                    for (_, records) in &f.batches {
                        given_up.extend(records.iter().copied());
                    }
                }
            }
        }
        if given_up.is_empty() {
            return;
        }
        if let Some(id) = series.publish {
            for r in &given_up {
                sink.record(now, id, now.saturating_sub(r.intended));
            }
        }
        self.fail(&given_up, "DELIVERY_TIMEOUT", now, sink);
    }

    /// At the end: records still awaiting an ack are in flight; records
    /// queued and never written are failed, `NOT_SENT`.
    pub(super) fn settle(&mut self) {
        let in_flight: u64 = self
            .leaders
            .iter()
            .flat_map(|l| l.in_flight.iter())
            .filter(|f| !f.abandoned)
            .flat_map(|f| f.batches.iter())
            .map(|(_, r)| r.len() as u64)
            .sum();
        self.produced.counts.in_flight += in_flight;
        let unsent: u64 = self
            .batches
            .iter_mut()
            .map(|b| std::mem::take(&mut b.records).len() as u64)
            .sum();
        if unsent > 0 {
            self.produced.counts.sent += unsent;
            self.produced.counts.fail("NOT_SENT", unsent);
        }
    }
}

pub(super) fn first_error(response: &ProduceResponse) -> Option<i16> {
    response
        .responses
        .iter()
        .flat_map(|t| t.partition_responses.iter())
        .map(|p| p.error_code)
        .find(|&c| c != 0)
}

/// What to do about a produce error.
pub fn advice(code: i16) -> &'static str {
    match code {
        10 => "; give a smaller --size, or raise the topic's max.message.bytes",
        19 | 20 => {
            "; fewer in-sync replicas than min.insync.replicas: check the brokers, or use --acks 1"
        }
        3 | 6 => "; the topic or its leader changed: run again",
        29 => "; not authorized to write the topic",
        _ => "",
    }
}
