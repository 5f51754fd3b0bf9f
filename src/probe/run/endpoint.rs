//! The metrics endpoint (`--metrics-listen`): a small HTTP/1.1 server on a
//! thread of its own that answers `GET /metrics` with a page made off the
//! hot path ([`crate::formats::export::prometheus`]).
//!
//! Measurement never waits for a scraper. The collector swaps a finished
//! page in under a lock held only to replace a pointer; the server thread
//! takes the pointer and writes at its own pace, under SCHED_IDLE, one
//! connection at a time, each given 5 s in all (a scraper trickling its
//! request or reading its answer a byte at a time is cut off). A slow or
//! stuck scraper holds up only the next scrape.
//!
//! A run that ends by itself waits for Prometheus to scrape its last
//! interval (from the last scrape, at most twice the gap between the last
//! two, a minute after a single one, two minutes at most; never when
//! nobody scraped), saying so on stderr, so a fleet view does not miss a
//! run's end; Ctrl-C ends the wait.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::placement;
use crate::error::input_error;
use crate::formats::export::prometheus;
use crate::model::Observer;
use crate::record::StopFlag;

/// A page, ready to send in either format.
#[derive(Debug, Default)]
pub struct Page {
    /// The delimited protobuf exposition.
    pub protobuf: Vec<u8>,
    /// The text exposition.
    pub text: Vec<u8>,
    /// How many times a page was published before this one.
    pub generation: u64,
}

impl Page {
    /// Both encodings of `families`.
    pub fn of(families: &[prometheus::Family], generation: u64) -> Page {
        Page {
            protobuf: prometheus::to_protobuf(families),
            text: prometheus::to_text(families),
            generation,
        }
    }
}

/// Where pages come from: the latest one published, or one made afresh
/// for each scrape.
pub type Source = Box<dyn Fn() -> Arc<Page> + Send + Sync>;

/// The latest published page, shared by the collector and the server.
#[derive(Clone, Debug, Default)]
pub struct Latest(Arc<Mutex<Arc<Page>>>);

impl Latest {
    /// Replaces the page (the lock is held only for the swap).
    pub fn publish(&self, page: Page) {
        let page = Arc::new(page);
        if let Ok(mut latest) = self.0.lock() {
            *latest = page;
        }
    }

    /// The page now.
    pub fn get(&self) -> Arc<Page> {
        self.0.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// The generation of the page now.
    pub fn generation(&self) -> u64 {
        self.get().generation
    }
}

/// What the server has answered, for waiting on the last scrape.
#[derive(Debug, Default)]
struct Scrapes {
    /// When the last two scrapes were served.
    last: Option<Instant>,
    gap: Option<Duration>,
    /// The generation of the last page served.
    served: Option<u64>,
}

struct Shared {
    source: Source,
    scrapes: Mutex<Scrapes>,
    /// The server thread's use so far (taken as it starts and after each
    /// connection).
    used: Mutex<Option<Observer>>,
    scraped: Condvar,
    closing: AtomicBool,
}

/// A bound metrics endpoint; dropping it stops the server (at once, or
/// after the connection it is serving, which may take up to its timeout:
/// the thread is left to finish on its own).
pub struct Endpoint {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

/// The server thread's name.
const THREAD: &str = "cauda-metrics";

/// How long a scraper may take, in all, to send its request and read the
/// answer.
const CONNECTION_TIMEOUT: Duration = if cfg!(test) {
    Duration::from_millis(600)
} else {
    Duration::from_secs(5)
};
/// The longest wait for a last scrape.
const MOST_FINAL_WAIT: Duration = Duration::from_secs(120);

impl Endpoint {
    /// Binds `addr` and serves pages from `source` on a thread of its own.
    /// An address in use or not allowed is bad input (before measuring).
    pub fn start(addr: SocketAddr, source: Source) -> Result<Endpoint> {
        let listener = TcpListener::bind(addr).map_err(|e| {
            input_error(format!(
                "--metrics-listen {addr}: cannot listen there ({e}); choose a free port, \
                 e.g. --metrics-listen 9464, or an address of this host"
            ))
        })?;
        let addr = listener.local_addr().context("--metrics-listen")?;
        let shared = Arc::new(Shared {
            source,
            scrapes: Mutex::new(Scrapes::default()),
            used: Mutex::new(None),
            scraped: Condvar::new(),
            closing: AtomicBool::new(false),
        });
        let serving = shared.clone();
        std::thread::Builder::new()
            .name(THREAD.into())
            .spawn(move || {
                // Scrapes wait for the probe's idle moments.
                let _ = crate::sys::set_idle_policy(true);
                serve(&listener, &serving);
            })
            .context("cannot start the metrics endpoint's thread")?;
        Ok(Endpoint { addr, shared })
    }

    /// What its server thread has used so far (CPU time, wake-ups: about
    /// one a scrape), as of its last connection (or its start); for the
    /// run file's `observers`.
    pub fn observer(&self) -> Option<Observer> {
        self.shared.used.lock().ok()?.clone()
    }

    /// The address it listens on (the port chosen when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Waits until a scrape has served `generation` (the run's last page),
    /// when a scraper has come at least twice (so its pace is known): at
    /// most twice the gap between its last two scrapes after the last one,
    /// two minutes at most. Says so on stderr; the first Ctrl-C or SIGTERM
    /// ends the wait within 50 ms. Returns how long it waited, if it did.
    pub fn await_scrape_of(&self, generation: u64, stop: &StopFlag) -> Option<Duration> {
        let Ok(mut scrapes) = self.shared.scrapes.lock() else {
            return None;
        };
        if scrapes.served.is_some_and(|g| g >= generation) {
            return None;
        }
        let deadline = final_wait_deadline(&scrapes)?;
        let began = Instant::now();
        if deadline <= began {
            return None;
        }
        let pace = match scrapes.gap {
            Some(gap) => format!("a scraper came every {:.1} s", gap.as_secs_f64()),
            None => "one scrape so far; Prometheus scrapes every minute by default".into(),
        };
        eprintln!(
            "waiting up to {:.0} s for the last scrape of --metrics-listen ({pace}); the run \
             file is saved; Ctrl-C skips",
            deadline
                .saturating_duration_since(began)
                .as_secs_f64()
                .ceil(),
        );
        while scrapes.served.is_none_or(|g| g < generation) && !stop.is_raised() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            // Wakes for each scrape, and every 50 ms for Ctrl-C.
            let slice = (deadline - now).min(STOP_CHECK);
            scrapes = match self.shared.scraped.wait_timeout(scrapes, slice) {
                Ok((s, _)) => s,
                Err(_) => return None,
            };
        }
        Some(began.elapsed())
    }
}

/// How often the last-scrape wait looks at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// When the wait for a last scrape gives up, counted from the last
/// scrape: twice the gap between the last two scrapes, or a minute when
/// only one was seen (Prometheus's default scrape interval; its first
/// scrape often comes seconds into a run), two minutes at most; `None`
/// (no wait) when nobody scraped.
fn final_wait_deadline(scrapes: &Scrapes) -> Option<Instant> {
    let limit = scrapes.gap.map_or(ONE_SCRAPE_WAIT, |gap| gap * 2);
    Some(scrapes.last? + limit.min(MOST_FINAL_WAIT))
}

/// The wait after a single scrape.
const ONE_SCRAPE_WAIT: Duration = Duration::from_secs(60);

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::Release);
        // Wake the blocking accept with a connection of our own.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => Ipv6Addr::LOCALHOST.into(),
            });
        }
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
    }
}

fn serve(listener: &TcpListener, shared: &Shared) {
    let account = || {
        if let Ok(mut used) = shared.used.lock() {
            *used = Some(placement::leave(THREAD));
        }
    };
    account();
    for stream in listener.incoming() {
        if shared.closing.load(Ordering::Acquire) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let mut stream = Deadlined {
            stream,
            until: Instant::now() + CONNECTION_TIMEOUT,
        };
        if let Some(generation) = answer(&mut stream, shared) {
            if let Ok(mut scrapes) = shared.scrapes.lock() {
                let now = Instant::now();
                scrapes.gap = scrapes.last.map(|last| now - last).or(scrapes.gap);
                scrapes.last = Some(now);
                scrapes.served = Some(generation);
            }
            shared.scraped.notify_all();
        }
        let _ = stream.stream.shutdown(Shutdown::Both);
        account();
    }
}

/// A connection with a deadline for all of its reads and writes: each
/// waits at most for what is left of it, and none starts after it.
struct Deadlined {
    stream: TcpStream,
    until: Instant,
}

impl Deadlined {
    /// What is left of the deadline, or a timeout error once it passed.
    fn left(&self) -> std::io::Result<Duration> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        Ok(left)
    }
}

impl Read for Deadlined {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.stream.set_read_timeout(Some(self.left()?))?;
        self.stream.read(buf)
    }
}

impl Write for Deadlined {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.stream.set_write_timeout(Some(self.left()?))?;
        self.stream.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.stream.flush()
    }
}

/// Answers one request; the generation of the page served, if it was the
/// metrics page and was sent whole.
fn answer(stream: &mut Deadlined, shared: &Shared) -> Option<u64> {
    let request = read_head(stream)?;
    let mut lines = request.lines();
    let mut first = lines.next()?.split_whitespace();
    let (method, target) = (first.next()?, first.next()?);
    let accept = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("accept"))
        .map_or("", |(_, value)| value.trim());
    let path = target.split('?').next().unwrap_or(target);
    if method != "GET" && method != "HEAD" {
        let _ = respond(
            stream,
            "405 Method Not Allowed",
            prometheus::TEXT,
            b"GET /metrics\n",
        );
        return None;
    }
    if path != "/metrics" {
        let _ = respond(
            stream,
            "404 Not Found",
            prometheus::TEXT,
            b"cauda serves its metrics at /metrics\n",
        );
        return None;
    }
    let page = (shared.source)();
    let (kind, body) = if prometheus::wants_protobuf(accept) {
        (prometheus::PROTOBUF, &page.protobuf)
    } else {
        (prometheus::TEXT, &page.text)
    };
    let body: &[u8] = if method == "HEAD" { &[] } else { body };
    respond(stream, "200 OK", kind, body)
        .ok()
        .map(|()| page.generation)
}

/// Reads a request's head (up to the blank line), at most 16 KiB.
fn read_head(stream: &mut impl Read) -> Option<String> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 || head.len() + n > 16 * 1024 {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    String::from_utf8(head).ok()
}

fn respond(stream: &mut impl Write, status: &str, kind: &str, body: &[u8]) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

/// Parses `--metrics-listen`: `PORT` (loopback), `HOST:PORT` or
/// `[V6]:PORT`; another host's interfaces only when named.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    std::net::ToSocketAddrs::to_socket_addrs(text)
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| {
            format!(
                "'{text}': expected PORT (loopback), ADDR:PORT or [V6ADDR]:PORT, \
                 e.g. 9464 or 0.0.0.0:9464"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, request: &str) -> String {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        stream.read_to_string(&mut out).unwrap();
        out
    }

    fn endpoint() -> (Endpoint, Latest) {
        let latest = Latest::default();
        let source = latest.clone();
        let endpoint =
            Endpoint::start(parse_listen("0").unwrap(), Box::new(move || source.get())).unwrap();
        (endpoint, latest)
    }

    #[test]
    fn serves_the_latest_page_in_the_format_asked() {
        let (endpoint, latest) = endpoint();
        assert!(endpoint.addr().ip().is_loopback());
        latest.publish(Page {
            protobuf: b"PB".to_vec(),
            text: b"TEXT\n".to_vec(),
            generation: 1,
        });
        let text = get(endpoint.addr(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.contains("Content-Type: text/plain; version=0.0.4"));
        assert!(text.ends_with("\r\n\r\nTEXT\n"));
        let pb = get(
            endpoint.addr(),
            &format!(
                "GET /metrics HTTP/1.1\r\nAccept: {}\r\n\r\n",
                prometheus::PROTOBUF
            ),
        );
        assert!(pb.ends_with("\r\n\r\nPB"), "{pb}");
        // Its thread's use is there for the run file, as of a scrape.
        let used = endpoint.observer().expect("counted after a scrape");
        assert_eq!(used.thread, "cauda-metrics");
        assert!(used.cpu_ns > 0 && !used.cpus.is_empty(), "{used:?}");
        assert!(get(endpoint.addr(), "GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get(endpoint.addr(), "POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
    }

    #[test]
    fn waits_for_the_last_page_only_when_someone_scrapes() {
        let (endpoint, latest) = endpoint();
        let publish = |generation| {
            latest.publish(Page {
                generation,
                ..Page::default()
            })
        };
        publish(3);
        let stop = StopFlag::new();
        assert_eq!(endpoint.await_scrape_of(3, &stop), None, "never scraped");
        get(endpoint.addr(), "GET /metrics HTTP/1.1\r\n\r\n");
        assert_eq!(endpoint.await_scrape_of(3, &stop), None, "already scraped");
        publish(5);
        let addr = endpoint.addr();
        let scraper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            get(addr, "GET /metrics HTTP/1.1\r\n\r\n")
        });
        assert!(endpoint.await_scrape_of(5, &stop).is_some());
        scraper.join().unwrap();
        // Nobody comes again: the wait ends at twice the last gap.
        publish(6);
        let waited = endpoint.await_scrape_of(6, &stop).expect("waited");
        assert!(waited < Duration::from_secs(10), "{waited:?}");
    }

    #[test]
    fn ctrl_c_ends_the_wait_for_a_last_scrape() {
        let (endpoint, _latest) = endpoint();
        if let Ok(mut scrapes) = endpoint.shared.scrapes.lock() {
            // A scraper every minute, last seen just now: a wait of 2 min.
            *scrapes = Scrapes {
                last: Some(Instant::now()),
                gap: Some(Duration::from_secs(60)),
                served: Some(0),
            };
        }
        let stop = StopFlag::new();
        let raiser = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                stop.raise();
            })
        };
        let waited = endpoint.await_scrape_of(1, &stop).expect("waited");
        raiser.join().unwrap();
        assert!(waited < Duration::from_secs(5), "{waited:?}");
    }

    #[test]
    fn the_wait_for_a_last_scrape_is_twice_the_gap_a_minute_after_one_two_at_most() {
        let now = Instant::now();
        let scrapes = |gap: Option<u64>| Scrapes {
            last: Some(now),
            gap: gap.map(Duration::from_secs),
            served: Some(0),
        };
        assert_eq!(final_wait_deadline(&Scrapes::default()), None, "nobody");
        assert_eq!(
            final_wait_deadline(&scrapes(None)),
            Some(now + ONE_SCRAPE_WAIT)
        );
        assert_eq!(
            final_wait_deadline(&scrapes(Some(15))),
            Some(now + Duration::from_secs(30))
        );
        assert_eq!(
            final_wait_deadline(&scrapes(Some(3600))),
            Some(now + MOST_FINAL_WAIT)
        );
    }

    #[test]
    fn a_scraper_trickling_its_request_is_cut_off_at_the_deadline() {
        let (endpoint, latest) = endpoint();
        latest.publish(Page {
            text: b"TEXT\n".to_vec(),
            ..Page::default()
        });
        // A byte each 100 ms: every read is quick, the request never ends.
        // (The clock starts before the connection, so before its deadline.)
        let began = Instant::now();
        let mut slow = TcpStream::connect(endpoint.addr()).unwrap();
        let trickle = std::thread::spawn(move || {
            for byte in b"GET /metrics HTTP/1.1\r\nX: ".iter().cycle() {
                if slow.write_all(&[*byte]).is_err() {
                    return Instant::now();
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            unreachable!()
        });
        // The next scraper is served once the first is cut off.
        let text = get(endpoint.addr(), "GET /metrics HTTP/1.1\r\n\r\n");
        let served = began.elapsed();
        assert!(text.ends_with("\r\n\r\nTEXT\n"), "{text}");
        assert!(served >= CONNECTION_TIMEOUT, "{served:?}");
        assert!(served < CONNECTION_TIMEOUT * 3, "{served:?}");
        let cut = trickle.join().unwrap() - began;
        assert!(cut < CONNECTION_TIMEOUT * 3, "{cut:?}");
    }

    #[test]
    fn listen_addresses() {
        assert_eq!(parse_listen("9464").unwrap().to_string(), "127.0.0.1:9464");
        assert_eq!(
            parse_listen("0.0.0.0:9464").unwrap().to_string(),
            "0.0.0.0:9464"
        );
        assert_eq!(parse_listen("[::1]:9").unwrap().to_string(), "[::1]:9");
        assert!(
            parse_listen("nope:x")
                .unwrap_err()
                .contains("expected PORT")
        );
    }

    #[test]
    fn an_address_in_use_is_bad_input() {
        let (endpoint, _latest) = endpoint();
        let err = Endpoint::start(endpoint.addr(), Box::new(Default::default))
            .err()
            .unwrap();
        assert_eq!(crate::error::exit_code_for(&err), 2);
        assert!(err.to_string().contains("choose a free port"));
    }
}
