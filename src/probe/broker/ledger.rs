//! What producers and consumers share: when each record was acknowledged
//! (for `e2e.fetch`), how far each producer's records have been consumed
//! (for the closed loop), when the consumers may stop, and at the end every
//! record's fate.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::model::broker::RecordAccounting;

/// A growable set of sequence numbers.
#[derive(Clone, Debug, Default)]
pub struct SeqSet(Vec<u64>);

impl SeqSet {
    /// Adds `seq`; returns whether it was already there.
    pub fn insert(&mut self, seq: u64) -> bool {
        let (word, bit) = ((seq / 64) as usize, seq % 64);
        if word >= self.0.len() {
            self.0.resize(word + 1, 0);
        }
        let was = self.0[word] >> bit & 1 == 1;
        self.0[word] |= 1 << bit;
        was
    }

    /// Whether `seq` is in the set.
    pub fn contains(&self, seq: u64) -> bool {
        self.0
            .get((seq / 64) as usize)
            .is_some_and(|word| word >> (seq % 64) & 1 == 1)
    }

    /// How many numbers are in both sets.
    pub fn common(&self, other: &SeqSet) -> u64 {
        self.0
            .iter()
            .zip(&other.0)
            .map(|(a, b)| (a & b).count_ones() as u64)
            .sum()
    }

    /// How many numbers are in the set.
    pub fn count(&self) -> u64 {
        self.0.iter().map(|w| w.count_ones() as u64).sum()
    }

    /// Adds every number of `other`; returns how many were already here.
    pub fn union(&mut self, other: &SeqSet) -> u64 {
        let shared = self.common(other);
        if other.0.len() > self.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
        shared
    }
}

/// Acknowledgement times of a producer's recent records, indexed by
/// sequence number modulo the ring's size (an older entry is overwritten,
/// and then its ack time is unknown).
#[derive(Debug)]
struct AckRing {
    /// `seq + 1` of the record whose time is in `at`, 0 when empty.
    seq: Vec<AtomicU64>,
    at: Vec<AtomicU64>,
}

const RING: usize = 1 << 16;

/// What the ledger knows of a record's acknowledgement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acked {
    /// Read by its producer at this time.
    At(u64),
    /// Not (yet) read by its producer.
    NotYet,
    /// Read, but its time was overwritten by a record `RING` later.
    Forgotten,
}

impl AckRing {
    fn new() -> Self {
        AckRing {
            seq: (0..RING).map(|_| AtomicU64::new(0)).collect(),
            at: (0..RING).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

/// A producer's records as it ends: which were acknowledged (or, with
/// acks=0, sent) and its counts.
#[derive(Debug, Default)]
pub struct Produced {
    /// Which producer.
    pub producer: usize,
    /// Records acknowledged, or sent with acks=0.
    pub delivered: SeqSet,
    /// Its counts (`consumed`, `lost`, … are filled in at the end).
    pub counts: RecordAccounting,
    /// How long, before the schedule's end, due records waited because
    /// its batches were full (open loop): the target held it.
    pub held_ns: u64,
}

/// A consumer's records as it ends: per producer, the records it saw.
#[derive(Debug, Default)]
pub struct Consumed {
    /// Per producer, the sequence numbers consumed.
    pub seen: Vec<SeqSet>,
    /// Its counts (`consumed`, `duplicates`, `out_of_order`, `foreign`,
    /// `consumed_before_ack`).
    pub counts: RecordAccounting,
}

/// Shared by every thread of one broker run.
#[derive(Debug)]
pub struct Ledger {
    /// This run's identity, in every record's stamp.
    pub run: u64,
    acks: Vec<AckRing>,
    /// Per producer: records consumed so far (closed loop waits on it).
    progress: Vec<(Mutex<u64>, Condvar)>,
    producers_left: AtomicUsize,
    /// Producers still warming up (consumers start at the log's end after).
    warming: (Mutex<usize>, Condvar),
    /// Records the consumers should see: delivered by finished producers.
    expected: AtomicU64,
    /// Records the finished producers counted failed.
    failed: AtomicU64,
    /// When the last producer finished, monotonic ns (0: not yet).
    producers_done_ns: AtomicU64,
    /// Distinct records consumed so far, all consumers.
    consumed: AtomicU64,
    produced: Mutex<Vec<Produced>>,
    consumed_sets: Mutex<Vec<Consumed>>,
}

impl Ledger {
    /// A ledger for `producers` producers.
    pub fn new(run: u64, producers: usize) -> Self {
        Ledger {
            run,
            acks: (0..producers).map(|_| AckRing::new()).collect(),
            progress: (0..producers)
                .map(|_| (Mutex::new(0), Condvar::new()))
                .collect(),
            producers_left: AtomicUsize::new(producers),
            warming: (Mutex::new(producers), Condvar::new()),
            expected: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            producers_done_ns: AtomicU64::new(0),
            consumed: AtomicU64::new(0),
            produced: Mutex::new(Vec::new()),
            consumed_sets: Mutex::new(Vec::new()),
        }
    }

    /// How many producers there are.
    pub fn producers(&self) -> usize {
        self.acks.len()
    }

    /// A producer finished its warm-up (or failed to).
    pub fn warmed_up(&self) {
        let (lock, wake) = &self.warming;
        let mut left = lock.lock().unwrap_or_else(|e| e.into_inner());
        *left = left.saturating_sub(1);
        wake.notify_all();
    }

    /// Waits up to `timeout` for every producer's warm-up to end; returns
    /// whether they all did.
    pub fn wait_warmed_up(&self, timeout: Duration) -> bool {
        let (lock, wake) = &self.warming;
        let left = lock.lock().unwrap_or_else(|e| e.into_inner());
        let (left, _) = wake
            .wait_timeout_while(left, timeout, |l| *l > 0)
            .unwrap_or_else(|e| e.into_inner());
        *left == 0
    }

    /// Notes that `producer`'s record `seq` was acknowledged at `at_ns`.
    pub fn acked(&self, producer: usize, seq: u64, at_ns: u64) {
        let ring = &self.acks[producer];
        let slot = seq as usize % RING;
        ring.at[slot].store(at_ns, Ordering::Relaxed);
        ring.seq[slot].store(seq + 1, Ordering::Release);
    }

    /// When `producer`'s record `seq` was acknowledged, as far as known.
    pub fn ack_time(&self, producer: usize, seq: u64) -> Acked {
        let Some(ring) = self.acks.get(producer) else {
            return Acked::Forgotten;
        };
        let slot = seq as usize % RING;
        let held = ring.seq[slot].load(Ordering::Acquire);
        if held == seq + 1 {
            Acked::At(ring.at[slot].load(Ordering::Relaxed))
        } else if held > seq + 1 {
            Acked::Forgotten
        } else {
            Acked::NotYet
        }
    }

    /// Notes that a consumer saw `count` new records of `producer`, the
    /// highest being `seq`.
    pub fn consumed(&self, producer: usize, seq: u64, count: u64) {
        self.consumed.fetch_add(count, Ordering::Relaxed);
        if let Some((lock, wake)) = self.progress.get(producer) {
            let mut done = lock.lock().unwrap_or_else(|e| e.into_inner());
            *done = (*done).max(seq + 1);
            wake.notify_all();
        }
    }

    /// Waits up to `timeout` until `producer`'s record `seq` has been
    /// consumed; returns whether it has.
    pub fn wait_consumed(&self, producer: usize, seq: u64, timeout: Duration) -> bool {
        let (lock, wake) = &self.progress[producer];
        let done = lock.lock().unwrap_or_else(|e| e.into_inner());
        let (done, _) = wake
            .wait_timeout_while(done, timeout, |d| *d <= seq)
            .unwrap_or_else(|e| e.into_inner());
        *done > seq
    }

    /// A producer finished; its records and counts join the ledger.
    pub fn producer_done(&self, produced: Produced, now_ns: u64) {
        self.expected
            .fetch_add(produced.delivered.count(), Ordering::Relaxed);
        self.failed
            .fetch_add(produced.counts.failed, Ordering::Relaxed);
        self.produced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(produced);
        if self.producers_left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.producers_done_ns
                .store(now_ns.max(1), Ordering::Release);
        }
    }

    /// A producer failed or stopped without its records (still counted as
    /// finished, so consumers do not wait for it).
    pub fn producer_gone(&self, producer: usize, now_ns: u64) {
        self.producer_done(
            Produced {
                producer,
                ..Produced::default()
            },
            now_ns,
        );
    }

    /// When every producer had finished, or `None`.
    pub fn producers_done_at(&self) -> Option<u64> {
        match self.producers_done_ns.load(Ordering::Acquire) {
            0 => None,
            at => Some(at),
        }
    }

    /// Whether consumers have seen every record the producers delivered.
    /// Not known when a record failed: the broker may have written it
    /// anyway, and a consumer's count would then reach the delivered count
    /// early (the consumers drain until their time is up instead).
    pub fn all_consumed(&self) -> bool {
        self.producers_done_at().is_some()
            && self.failed.load(Ordering::Relaxed) == 0
            && self.consumed.load(Ordering::Relaxed) >= self.expected.load(Ordering::Relaxed)
    }

    /// A consumer finished; what it saw joins the ledger.
    pub fn consumer_done(&self, consumed: Consumed) {
        self.consumed_sets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(consumed);
    }

    /// How long the finished producers' schedules waited for room in
    /// their batches, ns, added up.
    pub fn held_ns(&self) -> u64 {
        self.produced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|p| p.held_ns)
            .sum()
    }

    /// Every record's fate, once all threads are done.
    pub fn account(&self) -> RecordAccounting {
        let produced = self.produced.lock().unwrap_or_else(|e| e.into_inner());
        let consumers = self.consumed_sets.lock().unwrap_or_else(|e| e.into_inner());
        let mut total = RecordAccounting::default();
        let mut seen: Vec<SeqSet> = vec![SeqSet::default(); self.producers()];
        for c in consumers.iter() {
            add(&mut total, &c.counts);
            for (all, mine) in seen.iter_mut().zip(&c.seen) {
                // Partitions are split between consumers: a record seen by
                // two was written twice (a retried send).
                total.duplicates += all.union(mine);
            }
        }
        total.consumed = seen.iter().map(SeqSet::count).sum();
        let mut lost = 0;
        let mut consumed_delivered = 0;
        for p in produced.iter() {
            add(&mut total, &p.counts);
            let common = seen.get(p.producer).map_or(0, |s| p.delivered.common(s));
            consumed_delivered += common;
            lost += p.delivered.count() - common;
        }
        total.lost = lost;
        total.consumed_unacked = total.consumed.saturating_sub(consumed_delivered);
        total
    }
}

fn add(total: &mut RecordAccounting, c: &RecordAccounting) {
    total.sent += c.sent;
    total.acked += c.acked;
    total.failed += c.failed;
    total.in_flight += c.in_flight;
    total.unacknowledged += c.unacknowledged;
    total.duplicates += c.duplicates;
    total.out_of_order += c.out_of_order;
    total.consumed_before_ack += c.consumed_before_ack;
    total.foreign += c.foreign;
    total.warmup += c.warmup;
    for (k, v) in &c.errors {
        *total.errors.entry(k.clone()).or_insert(0) += v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(seqs: &[u64]) -> SeqSet {
        let mut s = SeqSet::default();
        for &q in seqs {
            s.insert(q);
        }
        s
    }

    #[test]
    fn every_record_has_one_fate() {
        let ledger = Ledger::new(7, 2);
        let mut p0 = Produced {
            producer: 0,
            delivered: set(&[0, 1, 2, 3]),
            ..Produced::default()
        };
        p0.counts.sent = 5;
        p0.counts.acked = 4;
        p0.counts.failed = 1;
        ledger.producer_done(p0, 10);
        assert!(ledger.producers_done_at().is_none());
        let p1 = Produced {
            producer: 1,
            delivered: set(&[0, 100]),
            ..Produced::default()
        };
        ledger.producer_done(p1, 20);
        assert_eq!(ledger.producers_done_at(), Some(20));
        // Consumer A saw 0..=2 of producer 0 and 100 of producer 1; B saw
        // 2 again (a duplicate across consumers) and 4, which failed.
        ledger.consumer_done(Consumed {
            seen: vec![set(&[0, 1, 2]), set(&[100])],
            ..Consumed::default()
        });
        ledger.consumer_done(Consumed {
            seen: vec![set(&[2, 4]), SeqSet::default()],
            ..Consumed::default()
        });
        let r = ledger.account();
        assert_eq!(r.consumed, 5); // 0, 1, 2, 4 of p0; 100 of p1
        assert_eq!(r.duplicates, 1);
        assert_eq!(r.lost, 2); // p0's 3 and p1's 0
        assert_eq!(r.consumed_unacked, 1); // p0's 4
        assert_eq!(r.sent, r.acked + r.failed + r.in_flight);
    }

    #[test]
    fn ack_times_are_found_until_overwritten() {
        let ledger = Ledger::new(1, 1);
        ledger.acked(0, 5, 1_000);
        assert_eq!(ledger.ack_time(0, 5), Acked::At(1_000));
        // Not acknowledged yet: neither the slot's earlier nor a later one.
        assert_eq!(ledger.ack_time(0, 6), Acked::NotYet);
        assert_eq!(ledger.ack_time(0, 5 + RING as u64), Acked::NotYet);
        ledger.acked(0, 5 + RING as u64, 2_000);
        assert_eq!(ledger.ack_time(0, 5), Acked::Forgotten);
        assert_eq!(ledger.ack_time(0, 5 + RING as u64), Acked::At(2_000));
        assert_eq!(ledger.ack_time(3, 5), Acked::Forgotten);
    }

    #[test]
    fn seq_sets_know_their_members() {
        let s = set(&[0, 63, 64, 1_000]);
        for seq in [0, 63, 64, 1_000] {
            assert!(s.contains(seq), "{seq}");
        }
        for seq in [1, 62, 65, 999, 1_001, 1 << 40] {
            assert!(!s.contains(seq), "{seq}");
        }
        assert_eq!(s.count(), 4);
    }

    #[test]
    fn consumers_stop_early_only_when_no_record_failed() {
        let done = |failed: u64| {
            let ledger = Ledger::new(1, 1);
            let mut p = Produced {
                producer: 0,
                delivered: set(&[0, 1]),
                ..Produced::default()
            };
            p.counts.failed = failed;
            ledger.producer_done(p, 10);
            ledger.consumed(0, 0, 1);
            assert!(!ledger.all_consumed());
            ledger.consumed(0, 1, 1);
            ledger.all_consumed()
        };
        assert!(done(0));
        // A failed record may have been written and consumed in place of a
        // delivered one: the count cannot tell, so the drain runs its time.
        assert!(!done(1));
    }
}
