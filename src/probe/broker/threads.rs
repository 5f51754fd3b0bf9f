//! The `broker` probe's threads as the run engine runs them: threads
//! `0..producers` produce, the rest consume. Each is connected (and a
//! producer warmed up) while preparing, then handed to its thread's body.

use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Result, anyhow};

use super::admin::Versions;
use super::config::BrokerConfig;
use super::consume::{ConsumeSeries, Consumer, FetchSettings};
use super::ledger::Ledger;
use super::produce::{Pace, ProduceSeries, ProduceSettings, Producer};
use super::wire::unusable;
use crate::record::{MonotonicClock, Recorder, Sink, StopFlag};

/// What every thread of a run shares, and each one's connection between
/// preparing and running.
pub(super) struct Threads<'a> {
    config: &'a BrokerConfig,
    produce_settings: ProduceSettings,
    fetch_settings: FetchSettings,
    /// The partitions measured: (partition, leader address).
    partitions: Vec<(i32, String)>,
    pace: Pace,
    produce_ids: ProduceSeries,
    consume_ids: ConsumeSeries,
    /// What producers and consumers share; read by the completion.
    pub(super) ledger: Ledger,
    producers: Vec<Mutex<Option<Producer>>>,
    consumers: Vec<Mutex<Option<Consumer>>>,
    stop: &'a StopFlag,
}

impl<'a> Threads<'a> {
    /// The threads of a run on `partitions`, recording into `ids`.
    pub(super) fn new(
        config: &'a BrokerConfig,
        versions: Versions,
        io_timeout: Duration,
        partitions: Vec<(i32, String)>,
        (produce_ids, consume_ids): (ProduceSeries, ConsumeSeries),
        ledger: Ledger,
        stop: &'a StopFlag,
    ) -> Threads<'a> {
        let client = config.client();
        let produce_settings = ProduceSettings {
            topic: config.topic.clone(),
            client: client.clone(),
            versions,
            io_timeout,
        };
        let fetch_settings = FetchSettings {
            topic: config.topic.clone(),
            client,
            versions,
            io_timeout,
            drain_ns: (2 * config.fetch_max_wait_ns).max(2_000_000_000),
            max_frame: super::consume::fetch_frame(0),
        };
        let pace = match config.rate_per_s {
            Some(rate) => Pace::Rate(rate / config.producers as f64, config.arrivals),
            None => Pace::Closed,
        };
        Threads {
            config,
            produce_settings,
            fetch_settings,
            partitions,
            pace,
            produce_ids,
            consume_ids,
            ledger,
            producers: (0..config.producers).map(|_| Mutex::new(None)).collect(),
            consumers: (0..config.consumers).map(|_| Mutex::new(None)).collect(),
            stop,
        }
    }

    /// Fetch responses may hold batches of up to `bytes`.
    pub(super) fn with_largest_batch(mut self, bytes: usize) -> Threads<'a> {
        self.fetch_settings.max_frame = super::consume::fetch_frame(bytes);
        self
    }

    /// Connects thread `thread`'s producer (and warms it up) or consumer.
    pub(super) fn prepare(&self, thread: usize) -> Result<()> {
        if thread < self.config.producers {
            self.prepare_producer(thread)
        } else {
            self.prepare_consumer(thread - self.config.producers)
        }
    }

    fn prepare_producer(&self, p: usize) -> Result<()> {
        let producer = Producer::connect(p, &self.produce_settings, &self.partitions, self.stop)
            .and_then(|mut p| {
                p.warm_up(
                    &MonotonicClock,
                    self.config.warmup_ns,
                    &self.ledger,
                    self.stop,
                )?;
                Ok(p)
            });
        self.ledger.warmed_up();
        let producer = producer.map_err(|e| unusable(e, &self.config.bootstrap))?;
        *self.producers[p].lock().map_err(|_| anyhow!("poisoned"))? = Some(producer);
        Ok(())
    }

    fn prepare_consumer(&self, c: usize) -> Result<()> {
        // Start after the warm-up's records, so none is read while measuring.
        let wait = Duration::from_nanos(self.config.warmup_ns) + Duration::from_secs(30);
        let given_up = std::time::Instant::now() + wait;
        while !self.ledger.wait_warmed_up(Duration::from_millis(100)) {
            if self.stop.is_raised() {
                return Err(crate::error::interrupted(
                    "interrupted during the warm-up: nothing was measured",
                ));
            }
            if std::time::Instant::now() > given_up {
                return Err(anyhow!(
                    "the producers' warm-up did not end within {wait:?}"
                ));
            }
        }
        let consumer = Consumer::connect(
            &self.fetch_settings,
            &self.share(c),
            self.config.producers,
            self.stop,
        )
        .map_err(|e| unusable(e, &self.config.bootstrap))?;
        *self.consumers[c].lock().map_err(|_| anyhow!("poisoned"))? = Some(consumer);
        Ok(())
    }

    /// Consumer `c` reads partitions c, c + consumers, …
    fn share(&self, c: usize) -> Vec<(i32, String)> {
        self.partitions
            .iter()
            .enumerate()
            .filter(|(i, _)| i % self.config.consumers == c)
            .map(|(_, p)| p.clone())
            .collect()
    }

    /// Runs thread `thread`'s producer or consumer from `start`; returns
    /// when it stopped, or the schedule's end when it went on past it
    /// (see [`WithinRuntime`]).
    pub(super) fn body(
        &self,
        thread: usize,
        start: u64,
        recorder: &mut Recorder,
        stop: &StopFlag,
    ) -> Result<u64> {
        let last_ns = start + self.config.runtime_ns.saturating_sub(1);
        let recorder = &mut WithinRuntime { recorder, last_ns };
        self.run_thread(thread, start, recorder, stop)
            .map(|end| end.min(last_ns + 1))
    }

    fn run_thread(
        &self,
        thread: usize,
        start: u64,
        recorder: &mut WithinRuntime<'_>,
        stop: &StopFlag,
    ) -> Result<u64> {
        let clock = MonotonicClock;
        if thread < self.config.producers {
            let Some(producer) = self.producers[thread]
                .lock()
                .map_err(|_| anyhow!("poisoned"))?
                .take()
            else {
                self.ledger
                    .producer_gone(thread, crate::sys::monotonic_ns());
                return Err(anyhow!("producer {thread} was not prepared"));
            };
            producer
                .run(
                    &clock,
                    recorder,
                    stop,
                    self.pace,
                    start,
                    start + self.config.runtime_ns,
                    self.config.producers,
                    self.produce_ids,
                    &self.ledger,
                )
                .map_err(|e| anyhow!("producer {thread}: {e:#}"))
        } else {
            let c = thread - self.config.producers;
            let consumer = self.consumers[c]
                .lock()
                .map_err(|_| anyhow!("poisoned"))?
                .take()
                .ok_or_else(|| anyhow!("consumer {c} was not prepared"))?;
            consumer
                .run(&clock, recorder, stop, self.consume_ids, &self.ledger)
                .map_err(|e| anyhow!("consumer {c}: {e:#}"))
        }
    }
}

/// What the measuring threads record into: the run's intervals span the
/// schedule (`--runtime`). What completes after it — the producers'
/// last acknowledgements, the records the consumers drain — is counted in
/// the last interval, its latency whole, so the drain makes no intervals
/// of its own, whose fall in rate would read as a stall.
struct WithinRuntime<'a> {
    recorder: &'a mut Recorder,
    /// The last nanosecond of the schedule.
    last_ns: u64,
}

impl Sink for WithinRuntime<'_> {
    fn record(&mut self, now_ns: u64, series: usize, value: u64) {
        self.recorder.record_by(now_ns, self.last_ns, series, value);
    }

    fn begin(&mut self, intended_ns: u64) {
        self.recorder.begin(intended_ns);
    }

    fn fault(&mut self, now_ns: u64) {
        self.recorder.fault(now_ns.min(self.last_ns));
    }
}
