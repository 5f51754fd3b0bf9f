//! Before and after a broker run: which API versions to speak, what the
//! cluster and the topic look like (creating the topic when it is missing,
//! deleting it after), and where each partition's log ends.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, CreateTopicsRequest, DeleteTopicsRequest, DescribeConfigsRequest,
    ListOffsetsRequest, MetadataRequest, MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::wire::{Conn, error_name};
use crate::error::input_error;
use crate::model::broker::{BrokerNode, ClusterInfo, PartitionLayout, TopicInfo};
use crate::record::StopFlag;

/// The API versions cauda speaks: the highest each side knows, within
/// the versions that still name topics (Produce ≤ 12, Fetch ≤ 12).
#[derive(Clone, Copy, Debug, Default)]
pub struct Versions {
    /// Produce.
    pub produce: i16,
    /// Fetch.
    pub fetch: i16,
    /// Metadata.
    pub metadata: i16,
    /// ListOffsets.
    pub list_offsets: i16,
    /// CreateTopics.
    pub create_topics: i16,
    /// DeleteTopics.
    pub delete_topics: i16,
    /// DescribeConfigs.
    pub describe_configs: i16,
}

/// The APIs used and the newest version of each cauda encodes.
const APIS: [(ApiKey, i16, i16); 7] = [
    (ApiKey::Produce, 3, 12),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::Metadata, 4, 12),
    (ApiKey::ListOffsets, 1, 9),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 5),
    (ApiKey::DescribeConfigs, 1, 4),
];

/// Every request cauda sends with the versions it may speak: `APIS`
/// and the handshake's ApiVersions v3.
pub const VERSIONS_SPOKEN: [(ApiKey, i16, i16); 8] = [
    (ApiKey::ApiVersions, 3, 3),
    APIS[0],
    APIS[1],
    APIS[2],
    APIS[3],
    APIS[4],
    APIS[5],
    APIS[6],
];

/// What the bootstrap broker said, and the versions chosen.
#[derive(Debug)]
pub struct Bootstrap {
    /// The cluster, for the run file.
    pub cluster: ClusterInfo,
    /// The versions chosen.
    pub versions: Versions,
    /// The connection, kept for the topic's administration before the run.
    pub conn: Conn,
    /// The I/O timeout of a connection (a fresh one deletes the topic
    /// after the run: the broker closes one idle for 10 minutes).
    pub timeout: Duration,
}

/// How long the handshake may take, overall: a listener that is not
/// Kafka may never answer, or answer a byte at a time.
pub const HANDSHAKE: Duration = Duration::from_secs(5);

/// Connects to `address`, asks for the broker's API versions and the
/// cluster's brokers, and picks the versions to speak; `stop` ends any
/// wait. Every failure is an unusable peer (exit 2), naming `--bootstrap`.
pub fn bootstrap(address: &str, timeout: Duration, stop: &StopFlag) -> Result<Bootstrap> {
    handshake(address, timeout, stop).map_err(|e| super::wire::unusable(e, address))
}

fn handshake(address: &str, timeout: Duration, stop: &StopFlag) -> Result<Bootstrap> {
    let mut conn = Conn::connect(address, timeout.min(HANDSHAKE), stop).map_err(|e| {
        if super::wire::stopped(&e) {
            return e;
        }
        input_error(format!(
            "{e}; is a Kafka-protocol broker listening there? (`scripts/kafka.sh start` runs one \
             on 127.0.0.1:9092)"
        ))
    })?;
    conn.set_timeout(timeout.min(HANDSHAKE), "the handshake's limit");
    let mut request = ApiVersionsRequest::default();
    request.client_software_name = StrBytes::from_static_str("cauda");
    request.client_software_version = StrBytes::from_static_str(env!("CARGO_PKG_VERSION"));
    let response = conn.call(&request, 3).map_err(|e| {
        if super::wire::stopped(&e) {
            return e;
        }
        input_error(format!(
            "--bootstrap {address}: {e:#}: is it a Kafka-protocol broker, and a PLAINTEXT \
             listener?"
        ))
    })?;
    conn.set_timeout(timeout, "--timeout, at least 5s");
    if response.error_code != 0 {
        bail!(
            "the broker at {address} refused ApiVersions v3: {}",
            error_name(response.error_code)
        );
    }
    let mut cluster = ClusterInfo {
        bootstrap: address.to_string(),
        ..ClusterInfo::default()
    };
    let mut chosen = BTreeMap::new();
    for (api, ours_min, ours_max) in APIS {
        let theirs = response
            .api_keys
            .iter()
            .find(|k| k.api_key == api as i16)
            .ok_or_else(|| anyhow!("the broker at {address} does not offer the {api:?} API"))?;
        let name = format!("{api:?}");
        cluster.api_versions.insert(
            name.clone(),
            format!("{}-{}", theirs.min_version, theirs.max_version),
        );
        let version = theirs.max_version.min(ours_max);
        if version < ours_min.max(theirs.min_version) {
            bail!(
                "the broker at {address} speaks {api:?} v{}–v{}; cauda speaks v{ours_min}–v{ours_max}",
                theirs.min_version,
                theirs.max_version
            );
        }
        chosen.insert(name.clone(), version);
        cluster.api_versions_used.insert(name, version);
    }
    for feature in &response.finalized_features {
        cluster
            .features
            .insert(feature.name.to_string(), feature.max_version_level);
    }
    let get = |api: ApiKey| chosen[&format!("{api:?}")];
    let versions = Versions {
        produce: get(ApiKey::Produce),
        fetch: get(ApiKey::Fetch),
        metadata: get(ApiKey::Metadata),
        list_offsets: get(ApiKey::ListOffsets),
        create_topics: get(ApiKey::CreateTopics),
        delete_topics: get(ApiKey::DeleteTopics),
        describe_configs: get(ApiKey::DescribeConfigs),
    };
    let metadata = metadata(&mut conn, versions, None)?;
    cluster.cluster_id = metadata.cluster_id.as_ref().map(|c| c.to_string());
    cluster.controller_id = metadata.controller_id.0;
    cluster.brokers = metadata
        .brokers
        .iter()
        .map(|b| BrokerNode {
            id: b.node_id.0,
            host: b.host.to_string(),
            port: b.port,
            rack: b.rack.as_ref().map(|r| r.to_string()),
        })
        .collect();
    Ok(Bootstrap {
        cluster,
        versions,
        conn,
        timeout,
    })
}

fn metadata(conn: &mut Conn, versions: Versions, topic: Option<&str>) -> Result<MetadataResponse> {
    let mut request = MetadataRequest::default();
    request.topics = Some(
        topic
            .map(|t| {
                let mut entry = MetadataRequestTopic::default();
                entry.name = Some(TopicName(StrBytes::from_string(t.to_string())));
                vec![entry]
            })
            .unwrap_or_default(),
    );
    request.allow_auto_topic_creation = false;
    conn.call(&request, versions.metadata)
}

/// What to do when the topic does not exist.
#[derive(Clone, Debug)]
pub struct TopicWanted {
    /// The topic's name.
    pub name: String,
    /// Partitions when creating it (and at least this many when it exists).
    pub partitions: usize,
    /// Replicas per partition when creating it; `None`: the broker's default.
    pub replication_factor: Option<i16>,
    /// Topic configs to set when creating it.
    pub configs: Vec<(String, String)>,
}

/// The configs read back, because they decide latency.
const CONFIGS: [&str; 6] = [
    "min.insync.replicas",
    "flush.messages",
    "flush.ms",
    "max.message.bytes",
    "message.timestamp.type",
    "unclean.leader.election.enable",
];

/// Finds or creates the topic, waits until every partition has a leader,
/// and reads the configs that decide latency.
pub fn topic(boot: &mut Bootstrap, wanted: &TopicWanted) -> Result<TopicInfo> {
    let versions = boot.versions;
    let conn = &mut boot.conn;
    let mut created = false;
    let response = metadata(conn, versions, Some(&wanted.name))?;
    let code = response.topics.first().map_or(3, |t| t.error_code);
    match code {
        0 => {}
        3 => created = create(conn, versions, wanted)?,
        29 => {
            return Err(input_error(format!(
                "topic {}: not authorized to describe it ({})",
                wanted.name,
                error_name(code)
            )));
        }
        _ => bail!(
            "topic {}: the broker answered {}",
            wanted.name,
            error_name(code)
        ),
    }
    let described = layout_and_config(conn, versions, wanted);
    if described.is_err() && created {
        // Made by this call and not usable: not left behind.
        let _ = delete(conn, versions, &wanted.name);
    }
    let (layout, config) = described?;
    Ok(TopicInfo {
        name: wanted.name.clone(),
        created,
        deleted: false,
        replication_factor: layout.iter().map(|p| p.replicas.len()).max().unwrap_or(0),
        partitions: layout,
        config,
    })
}

/// The partitions once each has a leader (and at least as many as wanted),
/// and the configs that decide latency.
fn layout_and_config(
    conn: &mut Conn,
    versions: Versions,
    wanted: &TopicWanted,
) -> Result<(Vec<PartitionLayout>, BTreeMap<String, String>)> {
    // A new topic's leaders take a moment to be elected.
    let deadline = Instant::now() + Duration::from_secs(30);
    let layout = loop {
        let response = metadata(conn, versions, Some(&wanted.name))?;
        let led = response
            .topics
            .first()
            .filter(|t| t.error_code == 0)
            .map(|t| {
                let mut parts: Vec<PartitionLayout> = t
                    .partitions
                    .iter()
                    .map(|p| PartitionLayout {
                        partition: p.partition_index,
                        leader: p.leader_id.0,
                        replicas: p.replica_nodes.iter().map(|r| r.0).collect(),
                        isr: p.isr_nodes.iter().map(|r| r.0).collect(),
                    })
                    .collect();
                parts.sort_by_key(|p| p.partition);
                parts
            });
        if let Some(parts) = led
            && !parts.is_empty()
            && parts.iter().all(|p| p.leader >= 0)
        {
            break parts;
        }
        if Instant::now() > deadline {
            bail!(
                "topic {}: partitions still without a leader after 30 s",
                wanted.name
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if layout.len() < wanted.partitions {
        return Err(input_error(format!(
            "topic {} has {} partition(s), fewer than --partitions {}; give a new --topic or \
             --partitions {}",
            wanted.name,
            layout.len(),
            wanted.partitions,
            layout.len()
        )));
    }
    let config = describe(conn, versions, &wanted.name)?;
    Ok((layout, config))
}

/// Creates the topic: true when this call made it, false when another
/// client made it first.
fn create(conn: &mut Conn, versions: Versions, wanted: &TopicWanted) -> Result<bool> {
    let mut topic = CreatableTopic::default();
    topic.name = TopicName(StrBytes::from_string(wanted.name.clone()));
    topic.num_partitions = wanted.partitions as i32;
    topic.replication_factor = wanted.replication_factor.unwrap_or(-1);
    for (name, value) in &wanted.configs {
        let mut c = CreatableTopicConfig::default();
        c.name = StrBytes::from_string(name.clone());
        c.value = Some(StrBytes::from_string(value.clone()));
        topic.configs.push(c);
    }
    let mut request = CreateTopicsRequest::default();
    request.topics = vec![topic];
    request.timeout_ms = 30_000;
    let response = conn.call(&request, versions.create_topics)?;
    let result = response
        .topics
        .first()
        .ok_or_else(|| anyhow!("CreateTopics: an empty response"))?;
    match result.error_code {
        0 => Ok(true),
        36 => Ok(false), // TOPIC_ALREADY_EXISTS: a race with another creator
        code => {
            let detail = result
                .error_message
                .as_ref()
                .map(|m| format!(": {}", m.trim_end_matches('.')))
                .unwrap_or_default();
            let hint = match code {
                29 | 31 => "; create it beforehand, or give a --topic you may create",
                38 => "; a --replication-factor no larger than the number of brokers",
                37 => "; a --partitions of at least 1",
                _ => "",
            };
            Err(input_error(format!(
                "cannot create topic {}: {}{detail}{hint}",
                wanted.name,
                error_name(code)
            )))
        }
    }
}

fn describe(conn: &mut Conn, versions: Versions, topic: &str) -> Result<BTreeMap<String, String>> {
    let mut resource = DescribeConfigsResource::default();
    resource.resource_type = 2; // TOPIC
    resource.resource_name = StrBytes::from_string(topic.to_string());
    resource.configuration_keys = Some(
        CONFIGS
            .iter()
            .map(|k| StrBytes::from_static_str(k))
            .collect(),
    );
    let mut request = DescribeConfigsRequest::default();
    request.resources = vec![resource];
    let response = conn.call(&request, versions.describe_configs)?;
    let mut out = BTreeMap::new();
    for result in &response.results {
        if result.error_code != 0 {
            out.insert(
                "error".to_string(),
                format!("DescribeConfigs: {}", error_name(result.error_code)),
            );
        }
        for c in &result.configs {
            if let Some(v) = &c.value {
                out.insert(c.name.to_string(), v.to_string());
            }
        }
    }
    Ok(out)
}

/// How long deleting the topic after the run may take: the run's end is
/// bounded by `--runtime` + `--timeout` and a few seconds.
const DELETE_AFTER_RUN: Duration = Duration::from_secs(5);

/// Deletes `topic` (the one this run created) over a new connection to
/// the bootstrap broker, within a few seconds. `stop` ends the wait when
/// it rises meanwhile; a run already stopped still deletes its topic.
pub fn delete_after_run(boot: &Bootstrap, topic: &str, stop: &StopFlag) -> Result<()> {
    let stop = if stop.is_raised() {
        StopFlag::new()
    } else {
        stop.clone()
    };
    let timeout = boot.timeout.min(DELETE_AFTER_RUN);
    let mut conn = Conn::connect(&boot.cluster.bootstrap, timeout, &stop)?;
    conn.set_timeout(timeout, "at most 5s after the run");
    delete(&mut conn, boot.versions, topic)
}

fn delete(conn: &mut Conn, versions: Versions, topic: &str) -> Result<()> {
    let mut request = DeleteTopicsRequest::default();
    request.topic_names = vec![TopicName(StrBytes::from_string(topic.to_string()))];
    request.timeout_ms = 30_000;
    let response = conn.call(&request, versions.delete_topics)?;
    match response.responses.first().map_or(0, |r| r.error_code) {
        0 => Ok(()),
        code => bail!("deleting topic {topic}: {}", error_name(code)),
    }
}

/// The offset the next record of each of `partitions` will get, asked of
/// their leader over `conn`.
pub fn log_ends(
    conn: &mut Conn,
    versions: Versions,
    topic: &str,
    partitions: &[i32],
) -> Result<BTreeMap<i32, i64>> {
    let mut entry = ListOffsetsTopic::default();
    entry.name = TopicName(StrBytes::from_string(topic.to_string()));
    entry.partitions = partitions
        .iter()
        .map(|&p| {
            let mut part = ListOffsetsPartition::default();
            part.partition_index = p;
            part.current_leader_epoch = -1;
            part.timestamp = -1; // the latest offset
            part
        })
        .collect();
    let mut request = ListOffsetsRequest::default();
    request.replica_id = (-1).into();
    request.topics = vec![entry];
    let response = conn.call(&request, versions.list_offsets)?;
    let mut out = BTreeMap::new();
    for t in &response.topics {
        for p in &t.partitions {
            if p.error_code != 0 {
                bail!(
                    "ListOffsets {topic}/{}: {}",
                    p.partition_index,
                    error_name(p.error_code)
                );
            }
            out.insert(p.partition_index, p.offset);
        }
    }
    Ok(out)
}
