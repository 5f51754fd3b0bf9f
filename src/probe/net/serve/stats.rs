//! What the responder did, counted: one line for people at the end, and a
//! Prometheus page for `cauda serve --metrics`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::config::REFLECTION_FACTOR;

/// What the responder did, counted.
#[derive(Debug, Default)]
pub struct ServeStats {
    /// Requests answered.
    pub replies: AtomicU64,
    /// TCP connections accepted.
    pub accepted: AtomicU64,
    /// TCP connections closed on accept: no descriptor, thread or room.
    pub refused: AtomicU64,
    /// Connections closed to make room at `--max-conns` (the longest idle).
    pub evicted: AtomicU64,
    /// Connections or datagrams dropped for a malformed frame.
    pub malformed: AtomicU64,
    /// UDP requests not answered because the reply would be more than
    /// [`REFLECTION_FACTOR`] times the request (beyond loopback).
    pub oversized: AtomicU64,
    /// Connections dropped because a frame was not completed in time.
    pub slow: AtomicU64,
    /// Connections closed for being idle.
    pub idle: AtomicU64,
    /// TCP connections open now.
    pub open: AtomicUsize,
}

impl ServeStats {
    /// One line for people.
    pub fn line(&self) -> String {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut line = format!(
            "{} replies; {} connections accepted, {} refused, {} evicted (longest idle at \
             --max-conns), dropped: {} malformed, {} slow, {} idle",
            get(&self.replies),
            get(&self.accepted),
            get(&self.refused),
            get(&self.evicted),
            get(&self.malformed),
            get(&self.slow),
            get(&self.idle)
        );
        let oversized = get(&self.oversized);
        if oversized > 0 {
            line.push_str(&format!(
                "; {oversized} UDP request(s) unanswered: the reply would be over \
                 {REFLECTION_FACTOR}× the request beyond loopback (--allow-large-replies)"
            ));
        }
        line
    }

    /// The counters as a Prometheus page, labelled with the protocol.
    pub fn page(&self, protocol: &str) -> crate::probe::run::endpoint::Page {
        use crate::formats::export::prometheus::{Family, Metric, Value};
        let labels = vec![("protocol".to_string(), protocol.to_string())];
        let counter = |name, help, a: &AtomicU64| Family {
            name,
            help,
            metrics: vec![Metric {
                labels: labels.clone(),
                value: Value::Counter(a.load(Ordering::Relaxed) as f64),
            }],
        };
        let families = [
            counter(
                "cauda_serve_replies_total",
                "Requests answered.",
                &self.replies,
            ),
            counter(
                "cauda_serve_connections_accepted_total",
                "TCP connections accepted.",
                &self.accepted,
            ),
            counter(
                "cauda_serve_connections_refused_total",
                "TCP connections closed on accept: no descriptor, thread or room.",
                &self.refused,
            ),
            counter(
                "cauda_serve_connections_evicted_total",
                "Connections closed to make room at --max-conns (the longest idle).",
                &self.evicted,
            ),
            counter(
                "cauda_serve_malformed_total",
                "Connections or datagrams dropped for a malformed frame.",
                &self.malformed,
            ),
            counter(
                "cauda_serve_oversized_total",
                "UDP requests unanswered: the reply would be too large beyond loopback.",
                &self.oversized,
            ),
            counter(
                "cauda_serve_slow_total",
                "Connections dropped because a frame was not completed in time.",
                &self.slow,
            ),
            counter(
                "cauda_serve_idle_total",
                "Connections closed for being idle.",
                &self.idle,
            ),
            Family {
                name: "cauda_serve_connections_open",
                help: "TCP connections open now.",
                metrics: vec![Metric {
                    labels: labels.clone(),
                    value: Value::Gauge(self.open.load(Ordering::Relaxed) as f64),
                }],
            },
        ];
        crate::probe::run::endpoint::Page::of(&families, 0)
    }
}
