//! `--metrics-listen` against a real Prometheus (Debian's 2.42, with
//! `--enable-feature=native-histograms`): it scrapes a `cauda hiccup`, and
//! `histogram_quantile` over what it stored agrees with `cauda analyze` of
//! the same run within a native bucket (0.271 %). Skipped (with the
//! reason) without the `prometheus` binary, unless CAUDA_REQUIRE_PROMETHEUS
//! is set, as `.ci/run` does.

mod common;
mod netsupport;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use netsupport::{Responder, serves};
use serde_json::Value;

/// A free loopback port (released for the caller to bind).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A Prometheus scraping `target` every second; killed on drop.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(target: u16) -> Option<Prometheus> {
        let found = Command::new("prometheus")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            assert!(
                std::env::var_os("CAUDA_REQUIRE_PROMETHEUS").is_none(),
                "prometheus is required (apt-get install prometheus)"
            );
            eprintln!("skipped: prometheus not found (apt-get install prometheus)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: cauda\n    static_configs:\n      \
                 - targets: ['127.0.0.1:{target}']\n"
            ),
        )
        .unwrap();
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--enable-feature=native-histograms")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("log")).unwrap())
            .spawn()
            .unwrap();
        let prometheus = Prometheus {
            child,
            port,
            _dir: dir,
        };
        let began = Instant::now();
        while !prometheus
            .get("/-/ready")
            .is_ok_and(|body| body.contains("Ready"))
        {
            assert!(
                began.elapsed() < Duration::from_secs(60),
                "Prometheus did not become ready"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        Some(prometheus)
    }

    fn get(&self, path: &str) -> Result<String, String> {
        sh(
            "curl",
            &["-s", "-f", &format!("http://127.0.0.1:{}{path}", self.port)],
        )
    }

    /// An instant query's one result value.
    fn query(&self, promql: &str) -> f64 {
        let out = sh(
            "curl",
            &[
                "-s",
                "-f",
                &format!("http://127.0.0.1:{}/api/v1/query", self.port),
                "--data-urlencode",
                &format!("query={promql}"),
            ],
        )
        .unwrap();
        let doc: Value = serde_json::from_str(&out).unwrap();
        let result = doc["data"]["result"].as_array().unwrap();
        assert_eq!(result.len(), 1, "{promql}: {out}");
        result[0]["value"][1].as_str().unwrap().parse().unwrap()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn prometheus_scrapes_native_histograms_that_agree_with_analyze() {
    let port = free_port();
    let Some(prometheus) = Prometheus::start(port) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("hiccup.json");
    // A run that ends by itself waits for the scrape of its last interval.
    let out = succeeded(
        cauda()
            .args(["hiccup", "--runtime", "6s", "--label", "host=h1"])
            .args(["--metrics-listen", &port.to_string(), "-o"])
            .arg(&run)
            .output()
            .unwrap(),
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("127.0.0.1:{port}/metrics")),
        "the address is printed"
    );
    let summaries = summaries(&run, &[]);
    let (tag, summary) = &summaries[0];
    let selector =
        format!("cauda_latency_seconds{{series=\"{tag}\",host=\"h1\",probe=\"hiccup\"}}");
    let count = prometheus.query(&format!("histogram_count({selector})"));
    assert_eq!(
        count as u64,
        summary["count"].as_u64().unwrap(),
        "every value"
    );
    let sum = prometheus.query(&format!("histogram_sum({selector})"));
    let mean = summary["mean"].as_f64().unwrap();
    assert!(
        (sum / count * 1e9 - mean).abs() <= mean * 1e-6 + 0.1,
        "exact sum: {sum} / {count} vs mean {mean} ns"
    );
    for (q, key) in [(0.5, "50"), (0.9, "90"), (0.99, "99"), (0.999, "99.9")] {
        let from_prometheus =
            prometheus.query(&format!("histogram_quantile({q}, {selector})")) * 1e9;
        let analyzed = summary["percentiles"][key].as_f64().unwrap();
        let error = (from_prometheus - analyzed).abs() / analyzed;
        eprintln!(
            "p{key}: Prometheus {from_prometheus:.0} ns, cauda analyze {analyzed} ns ({:+.3} %)",
            (from_prometheus / analyzed - 1.0) * 100.0
        );
        assert!(
            error <= 0.002_72,
            "p{key}: Prometheus {from_prometheus:.0} ns, cauda analyze {analyzed} ns ({:.3} %)",
            error * 100.0
        );
    }
    // The README's fleet query works on what was scraped.
    let fleet = prometheus
        .query("histogram_quantile(0.99, sum(rate(cauda_latency_seconds{probe=\"hiccup\"}[1m])))");
    assert!(fleet.is_finite() && fleet > 0.0, "fleet p99 {fleet}");
    let intervals = prometheus.query("cauda_intervals_total{probe=\"hiccup\"}");
    let run_file = read_json(&run);
    assert_eq!(
        intervals as usize,
        run_file["series"][0]["intervals"].as_array().unwrap().len(),
        "the last interval was scraped"
    );
    // The endpoint's thread is counted with cauda's other threads: it woke
    // about once a scrape (Prometheus's scrape_interval here is 1 s; on a
    // loaded machine Prometheus may have scraped only once during the run).
    let observers = run_file["observers"].as_array().unwrap();
    let metrics = observers
        .iter()
        .find(|o| o["thread"] == "cauda-metrics")
        .unwrap_or_else(|| panic!("cauda-metrics in {observers:?}"));
    let wakeups = metrics["wakeups"].as_u64().unwrap();
    assert!((1..=40).contains(&wakeups), "{metrics}");
    assert!(metrics["cpu_ns"].as_u64().unwrap() > 0, "{metrics}");
}

#[test]
fn a_metrics_address_in_use_is_refused_before_measuring() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    cauda()
        .args(["timer", "--runtime", "1s", "--metrics-listen", &port, "-o"])
        .arg(&run)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("choose a free port"));
    assert!(!run.exists(), "nothing measured");
    refused(
        &["timer", "--metrics-listen", "nowhere:x"],
        "expected PORT (loopback), ADDR:PORT",
    );
    refused(
        &["timer", "--metrics-listen", "0", "--label", "series=x"],
        "cauda's own Prometheus label",
    );
}

/// A scraper that connects and never sends its request holds up neither
/// the run nor a second scraper for longer than the endpoint's timeout.
#[test]
fn a_stuck_scraper_does_not_hold_up_the_run() {
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.json");
    let mut child = cauda_process()
        .args([
            "timer",
            "--runtime",
            "3s",
            "--metrics-listen",
            &port.to_string(),
            "-o",
        ])
        .arg(&run)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let began = Instant::now();
    let mut stuck = None;
    while stuck.is_none() && began.elapsed() < Duration::from_secs(10) {
        stuck = std::net::TcpStream::connect(("127.0.0.1", port)).ok();
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(stuck.is_some(), "the endpoint listens");
    let status = child.wait().unwrap();
    assert!(status.success());
    let run_file = read_json(&run);
    assert_eq!(run_file["interrupted"], false);
    // Every interval up to the run's end (a partial last one when the
    // run overran its 3 s by a little).
    let duration = run_file["duration_ns"].as_u64().unwrap();
    assert_eq!(
        run_file["series"][0]["intervals"].as_array().unwrap().len() as u64,
        duration.div_ceil(1_000_000_000),
        "every interval saved ({duration} ns)"
    );
    drop(stuck);
}

/// `cauda serve --metrics-listen` serves the responder's counters.
#[test]
fn the_responder_serves_its_counters() {
    let port = free_port();
    let server = Responder::start(&["--metrics-listen", &port.to_string()]);
    for _ in 0..3 {
        assert!(serves(server.addr));
    }
    let page = sh(
        "curl",
        &["-s", "-f", &format!("http://127.0.0.1:{port}/metrics")],
    )
    .unwrap();
    assert!(
        page.contains("cauda_serve_replies_total{protocol=\"tcp\"} 3\n"),
        "{page}"
    );
    assert!(page.contains("# TYPE cauda_serve_connections_open gauge\n"));
    let summary = server.stop_and_summary();
    assert!(summary.contains("3 replies"), "{summary}");
}

/// The live view counts failed operations as they happen: what the last
/// scrape said equals the run file's lost messages.
#[test]
fn faults_are_served_as_they_happen() {
    let server = Responder::start(&["--udp", "--drop-every", "10"]);
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("net.json");
    let mut child = cauda_process()
        .args([
            "net",
            "--connect",
            &server.addr.to_string(),
            "--proto",
            "udp",
        ])
        .args(["--rate", "500/s", "--timeout", "20ms", "--runtime", "2s"])
        .args(["--metrics-listen", &port.to_string(), "-q", "-o"])
        .arg(&run)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // A scraper every 200 ms until the run ends; the run waits for the
    // scrape of its last interval.
    let url = format!("http://127.0.0.1:{port}/metrics");
    let mut last = None;
    while child.try_wait().unwrap().is_none() {
        if let Ok(page) = sh("curl", &["-s", "-f", "-m", "2", &url]) {
            last = Some(page);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let page = last.expect("scraped at least once");
    let served: u64 = page
        .lines()
        .find(|l| l.starts_with("cauda_faults_total{"))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no cauda_faults_total in {page}"));
    let lost = read_json(&run)["faults"]["lost"].as_u64().unwrap();
    assert!(lost > 0, "the responder dropped every 10th request");
    assert_eq!(served, lost, "{page}");
}

/// One GET of /metrics, as curl would: whether a page came back.
fn scrape_once(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut page = String::new();
    let _ = stream.read_to_string(&mut page);
    page.starts_with("HTTP/1.1 200")
}

/// The wait for a last scrape is bounded as documented and said on stderr
/// even off a terminal: after a single scrape (a person's curl) up to a
/// minute, which Ctrl-C ends at once; after two, twice their gap.
#[test]
fn the_wait_for_a_last_scrape_is_bounded_said_and_ends_on_ctrl_c() {
    let dir = tempfile::tempdir().unwrap();
    let hiccup = |port: u16, runtime: &str, run: &std::path::Path| {
        cauda_process()
            .args(["hiccup", "--runtime", runtime, "-q", "--metrics-listen"])
            .arg(port.to_string())
            .arg("-o")
            .arg(run)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let first_scrape = |port: u16| {
        let began = Instant::now();
        while !scrape_once(port) {
            assert!(began.elapsed() < Duration::from_secs(10), "never served");
            std::thread::sleep(Duration::from_millis(50));
        }
        Instant::now()
    };
    let saved = |run: &std::path::Path| {
        let began = Instant::now();
        while !run.exists() {
            assert!(began.elapsed() < Duration::from_secs(20), "never saved");
            std::thread::sleep(Duration::from_millis(20));
        }
    };

    // Scraped once: it waits, says so, and SIGINT ends the wait (exit 0:
    // the run had ended).
    let port = free_port();
    let run = dir.path().join("once.json");
    let child = hiccup(port, "2s", &run);
    first_scrape(port);
    saved(&run);
    std::thread::sleep(Duration::from_millis(500));
    let signalled = Instant::now();
    signal(child.id(), "-INT");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        signalled.elapsed() < Duration::from_secs(3),
        "{:?}",
        signalled.elapsed()
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("waiting up to 5"), "{stderr}");
    assert!(stderr.contains("one scrape so far"), "{stderr}");
    assert!(stderr.contains("Ctrl-C skips"), "{stderr}");

    // Scraped twice, 1.5 s apart, then nobody: it ends by itself at most
    // twice the gap after the last scrape.
    let port = free_port();
    let run = dir.path().join("twice.json");
    let child = hiccup(port, "3s", &run);
    let first = first_scrape(port);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(scrape_once(port));
    let last = Instant::now();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let gap = last - first;
    assert!(
        last.elapsed() < gap * 2 + Duration::from_secs(2),
        "{:?}",
        last.elapsed()
    );
    assert!(stderr.contains("a scraper came every 1."), "{stderr}");
}
