//! What a `broker` run says beside its series: warnings about the topic
//! and settings before measuring, and after it the record accounting's
//! faults, each with a warning saying what went wrong.

use super::config::{Acks, BrokerConfig};
use crate::model::broker::{RecordAccounting, TopicInfo};
use crate::model::{RunFile, Warning};
use crate::units::format_duration_compact;

/// What is worth knowing about the topic and settings before measuring.
pub(super) fn preflight_warnings(
    config: &BrokerConfig,
    topic: &TopicInfo,
    warnings: &mut Vec<Warning>,
) {
    if config.acks == Acks::All && topic.replication_factor <= 1 {
        warnings.push(Warning {
            message: format!(
                "topic {} has one replica per partition: acks=all waits for the leader alone, \
                 the same as acks=1",
                topic.name
            ),
            advice: "measure acks=all on a topic with --replication-factor 3 (three brokers: \
                     scripts/kafka.sh start --brokers 3)"
                .into(),
        });
    }
    let degraded: Vec<String> = topic
        .under_replicated()
        .map(|p| format!("{} (in sync {:?} of {:?})", p.partition, p.isr, p.replicas))
        .collect();
    if !degraded.is_empty() {
        warnings.push(Warning {
            message: format!(
                "topic {}: partition(s) {} under-replicated at the start: acks=all waits for \
                 fewer replicas there than on a healthy cluster, and is refused \
                 (NOT_ENOUGH_REPLICAS) below min.insync.replicas",
                topic.name,
                degraded.join(", ")
            ),
            advice: "check the brokers (one stopped or lagging) and measure again once every \
                     replica is in sync (scripts/kafka.sh topic describe NAME)"
                .into(),
        });
    }
    if config.acks == Acks::None {
        warnings.push(Warning {
            message: "acks=0: the broker acknowledges nothing, so there is no publish latency; \
                      e2e (intended send → consumed) is the measure, and a lost record shows \
                      only as lost"
                .into(),
            advice: "compare with --acks 1 and --acks all (--acks-matrix)".into(),
        });
    }
    if config.fetch_min_bytes > 1 && config.fetch_max_wait_ns >= 10_000_000 {
        warnings.push(Warning {
            message: format!(
                "--fetch-min-bytes {} with --fetch-max-wait {}: when less data than that is \
                 waiting, each fetch waits the whole max-wait, and e2e shows it",
                config.fetch_min_bytes,
                format_duration_compact(config.fetch_max_wait_ns)
            ),
            advice: "keep --fetch-min-bytes 1 to measure the broker, not the consumer's batching"
                .into(),
        });
    }
}

/// Puts the faults in `faults` and warns about what went wrong.
pub(super) fn annotate(
    run: &mut RunFile,
    r: &RecordAccounting,
    config: &BrokerConfig,
    stopped: bool,
) {
    for (name, value) in [
        ("failed", r.failed),
        ("lost", r.lost),
        ("duplicates", r.duplicates),
        ("out_of_order", r.out_of_order),
        ("in_flight", r.in_flight),
    ] {
        run.faults.insert(name.into(), value);
    }
    if r.failed > 0 {
        let why: Vec<String> = r.errors.iter().map(|(k, v)| format!("{v} {k}")).collect();
        run.warnings.push(Warning {
            message: format!(
                "{} of {} records failed: {}",
                r.failed,
                r.sent,
                why.join(", ")
            ),
            advice: failure_advice(r.errors.keys().map(String::as_str)),
        });
    }
    let delivered = if config.acks == Acks::None {
        "sent"
    } else {
        "acknowledged"
    };
    if r.lost > 0 && stopped {
        run.warnings.push(Warning {
            message: format!(
                "{} records were {delivered} but not consumed before the run stopped (counted \
                 lost): a stop ends the consumers at once",
                r.lost
            ),
            advice: "let the run end by itself (--runtime) to have every record consumed".into(),
        });
    } else if r.lost > 0 {
        run.warnings.push(Warning {
            message: format!("{} records were {delivered} but never consumed", r.lost),
            advice: "with acks=1 a leader that fails loses what it had not replicated; otherwise \
                     the consumers ran out of drain time (a stalled broker?)"
                .into(),
        });
    }
    if r.duplicates + r.out_of_order > 0 {
        run.warnings.push(Warning {
            message: format!(
                "{} records consumed twice, {} out of order",
                r.duplicates, r.out_of_order
            ),
            advice: "records are not retried by cauda: a duplicate came from the broker".into(),
        });
    }
    if r.foreign > 0 {
        run.warnings.push(Warning {
            message: format!(
                "{} records on topic {} were not this run's (another writer)",
                r.foreign, config.topic
            ),
            advice: "measure on a topic of its own (omit --topic for a fresh one)".into(),
        });
    }
}

/// What the failures that happened mean, one clause for each kind (and
/// the broker's log for its own error codes).
fn failure_advice<'a>(kinds: impl Iterator<Item = &'a str>) -> String {
    let mut clauses: Vec<&str> = Vec::new();
    let mut broker = false;
    for kind in kinds {
        let clause = match kind {
            "DELIVERY_TIMEOUT" => {
                "DELIVERY_TIMEOUT: no acknowledgement within --timeout (each is in publish at \
                 the latency it had then)"
            }
            "NOT_SENT" => {
                "NOT_SENT: due and never written, because the run ended first (a stop, or \
                 --timeout past --runtime with the broker not answering or the producers \
                 behind --rate)"
            }
            "SEND_FAILED" => "SEND_FAILED: the connection failed while the request was written",
            "BAD_RESPONSE" => {
                "BAD_RESPONSE: the broker's answer was malformed, so what became of the records \
                 is unknown"
            }
            _ => {
                broker = true;
                continue;
            }
        };
        clauses.push(clause);
    }
    if broker {
        clauses.push("the broker's error codes: see the broker's log");
    }
    clauses.join("; ")
}

#[cfg(test)]
mod tests {
    use super::failure_advice;

    #[test]
    fn the_advice_names_the_failures_that_happened() {
        let not_sent = failure_advice(["NOT_SENT"].into_iter());
        assert!(not_sent.starts_with("NOT_SENT"), "{not_sent}");
        assert!(!not_sent.contains("DELIVERY_TIMEOUT"), "{not_sent}");
        let both = failure_advice(["DELIVERY_TIMEOUT", "NOT_ENOUGH_REPLICAS (19)"].into_iter());
        assert!(
            both.contains("DELIVERY_TIMEOUT") && both.contains("broker's log"),
            "{both}"
        );
    }
}
