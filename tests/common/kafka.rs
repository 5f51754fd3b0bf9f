//! A real Apache Kafka broker for the tests (issue 18): `scripts/kafka.sh
//! start` into a temp dir, `stop` when the guard drops, also when an
//! assertion fails. No mock broker stands in for it. Where Java or Maven is
//! missing, or the jars cannot be fetched (the script's exit 3), the test is
//! skipped with the reason printed — unless `CAUDA_REQUIRE_KAFKA=1`, which
//! `.ci/run` sets, makes that a failure.

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};

/// One cluster at a time in a test binary: on two vCPUs, six JVMs starting
/// at once would time each other out.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// `scripts/kafka.sh`.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/kafka.sh")
}

fn required() -> bool {
    std::env::var("CAUDA_REQUIRE_KAFKA").is_ok_and(|v| v == "1")
}

/// A running broker (or three-node cluster) on 127.0.0.1, stopped on drop.
pub struct Broker {
    /// The bootstrap addresses `start` printed: `127.0.0.1:PORT[,…]`.
    pub bootstrap: String,
    /// How many brokers (1 or 3).
    pub brokers: u32,
    dir: tempfile::TempDir,
    _turn: MutexGuard<'static, ()>,
}

impl Broker {
    /// Starts `brokers` (1 or 3) brokers on free loopback ports; `None`,
    /// with the reason printed, where Java, Maven or the jars are missing.
    pub fn start(brokers: u32) -> Option<Broker> {
        Self::start_with(brokers, "")
    }

    /// Like [`Broker::start`], with `server_config` (broker settings, one
    /// `key=value` per line) appended to each node's server.properties
    /// (`scripts/kafka.sh start --server-config`).
    pub fn start_with(brokers: u32, server_config: &str) -> Option<Broker> {
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("server-config.properties");
        std::fs::write(&config, server_config).unwrap();
        let cluster = dir.path().join("cluster");
        // Another process may take a port between the check and the bind.
        for attempt in 1..=3 {
            let base = free_port_base(2 * brokers);
            let out = kafka_sh()
                .args(["start", "--brokers", &brokers.to_string(), "--dir"])
                .arg(&cluster)
                .args(["--port-base", &base.to_string(), "--server-config"])
                .arg(&config)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            match out.status.code() {
                Some(0) => {
                    return Some(Broker {
                        bootstrap: String::from_utf8(out.stdout).unwrap().trim().to_string(),
                        brokers,
                        dir,
                        _turn: turn,
                    });
                }
                Some(3) => {
                    assert!(
                        !required(),
                        "Kafka unavailable with CAUDA_REQUIRE_KAFKA=1: {stderr}"
                    );
                    eprintln!("skipped: no Kafka broker here: {}", stderr.trim());
                    return None;
                }
                _ if stderr.contains("is in use") && attempt < 3 => continue,
                _ => panic!("scripts/kafka.sh start failed ({}):\n{stderr}", out.status),
            }
        }
        unreachable!()
    }

    /// The cluster's directory (`nodeN/server.log`, `nodeN/kafka.pid`, …).
    pub fn dir(&self) -> PathBuf {
        self.dir.path().join("cluster")
    }

    /// The pid of node `node` (1-based), to freeze or kill it.
    pub fn pid(&self, node: u32) -> u32 {
        let file = self.dir().join(format!("node{node}/kafka.pid"));
        std::fs::read_to_string(&file)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Stops node `node` (1-based) as an operator would (SIGTERM: a
    /// controlled shutdown, which takes it out of every ISR) and waits
    /// until it has exited. The rest of the cluster keeps running.
    pub fn stop_node(&self, node: u32) {
        let pid = self.pid(node).to_string();
        let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(status.success(), "kill -TERM {pid}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while Path::new("/proc").join(&pid).exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "node {node} (pid {pid}) still runs 60 s after SIGTERM"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    /// `scripts/kafka.sh topic ARGS` (kafka-topics) against this cluster,
    /// which must succeed: its stdout.
    pub fn topic(&self, args: &[&str]) -> String {
        let out = kafka_sh()
            .arg("topic")
            .args(args)
            .arg("--dir")
            .arg(self.dir())
            .output()
            .unwrap();
        succeeded(&format!("topic {args:?}"), out)
    }

    /// `scripts/kafka.sh tool CLASS ARGS` (a Kafka tool run with `java -cp`)
    /// with `input` on its stdin: how it ended.
    pub fn tool(&self, class: &str, args: &[&str], input: &str) -> Output {
        let mut child = kafka_sh()
            .arg("tool")
            .arg(class)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    /// Like [`Broker::tool`], which must succeed: its stdout.
    pub fn tool_ok(&self, class: &str, args: &[&str], input: &str) -> String {
        succeeded(class, self.tool(class, args, input))
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let out = kafka_sh().arg("stop").arg("--dir").arg(self.dir()).output();
        match out {
            Ok(out) if out.status.success() => {}
            Ok(out) => eprintln!(
                "cleanup: scripts/kafka.sh stop: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(e) => eprintln!("cleanup: scripts/kafka.sh stop: {e}"),
        }
    }
}

fn kafka_sh() -> Command {
    let mut c = Command::new("bash");
    c.arg(script());
    c
}

fn succeeded(what: &str, out: Output) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A first port of `count` consecutive ports that are free on 127.0.0.1,
/// below Linux's ephemeral range (32768–60999) so no client socket takes
/// one meanwhile; spread by pid and clock so parallel test binaries differ.
fn free_port_base(count: u32) -> u16 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let seed = std::process::id().wrapping_mul(7919).wrapping_add(nanos);
    let span = 12_000 / 16;
    for i in 0..span {
        let base = 20_000 + (seed.wrapping_add(i) % span) * 16;
        if (base..base + count).all(|p| TcpListener::bind(("127.0.0.1", p as u16)).is_ok()) {
            return base as u16;
        }
    }
    panic!("no {count} free consecutive ports on 127.0.0.1 from 20000 to 32000");
}
