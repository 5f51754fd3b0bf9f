//! The responder's second TCP engine: one thread, one epoll loop, every
//! connection non-blocking (`cauda serve --engine epoll`).
//!
//! It exists to be measured against the thread-per-connection engine
//! (bench/net_vs_sockperf.sh -e epoll); see bench/journal/2026-11.md §5 for which one
//! answers faster. Same limits and the same per-connection state ([`Conn`]);
//! a reply that cannot be written at once (the client does not read) closes
//! the connection as slow.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::fd::AsFd;
use std::sync::atomic::Ordering;

use super::config::ServeConfig;
use super::conn::{Closed, Conn, count_closed, longest_idle};
use super::stats::ServeStats;
use crate::record::StopFlag;
use crate::sys::{self, Epoll};

const LISTENER: u64 = u64::MAX;
/// How often deadlines are swept and the stop flag read, in ms.
const TICK_MS: i32 = 100;

/// Serves until `stop` rises; errors only if epoll itself fails.
pub(super) fn serve(
    listener: &TcpListener,
    config: &ServeConfig,
    stats: &ServeStats,
    stop: &StopFlag,
) -> std::io::Result<()> {
    let epoll = Epoll::new()?;
    epoll.add(listener.as_fd(), LISTENER)?;
    let mut conns: Vec<Option<Box<Conn>>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut tokens = [0u64; 64];
    let mut last_sweep = sys::monotonic_ns();
    while !stop.is_raised() {
        let n = epoll.wait(&mut tokens, TICK_MS)?;
        for &token in &tokens[..n] {
            if token == LISTENER {
                accept_all(listener, &epoll, config, stats, &mut conns, &mut free);
                continue;
            }
            let slot = token as usize;
            let Some(conn) = conns.get_mut(slot).and_then(|c| c.as_mut()) else {
                continue;
            };
            if let Err(why) = serve_ready(conn, config, stats) {
                close(stats, &mut conns, &mut free, slot, why);
            }
        }
        let now = sys::monotonic_ns();
        if now.saturating_sub(last_sweep) >= TICK_MS as u64 * 1_000_000 {
            last_sweep = now;
            for slot in 0..conns.len() {
                let verdict = conns[slot].as_ref().map(|c| c.check_deadlines(now, config));
                if let Some(Err(why)) = verdict {
                    close(stats, &mut conns, &mut free, slot, why);
                }
            }
        }
    }
    Ok(())
}

/// Reads what is ready and answers it. One read usually drains the socket:
/// only a read that filled the buffer is followed by another.
fn serve_ready(conn: &mut Conn, config: &ServeConfig, stats: &ServeStats) -> Result<(), Closed> {
    loop {
        let room = conn.room();
        let n = conn.read_once(config)?;
        if n == 0 {
            return Ok(());
        }
        conn.take_frames(config, stats)?;
        if n < room {
            return Ok(());
        }
    }
}

/// Drops a connection (closing its socket, which also unwatches it).
fn close(
    stats: &ServeStats,
    conns: &mut [Option<Box<Conn>>],
    free: &mut Vec<usize>,
    slot: usize,
    why: Closed,
) {
    conns[slot] = None;
    free.push(slot);
    count_closed(stats, why);
    stats.open.fetch_sub(1, Ordering::Relaxed);
}

fn accept_all(
    listener: &TcpListener,
    epoll: &Epoll,
    config: &ServeConfig,
    stats: &ServeStats,
    conns: &mut Vec<Option<Box<Conn>>>,
    free: &mut Vec<usize>,
) {
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            // Drained (WouldBlock), or out of descriptors: try again later.
            Err(_) => return,
        };
        if stats.open.load(Ordering::Relaxed) >= config.max_conns {
            // Room for the new connection: the one silent longest goes.
            let open = conns.iter().enumerate();
            let open = open.filter_map(|(slot, c)| c.as_ref().map(|c| (slot, c.last_activity())));
            if let Some(slot) = longest_idle(open) {
                close(stats, conns, free, slot, Closed::Evicted);
            }
        }
        if stream.set_nonblocking(true).is_err() || stream.set_nodelay(true).is_err() {
            stats.refused.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let slot = free.pop().unwrap_or_else(|| {
            conns.push(None);
            conns.len() - 1
        });
        if epoll.add(stream.as_fd(), slot as u64).is_err() {
            free.push(slot);
            stats.refused.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        conns[slot] = Some(Box::new(Conn::new(stream)));
        stats.open.fetch_add(1, Ordering::Relaxed);
        stats.accepted.fetch_add(1, Ordering::Relaxed);
    }
}
