//! The `net` probe's measuring side: one connection per thread, one message
//! in flight per connection.
//!
//! Closed loop (default): send, wait for the reply, record the round trip
//! (`rtt`), optionally idle `--gap`, repeat. Open loop (`--rate`): each
//! message has an intended send time from the schedule; when the previous
//! reply comes back late the next message leaves late, and `rtt` is measured
//! from its intended time (the wrk2 model: a stalled responder shows as the
//! whole backlog it caused), `service` from its actual send.
//!
//! Replies are matched by sequence number. A reply to an older message is
//! `late` (it had been counted lost) or a `duplicate` (it had been answered);
//! a reply naming a message never sent is `wrong_seq`. No reply within
//! `--timeout` is `lost`; in rate mode it is also recorded at the latency it
//! had when given up (at least the timeout).

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Result, anyhow};

use super::config::{Proto, SeriesIds};
use super::link::{Link, Received};
use super::protocol::{Header, Kind};
use crate::model::run::FAULT_TOTALS;
use crate::record::{Clock, Sink, StopFlag};

/// Replies remembered per connection to tell duplicates from late replies.
const WINDOW: u64 = 4096;

/// The message accounting of a run; every sent message ends in exactly one
/// of `answered`, `lost` or `in_flight`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// Messages sent (the warm-up ping excluded).
    pub sent: u64,
    /// Messages whose reply came in time.
    pub answered: u64,
    /// Messages with no reply within the timeout.
    pub lost: u64,
    /// Messages still awaiting a reply when the run was stopped.
    pub in_flight: u64,
    /// Replies to a message already answered.
    pub duplicate: u64,
    /// Replies to a message already counted lost (late or reordered).
    pub late: u64,
    /// Replies naming a sequence number never sent.
    pub wrong_seq: u64,
    /// Malformed replies (UDP; on TCP one ends the run).
    pub malformed: u64,
}

impl Counts {
    /// The counts as `(name, value)`, in a fixed order.
    pub fn entries(&self) -> [(&'static str, u64); 8] {
        [
            (FAULT_TOTALS[0], self.sent),
            (FAULT_TOTALS[1], self.answered),
            ("lost", self.lost),
            ("in_flight", self.in_flight),
            ("duplicate", self.duplicate),
            ("late", self.late),
            ("wrong_seq", self.wrong_seq),
            ("malformed", self.malformed),
        ]
    }
}

/// Counts shared by the threads, added once per thread when it ends.
#[derive(Debug, Default)]
pub struct SharedCounts([AtomicU64; 8]);

impl SharedCounts {
    /// Adds one thread's counts.
    pub fn add(&self, c: &Counts) {
        for (slot, (_, v)) in self.0.iter().zip(c.entries()) {
            slot.fetch_add(v, Ordering::Relaxed);
        }
    }

    /// The totals.
    pub fn total(&self) -> Counts {
        let v: Vec<u64> = self.0.iter().map(|a| a.load(Ordering::Relaxed)).collect();
        Counts {
            sent: v[0],
            answered: v[1],
            lost: v[2],
            in_flight: v[3],
            duplicate: v[4],
            late: v[5],
            wrong_seq: v[6],
            malformed: v[7],
        }
    }
}

/// How one connection sends.
#[derive(Clone, Copy, Debug)]
pub struct Pacing {
    /// Open loop: the period of this connection's schedule and its phase.
    pub rate: Option<(f64, u64)>,
    /// Closed loop: idle this long after each reply.
    pub gap_ns: u64,
    /// Give up on a reply after this long.
    pub timeout_ns: u64,
    /// Spin instead of sleeping until a send time.
    pub busy_poll: bool,
    /// When the run started (the schedule's origin), monotonic ns.
    pub start_ns: u64,
    /// When to send no more.
    pub end_ns: u64,
}

/// The request being built and the replies remembered.
#[derive(Debug)]
pub struct Conversation {
    frame: Vec<u8>,
    response_size: u32,
    seq: u64,
    answered: [u64; (WINDOW / 64) as usize],
    /// This connection's counts.
    pub counts: Counts,
}

impl Conversation {
    /// Requests of `size` bytes asking for `response_size`-byte replies.
    pub fn new(size: u32, response_size: u32) -> Self {
        Conversation {
            frame: vec![0; size as usize],
            response_size,
            seq: 0,
            answered: [0; (WINDOW / 64) as usize],
            counts: Counts::default(),
        }
    }

    fn bit(seq: u64) -> (usize, u64) {
        let slot = seq % WINDOW;
        ((slot / 64) as usize, 1 << (slot % 64))
    }

    /// Builds the next request, sent at `now_ns`; returns its frame.
    #[inline]
    fn next(&mut self, now_ns: u64) -> &[u8] {
        self.seq += 1;
        let (i, b) = Conversation::bit(self.seq);
        self.answered[i] &= !b;
        Header {
            len: self.frame.len() as u32,
            kind: Kind::Request,
            seq: self.seq,
            sent_ns: now_ns,
            response_size: self.response_size,
        }
        .encode(&mut self.frame);
        &self.frame
    }

    /// Files a reply: `true` when it answers the message in flight.
    #[inline]
    fn file(&mut self, seq: u64) -> bool {
        if seq > self.seq || seq == 0 {
            self.counts.wrong_seq += 1;
            return false;
        }
        let (i, b) = Conversation::bit(seq);
        let seen = self.answered[i] & b != 0;
        let recent = self.seq - seq < WINDOW;
        if recent {
            self.answered[i] |= b;
        }
        if seq == self.seq {
            return if seen {
                self.counts.duplicate += 1;
                false
            } else {
                true
            };
        }
        if recent && seen {
            self.counts.duplicate += 1;
        } else {
            self.counts.late += 1;
        }
        false
    }
}

/// Sleeps (or spins) until `deadline`; `false` when `stop` rose first.
#[inline]
fn wait_until<C: Clock>(clock: &C, deadline: u64, spin: bool, stop: &StopFlag) -> bool {
    loop {
        let now = clock.now();
        if now >= deadline {
            return true;
        }
        if stop.is_raised() {
            return false;
        }
        if !spin {
            // Absolute sleeps in slices, so a stop is seen within 100 ms.
            clock.sleep_until(deadline.min(now + 100_000_000));
        }
    }
}

/// Pings over `link` until `end_ns` or `stop`, recording into `sink`.
/// Returns the time it stopped; the counts are in `talk.counts`.
pub fn ping<C: Clock, S: Sink>(
    clock: &C,
    link: &mut Link,
    talk: &mut Conversation,
    pacing: Pacing,
    ids: SeriesIds,
    sink: &mut S,
    stop: &StopFlag,
) -> Result<u64> {
    let mut schedule = pacing
        .rate
        .map(|rate| super::config::schedule(rate, pacing.start_ns));
    let mut ready = clock.now();
    // When the connection's one message in flight was last answered (or
    // given up): no send could leave before it, so lateness until then is
    // the target's, not the generator's.
    let mut free_at = 0;
    loop {
        let intended = match &mut schedule {
            Some(s) => s.next_intended(),
            None => ready,
        };
        if intended >= pacing.end_ns || stop.is_raised() {
            return Ok(clock.now());
        }
        sink.begin(intended);
        // Ping-pong without a gap sends at once: no clock read to wait.
        let due = schedule.is_some() || pacing.gap_ns > 0;
        if due && !wait_until(clock, intended, pacing.busy_poll, stop) {
            return Ok(clock.now());
        }
        let sent = clock.now();
        link.send(talk.next(sent))?;
        talk.counts.sent += 1;
        if let Some(id) = ids.lag {
            sink.record(sent, id, sent.saturating_sub(intended.max(free_at)));
        }
        let deadline = sent.saturating_add(pacing.timeout_ns);
        loop {
            match link.recv(clock, deadline, stop)? {
                Received::Reply(h) => {
                    if !talk.file(h.seq) {
                        continue;
                    }
                    let done = clock.now();
                    talk.counts.answered += 1;
                    let from = if schedule.is_some() { intended } else { sent };
                    let rtt = done.saturating_sub(from);
                    sink.record(done, ids.rtt, rtt);
                    if let Some(id) = ids.service {
                        sink.record(done, id, done.saturating_sub(sent));
                    }
                    if let Some(id) = ids.half {
                        sink.record(done, id, rtt / 2);
                    }
                    ready = done + pacing.gap_ns;
                    free_at = done;
                    break;
                }
                Received::Malformed(_) => talk.counts.malformed += 1,
                Received::Timeout => {
                    talk.counts.lost += 1;
                    let done = clock.now();
                    sink.fault(done);
                    if schedule.is_some() {
                        // Slow, not absent: recorded at the latency it had
                        // when given up.
                        let waited = deadline.max(done);
                        sink.record(done, ids.rtt, waited.saturating_sub(intended));
                        if let Some(id) = ids.service {
                            sink.record(done, id, pacing.timeout_ns);
                        }
                        if let Some(id) = ids.half {
                            sink.record(done, id, waited.saturating_sub(intended) / 2);
                        }
                    }
                    ready = done + pacing.gap_ns;
                    free_at = done;
                    break;
                }
                Received::Stopped => {
                    talk.counts.in_flight += 1;
                    return Ok(clock.now());
                }
            }
        }
    }
}

/// One unrecorded ping that proves a cauda responder answers at all.
pub fn warm_up<C: Clock>(
    clock: &C,
    link: &mut Link,
    talk: &mut Conversation,
    timeout_ns: u64,
    stop: &StopFlag,
) -> Result<()> {
    let sent = clock.now();
    link.send(talk.next(sent))?;
    let deadline = sent.saturating_add(timeout_ns);
    let problem = match link.recv(clock, deadline, stop)? {
        Received::Reply(h) if h.seq == talk.seq => return Ok(()),
        Received::Reply(h) => format!(
            "answered the first message with sequence number {} instead of {}",
            h.seq, talk.seq
        ),
        Received::Malformed(e) => format!("sent a malformed reply ({e})"),
        Received::Timeout => {
            return Err(anyhow!(
                "no reply from {} within --timeout {}: is `cauda serve{}` running there, and reachable?",
                link.peer,
                crate::units::format_duration_compact(timeout_ns),
                if link.proto == Proto::Udp {
                    " --udp"
                } else {
                    ""
                }
            ));
        }
        Received::Stopped => return Err(anyhow!("stopped before the first reply")),
    };
    Err(anyhow!(
        "the responder at {} {problem}; is it `cauda serve`?",
        link.peer
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_filed_by_sequence_number() {
        let mut talk = Conversation::new(64, 64);
        talk.next(0); // 1
        assert!(talk.file(1));
        assert!(!talk.file(1), "a second reply to 1 is a duplicate");
        talk.next(0); // 2, lost
        talk.next(0); // 3
        assert!(!talk.file(2), "2 arrives after it was given up: late");
        assert!(!talk.file(9), "9 was never sent");
        assert!(!talk.file(0), "0 is never sent by a run");
        assert!(talk.file(3));
        assert_eq!(
            talk.counts,
            Counts {
                duplicate: 1,
                late: 1,
                wrong_seq: 2,
                ..Counts::default()
            }
        );
    }

    #[test]
    fn frames_carry_the_sequence_and_send_time() {
        let mut talk = Conversation::new(100, 40);
        let frame = talk.next(12_345).to_vec();
        let h = Header::decode(&frame, 1000).unwrap();
        assert_eq!(
            (h.len, h.seq, h.sent_ns, h.response_size, h.kind),
            (100, 1, 12_345, 40, Kind::Request)
        );
        assert_eq!(frame.len(), 100);
    }

    #[test]
    fn shared_counts_add_up() {
        let shared = SharedCounts::default();
        let c = Counts {
            sent: 5,
            answered: 3,
            lost: 1,
            in_flight: 1,
            duplicate: 2,
            late: 1,
            wrong_seq: 0,
            malformed: 4,
        };
        shared.add(&c);
        shared.add(&c);
        let t = shared.total();
        assert_eq!(t.sent, 10);
        assert_eq!(t.malformed, 8);
        assert_eq!(t.answered + t.lost + t.in_flight, t.sent);
    }
}
