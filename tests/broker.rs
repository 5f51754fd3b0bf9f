//! `cauda broker` against a real Apache Kafka 4.1.1 (`scripts/kafka.sh`):
//! the record accounting adds up, the series are where they belong for
//! each acks, a topic cauda made is gone afterwards, a broker frozen for
//! 500 ms shows as its backlog, a killed broker ends the run with its data
//! saved, acks=all on three brokers waits for the replicas, and bad input
//! is refused before anything is measured. Skipped without Java and Maven
//! unless `CAUDA_REQUIRE_KAFKA=1`.
//!
//! And against a hostile fake broker (`bench/hostile_broker.py`, which
//! bench/review.py's class 10 uses too): counts larger than the frame,
//! replies trickled or never sent, in the handshake and mid-run — each
//! refused or given up within its deadline, with the exit code of its
//! phase, what was measured saved, and a signal acted on at once.

mod common;
use std::path::Path;
use std::time::Duration;

use common::kafka::Broker;
use common::{cauda, cauda_process, read_json, series_tags, succeeded};
use serde_json::Value;

/// `cauda broker --bootstrap BOOT ARGS -q -o OUT`: how it ended and the run file.
fn broker_run(boot: &str, out: &Path, args: &[&str]) -> (std::process::Output, Value) {
    let output = cauda()
        .args(["broker", "--bootstrap", boot, "-q", "--warmup", "200ms"])
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        out.exists(),
        "no run file: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (output, read_json(out))
}

/// `cauda broker --bootstrap BOOT ARGS -q -o OUT` refused: it exits with
/// `code`, says each of `needles`, and writes no run file.
fn refused_run(boot: &str, out: &Path, args: &[&str], code: i32, needles: &[&str]) {
    let head = [
        "broker",
        "--bootstrap",
        boot,
        "-q",
        "-o",
        out.to_str().unwrap(),
    ];
    common::ended_saying(&[&head[..], args].concat(), code, needles);
    assert!(!out.exists());
}

fn ok_run(boot: &str, out: &Path, args: &[&str]) -> Value {
    let (output, run) = broker_run(boot, out, args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    run
}

fn records(run: &Value) -> &Value {
    &run["broker"]["records"]
}

fn n(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

fn count(run: &Value, tag: &str) -> u64 {
    run["summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["tag"] == tag)
        .map_or(0, |s| n(&s["summary"], "count"))
}

fn p99_ns(run: &Value, tag: &str) -> u64 {
    let s = run["summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["tag"] == tag)
        .unwrap_or_else(|| panic!("no {tag}"));
    n(&s["summary"]["percentiles"], "99")
}

/// Every sent record ends acked, failed or in flight, each acked record
/// is consumed once, and the series count what the accounting says.
fn assert_accounted(run: &Value) {
    let r = records(run);
    assert_accounted_sent(r);
    assert_eq!(n(r, "lost"), 0, "{r}");
    assert_eq!(n(r, "duplicates"), 0, "{r}");
    assert_eq!(n(r, "out_of_order"), 0, "{r}");
    assert_eq!(n(r, "foreign"), 0, "{r}");
    assert_eq!(count(run, "e2e"), n(r, "consumed"), "{r}");
    assert_eq!(count(run, "publish.queue"), n(r, "sent"), "{r}");
}

#[test]
fn one_broker_open_loop_acks_and_faults() {
    let Some(broker) = Broker::start(1) else {
        return;
    };
    let boot = broker.bootstrap.clone();
    let dir = tempfile::tempdir().unwrap();

    // Open loop, acks=1, two producers and consumers over three partitions.
    let run = ok_run(
        &boot,
        &dir.path().join("acks1.json"),
        &[
            "--rate",
            "400/s",
            "--runtime",
            "2s",
            "--partitions",
            "3",
            "--producers",
            "2",
            "--consumers",
            "2",
        ],
    );
    assert_eq!(run["probe"], "broker");
    assert_eq!(run["load"], "open-loop");
    assert_eq!(
        series_tags(&run),
        [
            "publish",
            "publish.service",
            "publish.queue",
            "e2e",
            "e2e.fetch",
            "lag",
            "self"
        ]
    );
    assert_accounted(&run);
    common::assert_valid(&common::validator("run.schema.json"), &run);
    let r = records(&run);
    assert!(n(r, "sent") >= 790, "{r}"); // 400/s for 2 s
    assert_eq!(n(r, "acked"), n(r, "sent"));
    assert_eq!(n(r, "consumed"), n(r, "acked"));
    assert_eq!(count(&run, "publish"), n(r, "acked"));
    let b = &run["broker"];
    assert_eq!(b["topic"]["partitions"].as_array().unwrap().len(), 3);
    assert_eq!(b["topic"]["created"], true);
    assert_eq!(b["topic"]["deleted"], true);
    assert_eq!(b["client"]["acks"], 1);
    assert_eq!(b["client"]["linger_ns"], 0);
    assert!(
        b["cluster"]["features"]["metadata.version"]
            .as_i64()
            .unwrap()
            > 0
    );
    omb_export_matches(&dir.path().join("acks1.json"));
    let topic = b["topic"]["name"].as_str().unwrap();
    assert!(
        !broker.topic(&["list"]).contains(topic),
        "{topic} left behind"
    );
    // acks=all on one broker is acks=1, and the run says so.
    let warned = |run: &Value, needle: &str| {
        run["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["message"].as_str().unwrap().contains(needle))
    };
    let all = ok_run(
        &boot,
        &dir.path().join("all.json"),
        &["--acks", "all", "--runtime", "1s"],
    );
    assert!(warned(&all, "the same as acks=1"), "{}", all["warnings"]);
    assert_accounted(&all);

    // acks=0: no acknowledgement, so no publish series; e2e counts all.
    let zero = ok_run(
        &boot,
        &dir.path().join("acks0.json"),
        &["--acks", "0", "--runtime", "1s"],
    );
    assert_eq!(series_tags(&zero), ["publish.queue", "e2e", "lag", "self"]);
    assert!(warned(&zero, "acks=0"));
    let r = records(&zero);
    assert_eq!(n(r, "acked"), 0);
    assert_eq!(n(r, "unacknowledged"), n(r, "sent"));
    assert_eq!(n(r, "consumed"), n(r, "sent"));
    assert_accounted(&zero);

    // Closed loop: one record at a time, each consumed before the next.
    let closed = ok_run(
        &boot,
        &dir.path().join("closed.json"),
        &[
            "--closed-loop",
            "--runtime",
            "1s",
            "--keep-topic",
            "--topic",
            "kept",
        ],
    );
    assert_eq!(closed["load"], "closed-loop");
    assert_accounted(&closed);
    assert!(n(records(&closed), "consumed") > 50);
    assert!(broker.topic(&["list"]).contains("kept"));
    // The kept topic is reused, and its older records are not this run's.
    let again = ok_run(
        &boot,
        &dir.path().join("again.json"),
        &["--runtime", "1s", "--topic", "kept"],
    );
    assert_eq!(again["broker"]["topic"]["created"], false);
    assert_eq!(again["broker"]["topic"]["deleted"], false);
    assert_accounted(&again);
    assert!(broker.topic(&["list"]).contains("kept"));
    // A named topic cauda had to create is deleted after the run.
    let named = ok_run(
        &boot,
        &dir.path().join("named.json"),
        &["--runtime", "1s", "--topic", "made-for-one-run"],
    );
    assert_eq!(named["broker"]["topic"]["created"], true);
    assert_eq!(named["broker"]["topic"]["deleted"], true);
    assert!(!broker.topic(&["list"]).contains("made-for-one-run"));

    // A record too large for the topic is refused before measuring.
    let big = dir.path().join("big.json");
    let too_big = ["--size", "2M", "--runtime", "1s"];
    refused_run(&boot, &big, &too_big, 2, &["max.message.bytes"]);
    // So is a batch size above it: every full batch would be refused.
    let batches = dir.path().join("batches.json");
    let too_many = ["--batch-bytes", "2M"];
    refused_run(&boot, &batches, &too_many, 2, &["--batch-bytes 2097152"]);

    // Frozen for 500 ms at 1000 records/s: the backlog is in publish and
    // e2e, every record is still accounted for.
    let out = dir.path().join("frozen.json");
    let mut child = cauda_process()
        .args(["broker", "--bootstrap", &boot, "-q", "--warmup", "200ms"])
        .args(["--rate", "1000/s", "--runtime", "3s", "-o"])
        .arg(&out)
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1700));
    let pid = broker.pid(1).to_string();
    let signal = |sig: &str| {
        assert!(
            std::process::Command::new("kill")
                .args([sig, &pid])
                .status()
                .unwrap()
                .success()
        );
    };
    signal("-STOP");
    std::thread::sleep(Duration::from_millis(500));
    signal("-CONT");
    assert!(child.wait().unwrap().success());
    let frozen = read_json(&out);
    assert_accounted(&frozen);
    for tag in ["publish", "e2e"] {
        assert!(
            p99_ns(&frozen, tag) >= 100_000_000,
            "{tag} p99 {} ns",
            p99_ns(&frozen, tag)
        );
    }

    // The broker killed mid-run: exit 1, the intervals so far saved.
    let out = dir.path().join("killed.json");
    let child = cauda_process()
        .args(["broker", "--bootstrap", &boot, "-q", "--warmup", "200ms"])
        .args([
            "--rate",
            "500/s",
            "--runtime",
            "20s",
            "--timeout",
            "2s",
            "-o",
        ])
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    signal("-KILL");
    let ended = child.wait_with_output().unwrap();
    assert_eq!(ended.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&ended.stderr);
    assert!(stderr.contains("127.0.0.1"), "{stderr}");
    let killed = read_json(&out);
    let r = records(&killed);
    assert!(n(r, "acked") > 500, "{r}");
    assert_eq!(
        n(r, "sent"),
        n(r, "acked") + n(r, "failed") + n(r, "in_flight")
    );
}

#[test]
fn three_brokers_acks_all_waits_for_replicas() {
    let Some(broker) = Broker::start(3) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let boot = broker.bootstrap.split(',').next().unwrap().to_string();
    let run = ok_run(
        &boot,
        &dir.path().join("all.json"),
        &[
            "--acks",
            "all",
            "--replication-factor",
            "3",
            "--partitions",
            "3",
            "--runtime",
            "2s",
            "--topic-config",
            "min.insync.replicas=2",
        ],
    );
    assert_accounted(&run);
    let b = &run["broker"];
    assert_eq!(b["cluster"]["brokers"].as_array().unwrap().len(), 3);
    assert_eq!(b["topic"]["replication_factor"], 3);
    assert_eq!(b["topic"]["config"]["min.insync.replicas"], "2");
    assert!(
        !run["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["message"].as_str().unwrap().contains("same as acks=1"))
    );
    // Leaders are spread: the producer spoke to more than one broker.
    let leaders: std::collections::BTreeSet<i64> = b["topic"]["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["leader"].as_i64().unwrap())
        .collect();
    assert!(leaders.len() > 1, "{leaders:?}");

    // One broker leaves (a controlled shutdown takes it out of every ISR).
    // A topic that needs three in-sync replicas is made before it leaves.
    broker.topic(&[
        "create",
        "strict",
        "--replication-factor",
        "3",
        "--partitions",
        "1",
        "--config",
        "min.insync.replicas=3",
    ]);
    broker.stop_node(3);
    // acks=all there is refused by the broker (NOT_ENOUGH_REPLICAS, retried
    // for the warm-up's patience): before measuring, so exit 2, the reason
    // and what to do.
    let out = dir.path().join("strict.json");
    let strict = ["--topic", "strict", "--acks", "all", "--runtime", "1s"];
    let needles = ["NotEnoughReplicas", "min.insync.replicas"];
    refused_run(&boot, &out, &strict, 2, &needles);
    // A new RF 3 topic gets a replica on the stopped broker, out of sync:
    // the run measures and says the partitions are under-replicated.
    let degraded = ok_run(
        &boot,
        &dir.path().join("degraded.json"),
        &["--replication-factor", "3", "--runtime", "1s"],
    );
    assert_accounted(&degraded);
    let warnings = degraded["warnings"].to_string();
    assert!(warnings.contains("under-replicated"), "{warnings}");
    // Partitions on several leaders keep a request in flight to each: no
    // producer thread has one request's window to itself.
    if common::bpf::bpf_ready().is_some() {
        let args = ["--partitions", "3", "--max-in-flight", "1"];
        let out = dir.path().join("blamed.json");
        refused_run(
            &boot,
            &out,
            &[&args[..], &["--kernel", "blame"]].concat(),
            2,
            &["leaders"],
        );
    }
}

#[test]
fn blame_explains_each_slow_produce_request() {
    let Some(_alone) = common::bpf::bpf_ready() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("refused.json");
    // Refused before connecting: no request of its own, or several in flight.
    for (args, needle) in [
        (&["--acks", "0"][..], "--acks 0 has none"),
        (&[], "--max-in-flight 5"),
        (
            &["--max-in-flight", "3"],
            "--max-in-flight 1 with --producers N",
        ),
        (&["--max-in-flight", "1", "--acks-matrix"], "--acks-matrix"),
        (
            &[
                "--max-in-flight",
                "1",
                "--producers",
                "255",
                "--consumers",
                "2",
            ],
            "--producers 255 with --consumers 2",
        ),
    ] {
        let args = [args, &["--kernel", "blame"]].concat();
        refused_run("127.0.0.1:1", &out, &args, 2, &[needle]);
    }
    let Some(broker) = Broker::start(1) else {
        return;
    };
    // Every request is slow (above 1 µs): each one's vector is kept.
    let blamed = |rate: &str, runtime: &str, path: &Path| {
        let blame = [
            "--max-in-flight",
            "1",
            "--kernel",
            "blame",
            "--blame-above",
            "1us",
        ];
        let pace = ["--rate", rate, "--runtime", runtime];
        ok_run(&broker.bootstrap, path, &[&pace[..], &blame].concat())
    };
    let run = blamed("300/s", "2s", &dir.path().join("blamed.json"));
    assert_accounted(&run);
    common::assert_valid(&common::validator("run.schema.json"), &run);
    let blame = &run["blame"];
    let series: Vec<&str> = blame["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["tag"].as_str().unwrap())
        .collect();
    assert_eq!(series, ["publish.service"], "{blame}");
    let slowest = blame["slowest"].as_array().unwrap();
    assert_eq!(
        slowest.len(),
        100,
        "every request above 1 µs, the 100 slowest kept"
    );
    // Each vector fits its request, and the producer's thread spent the
    // requests asleep, waiting on the broker (its own work on loopback is
    // a few percent of a request).
    let mut blocked = 0;
    let mut latency = 0;
    for op in slowest {
        let ns = op["latency_ns"].as_u64().unwrap();
        let causes = op["causes"].as_object().unwrap();
        let sum: u64 = causes
            .iter()
            .filter(|(k, _)| !k.starts_with("page_fault"))
            .map(|(_, v)| v.as_u64().unwrap())
            .sum();
        assert!(sum <= ns, "{sum} ns of causes in {ns} ns: {op}");
        latency += ns;
        blocked += causes.get("blocked").and_then(Value::as_u64).unwrap_or(0);
    }
    assert!(
        blocked * 2 > latency,
        "blocked {blocked} of {latency} ns in the 100 slowest requests"
    );
    // Requests acknowledged after the schedule's end (a backlog drained)
    // are counted in its last interval, their blame too: the file reads.
    let path = dir.path().join("drained.json");
    blamed("20000/s", "1s", &path);
    succeeded(cauda().arg("analyze").arg(&path).output().unwrap());
    // A window is one request's: the slowest kept is the series' maximum.
    let most = slowest
        .iter()
        .map(|op| op["latency_ns"].as_u64().unwrap())
        .max()
        .unwrap();
    let max = run["summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["tag"] == "publish.service")
        .map(|s| n(&s["summary"], "max"))
        .unwrap();
    assert_eq!(most, max);
}

#[test]
fn bad_input_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.json");
    // Nothing listens on port 1 of loopback.
    let refused = cauda()
        .args(["broker", "--bootstrap", "127.0.0.1:1", "-q", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("cannot connect"), "{stderr}");
    assert!(stderr.contains("kafka.sh start"), "{stderr}");
    assert!(!out.exists());
    // A listener that is not Kafka and never answers: refused after the
    // handshake's 5 s, not the 30 s timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = silent.local_addr().unwrap().to_string();
    let _held = std::thread::spawn(move || {
        let held: Vec<_> = silent.incoming().take(1).collect();
        std::thread::sleep(Duration::from_secs(8));
        drop(held);
    });
    let started = std::time::Instant::now();
    let not_kafka = cauda()
        .args(["broker", "--bootstrap", &address, "-q", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(not_kafka.status.code(), Some(2));
    assert!(started.elapsed() < Duration::from_secs(8));
    let stderr = String::from_utf8_lossy(&not_kafka.stderr);
    assert!(stderr.contains("Kafka-protocol broker"), "{stderr}");
    assert!(!out.exists());
    // A listener that closes the connection once it has the handshake.
    let closing = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closing.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for mut conn in closing.incoming().flatten() {
            let _ = std::io::Read::read(&mut conn, &mut [0; 64]);
        }
    });
    let needles = ["closed the connection", "PLAINTEXT listener"];
    refused_run(&address, &out, &[], 2, &needles);
    for (args, needle) in [
        (&["--acks", "2"][..], "acks is 0, 1 or all"),
        (&["--size", "10"], "--size 10"),
        (&["--topic", "no spaces"], "topic names"),
        (&["--producers", "0"], "--producers 0"),
        (&["--topic-config", "flush.messages"], "NAME=VALUE"),
    ] {
        let got = cauda()
            .args(["broker", "--bootstrap", "127.0.0.1:1", "-q"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(got.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&got.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

/// `convert --to omb`: every field OMB's `TestResult` has, in its units
/// (publish ms, delay µs, e2e ms), agreeing with `cauda analyze`.
fn omb_export_matches(run: &Path) {
    let out = run.with_extension("omb.json");
    common::succeeded(
        cauda()
            .arg("convert")
            .arg(run)
            .args(["--to", "omb", "-o"])
            .arg(&out)
            .output()
            .unwrap(),
    );
    let doc = read_json(&out);
    for key in ["workload", "driver"] {
        assert!(doc[key].is_string(), "{key}");
    }
    for key in [
        "messageSize",
        "topics",
        "partitions",
        "producersPerTopic",
        "consumersPerTopic",
    ] {
        assert!(doc[key].is_u64(), "{key}");
    }
    for key in ["publishRate", "publishErrorRate", "consumeRate", "backlog"] {
        assert_eq!(
            doc[key].as_array().unwrap().len(),
            1,
            "{key}: one 10 s window"
        );
    }
    for prefix in ["publishLatency", "publishDelayLatency", "endToEndLatency"] {
        let cap = format!("{}{}", prefix[..1].to_uppercase(), &prefix[1..]);
        for suffix in [
            "Avg", "50pct", "75pct", "95pct", "99pct", "999pct", "9999pct", "99999pct", "Max",
        ] {
            assert!(
                doc[format!("{prefix}{suffix}")].is_array(),
                "{prefix}{suffix}"
            );
            assert!(
                doc[format!("aggregated{cap}{suffix}")].is_number(),
                "{cap}{suffix}"
            );
        }
        let q = doc[format!("aggregated{cap}Quantiles")]
            .as_object()
            .unwrap();
        for key in ["50.0", "99.0", "99.9", "99.99", "99.999", "100.0"] {
            assert!(q[key].is_number(), "{cap} quantile {key}");
        }
    }
    assert!(doc["publishDelayLatency99pct"][0].is_u64(), "µs, whole");
    let all = common::summaries(run, &[]);
    let p50 = |tag: &str| {
        common::series(&all, tag)["percentiles"]["50"]
            .as_f64()
            .unwrap()
    };
    let ms = |key: &str| doc[key].as_f64().unwrap() * 1e6;
    assert!((ms("aggregatedPublishLatency50pct") - p50("publish.service")).abs() < 1.0);
    assert!((ms("aggregatedEndToEndLatency50pct") - p50("e2e")).abs() < 1.0);
    let n = |key: &str| doc[key][0].as_f64().unwrap();
    assert!((n("publishRate") - n("consumeRate")).abs() < 1.0);
}

#[test]
fn the_acks_matrix_alternates_its_order_and_pools_each_setting() {
    let Some(broker) = Broker::start(1) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("m.json");
    let out = cauda()
        .args([
            "broker",
            "--bootstrap",
            &broker.bootstrap,
            "--warmup",
            "200ms",
        ])
        .args(["--rate", "300/s", "--runtime", "1s", "--acks-matrix", "-o"])
        .arg(&base)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Two rounds by default, the second in the reverse order.
    let order: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("cauda broker --acks-matrix: round"))
        .filter_map(|l| l.split("acks=").nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .collect();
    assert_eq!(order, ["0", "1", "all", "all", "1", "0"], "{stderr}");
    let mut sent = std::collections::BTreeMap::new();
    for acks in ["0", "1", "all"] {
        for round in [1, 2] {
            let run = read_json(&dir.path().join(format!("m-acks{acks}-r{round}.json")));
            assert_accounted(&run);
            *sent.entry(acks).or_insert(0) += count(&run, "e2e");
        }
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("2 rounds pooled"), "{stdout}");
    assert!(stdout.contains("acks=1 → acks=all:"), "{stdout}");
    assert!(stdout.contains("acks=1 → acks=0:"), "{stdout}");
    // Pooled: the comparison counts every round's values.
    let e2e_line = stdout
        .lines()
        .find(|l| l.starts_with("all ") && l.contains("e2e"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(!e2e_line.contains('—'), "{e2e_line}");
    assert!(sent["all"] >= 500, "{sent:?}");
}

/// A broker with an authorizer (Kafka's StandardAuthorizer), where cauda's
/// principal (ANONYMOUS on the PLAINTEXT listener) may describe, read,
/// write and delete topics but not create them: the topic cannot be made,
/// said so before measuring (exit 2), nothing written.
#[test]
fn a_topic_cauda_may_not_create_is_refused() {
    // The controller listener speaks SASL/PLAIN as `admin`, the super user
    // (the brokers' own requests, and the ACLs set below).
    let jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                username=\"admin\" password=\"cauda\"";
    let server = format!(
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n\
         super.users=User:admin\n\
         listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT\n\
         sasl.mechanism.controller.protocol=PLAIN\n\
         listener.name.controller.sasl.enabled.mechanisms=PLAIN\n\
         listener.name.controller.plain.sasl.jaas.config={jaas} user_admin=\"cauda\";\n"
    );
    let Some(broker) = Broker::start_with(1, &server) else {
        return;
    };
    let (host, port) = broker.bootstrap.rsplit_once(':').unwrap();
    let controller = format!("{host}:{}", port.parse::<u16>().unwrap() + 1);
    let admin = broker.dir().join("admin.properties");
    std::fs::write(
        &admin,
        format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={jaas};\n"
        ),
    )
    .unwrap();
    broker.tool_ok(
        "org.apache.kafka.tools.AclCommand",
        &[
            "--bootstrap-controller",
            &controller,
            "--command-config",
            admin.to_str().unwrap(),
            "--add",
            "--allow-principal",
            "User:ANONYMOUS",
            "--operation",
            "Describe",
            "--operation",
            "DescribeConfigs",
            "--operation",
            "Read",
            "--operation",
            "Write",
            "--operation",
            "Delete",
            "--topic",
            "*",
        ],
        "",
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.json");
    let needles = [
        "cannot create topic",
        "TopicAuthorizationFailed",
        "create it beforehand",
    ];
    for topic in [&[][..], &["--topic", "mine"]] {
        refused_run(&broker.bootstrap, &out, topic, 2, &needles);
    }
}

/// A hostile fake broker (`bench/hostile_broker.py MODE`), killed on drop.
struct Hostile {
    child: std::process::Child,
    bootstrap: String,
}

impl Hostile {
    fn start(mode: &str) -> Hostile {
        use std::io::BufRead;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/hostile_broker.py");
        let mut child = std::process::Command::new("python3")
            .arg(script)
            .arg(mode)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs the fake broker");
        let mut port = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        Hostile {
            child,
            bootstrap: format!("127.0.0.1:{}", port.trim()),
        }
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `cauda broker` against the fake broker in `mode` for a 3 s run (and
/// `args`): how it ended, how long it took, and the run file if saved.
fn against(mode: &str, args: &[&str]) -> (std::process::Output, Duration, Option<Value>) {
    let broker = Hostile::start(mode);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let began = std::time::Instant::now();
    let output = cauda()
        .args(["broker", "--bootstrap", &broker.bootstrap, "-q"])
        .args(["--warmup", "200ms", "--rate", "100/s", "--runtime", "3s"])
        .args(args)
        .arg("-o")
        .arg(&out)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let took = began.elapsed();
    (output, took, out.exists().then(|| read_json(&out)))
}

#[test]
fn a_count_larger_than_its_frame_in_the_handshake_is_an_unusable_broker() {
    for mode in ["huge-apiversions", "huge-metadata", "short-metadata"] {
        let (output, _, run) = against(mode, &[]);
        common::ended(&output, 2, &["--bootstrap 127.0.0.1:", "malformed"]);
        assert!(run.is_none(), "{mode}: a run file");
    }
}

#[test]
fn a_count_larger_than_its_frame_mid_run_fails_the_run_with_what_was_measured() {
    for (mode, series) in [("huge-produce", "publish"), ("huge-fetch", "publish")] {
        let (output, _, run) = against(mode, &[]);
        common::ended(&output, 1, &["malformed", "saved"]);
        let run = run.unwrap_or_else(|| panic!("{mode}: no run file"));
        let r = records(&run);
        assert!(n(r, "acked") >= 50, "{mode}: {r}");
        assert_eq!(count(&run, series), n(r, "acked"), "{mode}");
    }
    // The records of the malformed answer failed, and the advice says why.
    let (_, _, run) = against("huge-produce", &[]);
    let run = run.unwrap();
    assert_eq!(records(&run)["errors"]["BAD_RESPONSE"], 1, "{run}");
}

#[test]
fn a_handshake_trickled_or_never_answered_ends_within_its_limit() {
    for mode in [
        "trickle-apiversions",
        "silent-apiversions",
        "big-frame-apiversions",
    ] {
        let (output, took, _) = against(mode, &[]);
        common::ended(&output, 2, &["--bootstrap 127.0.0.1:"]);
        // The handshake gets 5 s overall.
        assert!(took < Duration::from_secs(15), "{mode}: {took:?}");
    }
}

#[test]
fn a_broker_that_stops_answering_ends_the_run_at_runtime_plus_timeout() {
    let (output, took, run) = against("silent-produce", &["--timeout", "1s"]);
    common::ended(&output, 0, &["DELIVERY_TIMEOUT"]);
    // 3 s + 1 s, the drain (2 s) and the warm-up: far below 20 s.
    assert!(took < Duration::from_secs(20), "{took:?}");
    let run = run.unwrap();
    let r = records(&run);
    assert!(n(r, "failed") > 0, "{r}");
    let advice: Vec<&str> = run["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["message"].as_str().unwrap().contains("failed"))
        .map(|w| w["advice"].as_str().unwrap())
        .collect();
    for (kind, _) in r["errors"].as_object().unwrap() {
        assert!(advice[0].contains(kind.as_str()), "{kind}: {advice:?}");
    }
}

#[test]
fn the_drain_after_the_schedule_is_no_interval_of_its_own() {
    // The fake broker never gives records back: consumers drain 2 s.
    let (output, _, run) = against("ok", &["--interval-length", "500ms"]);
    assert!(output.status.success());
    let run = run.unwrap();
    assert_eq!(n(&run, "duration_ns"), 3_000_000_000);
    for series in run["series"].as_array().unwrap() {
        let intervals = series["intervals"].as_array().unwrap();
        assert_eq!(intervals.len(), 6, "{}", series["tag"]);
    }
}

/// `cauda broker` at 10M records a second against the fake broker in
/// `mode` (and `args`), interrupted with SIGINT after `interrupt` if
/// given: how it ended, its peak memory in kB (`VmHWM`, read while it
/// runs) and the run file.
fn absurd(
    mode: &str,
    args: &[&str],
    interrupt: Option<Duration>,
) -> (std::process::Output, u64, Value) {
    let broker = Hostile::start(mode);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let mut child = cauda_process()
        .args(["broker", "--bootstrap", &broker.bootstrap, "-q"])
        .args(["--warmup", "200ms", "--rate", "10000000/s"])
        .args(args)
        .arg("-o")
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let began = std::time::Instant::now();
    let mut peak_kb = 0u64;
    while child.try_wait().unwrap().is_none() {
        let hwm = std::fs::read_to_string(&status).unwrap_or_default();
        if let Some(kb) = hwm
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak_kb = peak_kb.max(kb);
        }
        if interrupt.is_some_and(|after| began.elapsed() >= after) {
            std::process::Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status()
                .unwrap();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    (output, peak_kb, read_json(&out))
}

#[test]
fn a_rate_far_beyond_the_broker_keeps_memory_bounded_and_counts_what_was_never_sent() {
    // 10M records a second for 3 s at a broker that answers each request
    // 1.5 s late: the records behind wait in the schedule, not in memory
    // (they took 1.4 GB, and splitting the backlog at each request made
    // 845 records a second of 10M, before), and those never written are
    // NOT_SENT, every one due accounted for.
    let args = ["--runtime", "3s", "--timeout", "2s"];
    let (output, peak_kb, run) = absurd("slow-produce", &args, None);
    common::ended(&output, 0, &["NOT_SENT"]);
    assert!(peak_kb > 0 && peak_kb < 256 << 10, "peak RSS {peak_kb} kB");
    let r = records(&run);
    assert_accounted_sent(r);
    // Every record due in 3 s at 10M/s is sent or NOT_SENT (the first is
    // due one gap after the start, the last one gap before the end).
    assert_eq!(n(r, "sent"), 29_999_999, "{r}");
    assert!(n(&r["errors"], "NOT_SENT") > 25_000_000, "{r}");
    // The acknowledgements came until 1.5 s after the schedule's end: the
    // achieved rate counts over that, not over --runtime (it read 4.4M/s
    // of a broker that takes 800k/s).
    let until = run["offered"]["completed_until_ns"].as_u64().unwrap();
    let duration = run["duration_ns"].as_u64().unwrap();
    assert!(until > duration + 1_000_000_000, "{until} after {duration}");
    let load = &offered_load(&run);
    let publish: u64 = run["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["tag"] == "publish")
        .unwrap()["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["count"].as_u64().unwrap())
        .sum();
    let achieved = load["achieved_per_s"].as_f64().unwrap();
    let expected = publish as f64 * 1e9 / until as f64;
    assert!(
        (achieved - expected).abs() < 1e-6 * expected,
        "{achieved} ≠ {expected}"
    );
    assert_eq!(
        load["completed_after_end_ns"].as_u64(),
        Some(until - duration)
    );
    // The broker held the producer (its batches full) nearly all the run:
    // the broker is named as the limit, and the producer's lag before its
    // batches first filled is no finding (it read "the generator fell
    // behind", with the advice to add producers).
    let held = run["offered"]["held_ns"].as_u64().unwrap();
    assert!(
        held * 2 > run["offered"]["span_ns"].as_u64().unwrap(),
        "{held}"
    );
    assert!(load["held_share"].as_f64().unwrap() > 0.5, "{load}");
    assert!(load["generator_fell_behind"].is_null(), "{load}");
    let saturated = load["saturated"].as_str().unwrap_or_default();
    assert!(saturated.contains("batches full"), "{load}");
    assert!(
        !run["warnings"].to_string().contains("fell behind"),
        "{}",
        run["warnings"]
    );
}

#[test]
fn a_rate_far_beyond_the_producer_or_the_broker_names_one_of_them() {
    // Against a broker that answers at once, 10M/s: whichever limits the
    // rate here (the producer's own loop, or this fake broker), the run
    // names one of them, never both or neither.
    let named = |args: &[&str]| {
        let (output, _, run) = absurd("ok", args, None);
        common::ended(&output, 0, &[]);
        let load = offered_load(&run);
        (run, load)
    };
    let (run, load) = named(&["--runtime", "2s", "--timeout", "2s"]);
    let held = load["held_share"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&held), "{load}");
    assert!(run["offered"]["held_ns"].as_u64().is_some());
    let behind = load["generator_fell_behind"].is_string();
    let saturated = load["saturated"].is_string();
    assert!(behind != saturated, "{load}");
    assert_eq!(saturated, held >= 0.5, "{load}");
}

#[test]
fn acks_0_gets_no_response_and_a_broker_that_stops_reading_holds_the_producer() {
    // With acks=0 Kafka sends no response: the fake broker now sends none
    // either (it answered, which cauda refuses, so only real Kafka ran
    // acks=0). Every record is sent and none acknowledged.
    let (output, _, run) = against("ok", &["--acks", "0"]);
    common::ended(&output, 0, &["acks=0"]);
    let run = run.unwrap();
    let r = records(&run);
    assert!(n(r, "sent") >= 290, "{r}");
    assert_eq!(n(r, "acked"), 0, "{r}");
    assert_eq!(n(r, "unacknowledged"), n(r, "sent"), "{r}");
    assert_accounted_sent(r);
    assert_eq!(run["offered"]["held_ns"], 0, "{}", run["offered"]);

    // A broker that stops reading 1 s into measuring: the producer's writes
    // block, which is the broker holding it (the send buffer full), until
    // a write has waited --timeout (at least 5 s): the run fails, naming
    // the broker, with what was measured saved and the broker named as the
    // limit, not the producer. 6 s of schedule: the stop comes 1 s after
    // the consumers' first fetch, which a loaded machine may delay, and
    // held from then to the schedule's end is still over half of it.
    let args = ["--acks", "0", "--runtime", "6s", "--timeout", "2s"];
    let (output, _, run) = absurd("stop-reading", &args, None);
    common::ended(
        &output,
        1,
        &["did not take its Produce request within 5s", "saved in"],
    );
    let offered = &run["offered"];
    let held = offered["held_ns"].as_u64().unwrap();
    assert!(held * 2 > offered["span_ns"].as_u64().unwrap(), "{offered}");
    let load = &offered_load(&run);
    assert!(load["generator_fell_behind"].is_null(), "{load}");
    assert!(load["saturated"].is_string(), "{load}");
}

#[test]
fn a_stop_mid_backlog_counts_every_record_due_until_then() {
    // Interrupted while a request is written, the records still in the
    // schedule were not counted at all (sent 1.1M of 14M due). Run beside
    // the other tests (here: beside stress-ng on both CPUs), the producers
    // counted up to 14 ms less than the schedule's replay, which ran on to
    // the last thread's end instead of the stop.
    let args = ["--runtime", "60s", "--batch-bytes", "1m"];
    let (output, peak_kb, run) = absurd("ok", &args, Some(Duration::from_millis(2500)));
    common::ended(&output, 130, &["NOT_SENT"]);
    assert!(peak_kb < 256 << 10, "peak RSS {peak_kb} kB");
    let r = records(&run);
    assert_accounted_sent(r);
    let offered: u64 = run["offered"]["offered"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    // Both end at the stop: the offered section counted on to the
    // threads' end, 0.4–1 % past the producers' count, and more under load.
    // A producer may still take what falls due between the stop and its
    // seeing it (at most its 32 MiB of records).
    let sent = n(r, "sent");
    assert!(
        sent >= offered && (sent - offered) * 100 < offered,
        "sent {sent} of {offered} offered: {r}"
    );
}

/// `analyze --json`'s offered load of `run` (a run file's JSON).
fn offered_load(run: &Value) -> Value {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), run.to_string()).unwrap();
    common::analyze_json(file.path(), &[])["inputs"][0]["offered_load"].clone()
}

/// Every record sent ends acked, failed, in flight or unacknowledged, and
/// each kind of failure named has records.
fn assert_accounted_sent(r: &Value) {
    assert_eq!(
        n(r, "sent"),
        n(r, "acked") + n(r, "failed") + n(r, "in_flight") + n(r, "unacknowledged"),
        "{r}"
    );
    let errors = r["errors"].as_object().unwrap();
    assert!(errors.values().all(|v| v.as_u64() != Some(0)), "{r}");
}

/// `cauda broker` against the fake broker in `mode`, signalled with
/// `signal` after `after`: how long it took to exit, and how.
fn signalled(mode: &str, signal: &str, after: Duration) -> (Duration, std::process::Output, bool) {
    let broker = Hostile::start(mode);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let child = cauda_process()
        .args(["broker", "--bootstrap", &broker.bootstrap, "-q"])
        .args(["--warmup", "200ms", "--rate", "100/s", "--runtime", "3s"])
        .arg("-o")
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let sent = std::time::Instant::now();
    std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    let output = child.wait_with_output().unwrap();
    (sent.elapsed(), output, out.exists())
}

#[test]
fn blame_of_requests_a_slow_broker_answers_after_the_schedule_reads_back() {
    let Some(_alone) = common::bpf::bpf_ready() else {
        return;
    };
    // Each produce answered after 1.5 s from 1 s in: requests are still out,
    // and more are sent, after the schedule's end.
    let args = ["--size", "100", "--timeout", "5s", "--max-in-flight", "1"];
    let blame = ["--kernel", "blame", "--blame-above", "100ms"];
    let (output, _, run) = against("slow-produce", &[&args[..], &blame].concat());
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let run = run.unwrap();
    let slowest = run["blame"]["slowest"].as_array().unwrap();
    assert!(!slowest.is_empty(), "{}", run["blame"]);
    for op in slowest {
        assert!(op["latency_ns"].as_u64().unwrap() >= 1_400_000_000, "{op}");
        assert!(op["causes"].get("timer").is_none(), "{op}");
    }
    // Every slow request's start and interval lie inside the run: readers
    // take the file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("slow.json");
    std::fs::write(&path, run.to_string()).unwrap();
    succeeded(cauda().arg("analyze").arg(&path).output().unwrap());
}

#[test]
fn a_signal_ends_every_wait_on_a_broker_at_once() {
    // In the handshake (a reply trickled), and mid-run once the broker no
    // longer answers (producers wait for acknowledgements).
    for (mode, after, saved) in [
        ("trickle-apiversions", 1_000, false),
        ("silent-produce", 3_000, true),
    ] {
        for signal in ["-INT", "-TERM"] {
            let (took, output, run_file) = signalled(mode, signal, Duration::from_millis(after));
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(130), "{mode} {signal}: {stderr}");
            assert!(took < Duration::from_secs(3), "{mode} {signal}: {took:?}");
            assert_eq!(run_file, saved, "{mode} {signal}: {stderr}");
        }
    }
}

/// A broker whose accept queue is full drops the SYNs, so the connect
/// hangs for its whole timeout: a signal ends it at once (it held Ctrl-C
/// for the 5 s connect timeout).
#[test]
fn a_signal_ends_a_connect_that_hangs() {
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsFd;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    cauda::sys::set_listen_backlog(listener.as_fd(), 0).unwrap();
    let addr = listener.local_addr().unwrap();
    // Fill the accept queue until a connect no longer completes.
    let mut fillers = Vec::new();
    while let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
        fillers.push(s);
        assert!(fillers.len() < 64, "the accept queue never filled");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let child = cauda_process()
        .args([
            "broker",
            "--bootstrap",
            &addr.to_string(),
            "-q",
            "--runtime",
            "3s",
        ])
        .arg("-o")
        .arg(&out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1_000));
    let sent = std::time::Instant::now();
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "{:?}",
        sent.elapsed()
    );
    assert!(stderr.contains("interrupted while connecting"), "{stderr}");
    assert!(!out.exists());
    drop((fillers, listener));
}
