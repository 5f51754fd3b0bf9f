//! `cauda serve` under abuse: garbage, a length of 2^31, half-sent frames,
//! slow senders, hundreds of idle connections, more than `--max-conns` (the
//! longest idle makes room) —
//! for both TCP engines — and UDP garbage. Each time it must drop the
//! offender and keep serving the others, in bounded memory.

use std::io::Write;
use std::net::{TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use cauda::probe::net::protocol::{HEADER_LEN, Header};

mod netsupport;
use netsupport::{Responder, closed_by_peer, request, serves};

/// Both TCP engines of `cauda serve` must survive the same abuse.
const ENGINES: [&str; 2] = ["threads", "epoll"];

#[test]
fn the_responder_drops_garbage_and_huge_lengths_and_serves_the_others() {
    for engine in ENGINES {
        let server = Responder::start(&["--engine", engine]);
        assert!(serves(server.addr));

        // Seeded random bytes.
        let mut garbage = vec![0u8; 4096];
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for b in garbage.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        let mut s = TcpStream::connect(server.addr).unwrap();
        let _ = s.write_all(&garbage);
        assert!(closed_by_peer(&mut s), "garbage: connection dropped");
        assert!(serves(server.addr));

        // A valid header claiming 2^31 bytes.
        let mut header = request(HEADER_LEN as u32, 1);
        header[0..4].copy_from_slice(&(1u32 << 31).to_le_bytes());
        let mut s = TcpStream::connect(server.addr).unwrap();
        s.write_all(&header).unwrap();
        assert!(closed_by_peer(&mut s), "2^31: connection dropped");
        assert!(serves(server.addr));
        assert!(
            server.rss_kib() < 64 * 1024,
            "nothing near 2 GiB was allocated"
        );
    }
}

#[test]
fn half_sent_frames_and_slow_senders_are_dropped_while_others_are_served() {
    for engine in ENGINES {
        let server = Responder::start(&["--frame-timeout", "300ms", "--engine", engine]);
        let frame = request(200, 1);

        let mut half = TcpStream::connect(server.addr).unwrap();
        half.write_all(&frame[..50]).unwrap();
        // Held open: the responder serves another client meanwhile…
        assert!(serves(server.addr));
        // …and drops the half frame once its frame timeout passes.
        let began = Instant::now();
        assert!(closed_by_peer(&mut half));
        assert!(began.elapsed() < Duration::from_secs(10));

        // A slow sender: one byte every 50 ms never completes a frame in 300 ms.
        let mut slow = TcpStream::connect(server.addr).unwrap();
        let mut dropped = false;
        for b in &frame {
            if slow.write_all(&[*b]).is_err() {
                dropped = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
            if began.elapsed() > Duration::from_secs(15) {
                break;
            }
        }
        assert!(dropped || closed_by_peer(&mut slow), "slow sender dropped");
        assert!(serves(server.addr));
    }
}

#[test]
fn hundreds_of_idle_connections_cost_bounded_memory() {
    for engine in ENGINES {
        let server = Responder::start(&["--max-conns", "1000", "--engine", engine]);
        assert!(serves(server.addr));
        let before = server.rss_kib();
        let idle: Vec<TcpStream> = (0..300)
            .map(|_| TcpStream::connect(server.addr).unwrap())
            .collect();
        // Every one is accepted and has its thread before we measure.
        assert!(serves(server.addr));
        std::thread::sleep(Duration::from_millis(300));
        let after = server.rss_kib();
        let per_conn = after.saturating_sub(before) / idle.len() as u64;
        assert!(
            per_conn < 64,
            "{engine}: {per_conn} KiB per idle connection ({before} → {after} KiB)"
        );
        drop(idle);
    }
}

#[test]
fn at_max_conns_the_longest_idle_connection_makes_room_for_a_new_client() {
    for engine in ENGINES {
        let server = Responder::start(&["--max-conns", "5", "--engine", engine]);
        // Five connections that never speak fill the table, oldest first…
        let mut idle: Vec<TcpStream> = Vec::new();
        for _ in 0..5 {
            idle.push(TcpStream::connect(server.addr).unwrap());
            std::thread::sleep(Duration::from_millis(30));
        }
        std::thread::sleep(Duration::from_millis(300));
        // …and a measuring client is still served at once, not after the
        // 60 s idle timeout.
        let t = Instant::now();
        assert!(serves(server.addr), "{engine}: a new client was locked out");
        assert!(t.elapsed() < Duration::from_secs(5));
        // The oldest idle connection went; the newest is still open.
        assert!(closed_by_peer(&mut idle[0]), "{engine}: oldest evicted");
        let mut newest = idle.pop().unwrap();
        newest.write_all(&request(64, 1)).unwrap();
        let mut buf = [0u8; 64];
        newest
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        std::io::Read::read_exact(&mut newest, &mut buf).unwrap();
        assert_eq!(Header::decode(&buf, 64).unwrap().seq, 1);
        let line = server.stop_and_summary();
        assert!(line.contains("evicted"), "{engine}: {line}");
    }
}

#[test]
fn udp_garbage_is_counted_not_answered() {
    let server = Responder::start(&["--udp"]);
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.connect(server.addr).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut short = request(64, 1);
    short.truncate(40);
    for datagram in [vec![0xAB; 100], short] {
        socket.send(&datagram).unwrap();
        let mut buf = [0u8; 128];
        assert!(socket.recv(&mut buf).is_err(), "no reply to garbage");
    }
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    socket.send(&request(64, 9)).unwrap();
    let mut buf = [0u8; 128];
    let n = socket.recv(&mut buf).unwrap();
    assert_eq!(Header::decode_datagram(&buf[..n], 128).unwrap().seq, 9);
}
