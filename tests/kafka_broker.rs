//! The real Kafka broker `scripts/kafka.sh` starts, the one the
//! `cauda broker` tests run against (tests/broker.rs): one broker, and a
//! three-node cluster hosting a topic with replication factor 3 and
//! min.insync.replicas 2, each taking records from Kafka's own console
//! producer and giving them back to its console consumer. Skipped without
//! Java and Maven unless `CAUDA_REQUIRE_KAFKA=1`.

mod common;
use common::kafka::Broker;

const PRODUCER: &str = "org.apache.kafka.tools.ConsoleProducer";
const CONSUMER: &str = "org.apache.kafka.tools.consumer.ConsoleConsumer";

/// Sends five records to partition 0 of `topic` with `acks`, reads them
/// back from the start of the partition, and expects the same five in order.
fn round_trip(broker: &Broker, topic: &str, acks: &str) {
    let records: Vec<String> = (1..=5).map(|i| format!("{topic} record {i}")).collect();
    let boot = broker.bootstrap.as_str();
    let acks = format!("acks={acks}");
    broker.tool_ok(
        PRODUCER,
        &[
            "--bootstrap-server",
            boot,
            "--topic",
            topic,
            "--producer-property",
            &acks,
        ],
        &(records.join("\n") + "\n"),
    );
    // An assigned partition, no consumer group: nothing waits for a
    // group coordinator.
    let consumed = broker.tool_ok(
        CONSUMER,
        &[
            "--bootstrap-server",
            boot,
            "--topic",
            topic,
            "--partition",
            "0",
            "--offset",
            "earliest",
            "--max-messages",
            "5",
            "--timeout-ms",
            "30000",
        ],
        "",
    );
    assert_eq!(consumed.lines().collect::<Vec<_>>(), records);
}

#[test]
fn one_broker_takes_records_and_gives_them_back() {
    let Some(broker) = Broker::start(1) else {
        return;
    };
    assert!(
        broker.bootstrap.starts_with("127.0.0.1:") && !broker.bootstrap.contains(','),
        "{}",
        broker.bootstrap
    );
    broker.topic(&["create", "smoke", "--partitions", "1"]);
    assert!(broker.topic(&["list"]).lines().any(|t| t == "smoke"));
    round_trip(&broker, "smoke", "1");
}

#[test]
fn three_brokers_host_a_topic_with_replication_factor_3() {
    let Some(broker) = Broker::start(3) else {
        return;
    };
    assert_eq!(
        broker.bootstrap.split(',').count(),
        3,
        "{}",
        broker.bootstrap
    );
    broker.topic(&[
        "create",
        "acks-all",
        "--partitions",
        "1",
        "--replication-factor",
        "3",
        "--config",
        "min.insync.replicas=2",
    ]);
    let described = broker.topic(&["describe", "acks-all"]);
    assert!(described.contains("ReplicationFactor: 3"), "{described}");
    assert!(described.contains("min.insync.replicas=2"), "{described}");
    let isr = described
        .split("Isr: ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no Isr in {described}"));
    assert_eq!(isr.split(',').count(), 3, "{described}");
    round_trip(&broker, "acks-all", "all");
}
