//! Connecting to a peer without holding a signal: a listener whose
//! accept queue is full, or a host that drops SYNs, would otherwise keep
//! Ctrl-C waiting for the whole connect timeout. `net` and `broker` both
//! connect through here.

use std::io::{self, ErrorKind};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::record::StopFlag;

/// Connects within `setup`, giving up as soon as `stop` rises: a
/// listener whose accept queue is full drops the SYNs, and the connect
/// would otherwise hold Ctrl-C for all of `setup`. The attempt runs on a
/// thread of its own, left to end by itself when stopped (it is setup,
/// never measured).
pub fn connect_tcp(peer: SocketAddr, setup: Duration, stop: &StopFlag) -> io::Result<TcpStream> {
    use std::sync::mpsc::{RecvTimeoutError, channel};
    let (tx, rx) = channel();
    std::thread::Builder::new()
        .name("cauda-connect".into())
        .spawn(move || {
            let _ = tx.send(TcpStream::connect_timeout(&peer, setup));
        })?;
    loop {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(connected) => return connected,
            Err(RecvTimeoutError::Timeout) if stop.is_raised() => {
                return Err(io::Error::new(
                    ErrorKind::Interrupted,
                    "stopped while connecting",
                ));
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return Err(io::Error::other("the connecting thread ended"));
            }
        }
    }
}
