//! The reader every importer reads through: it names a damaged gzip
//! stream in its errors, and bounds what one input may make cauda hold.
//!
//! Line formats (.hlog, numbers, fio, sockperf, cyclictest, .hgrm) may not
//! have a line longer than [`MAX_LINE`]: a log line is at most a few
//! hundred kilobytes (an `.hlog` histogram of every distinct value), so a
//! longer one is not a latency log, and reading it whole would take
//! memory of its size (a 1 GiB line took 1 GB). JSON documents are read
//! whole, up to [`MAX_DOCUMENT`].

use std::io::{BufRead, Read};

/// The longest line a line format may have.
pub const MAX_LINE: u64 = 16 << 20;
/// The largest JSON document (a run file, fio or cyclictest JSON) read. A
/// day of one-second intervals of every default series is about 150 MB.
pub const MAX_DOCUMENT: u64 = 256 << 20;

/// An input being read: its own buffer over the (decompressed) bytes, so
/// it sees every byte a parser consumes.
pub struct Input {
    inner: Box<dyn Read>,
    buf: Box<[u8]>,
    pos: usize,
    filled: usize,
    source: String,
    gzip: bool,
    /// The longest line allowed, if this is a line format.
    line_limit: Option<u64>,
    /// How many bytes the input likely holds (a file's size), to read a
    /// document whole without growing the buffer as it comes.
    size_hint: u64,
    /// The offset of `buf[0]` in the input, and of the start of the line
    /// `buf[0]` belongs to (found once per buffer, so the common case costs
    /// nothing per line).
    base: u64,
    line_start: u64,
}

impl Input {
    /// Reads `inner` (already decompressed when `gzip`), named `source`.
    pub fn new(source: &str, inner: Box<dyn Read>, gzip: bool) -> Input {
        Input {
            inner,
            buf: vec![0; 1 << 16].into_boxed_slice(),
            pos: 0,
            filled: 0,
            source: source.to_string(),
            gzip,
            line_limit: None,
            size_hint: 0,
            base: 0,
            line_start: 0,
        }
    }

    /// Sets the likely size of the input (a plain file's length).
    pub fn with_size_hint(mut self, bytes: u64) -> Input {
        if !self.gzip {
            self.size_hint = bytes;
        }
        self
    }

    /// Refuses lines longer than [`MAX_LINE`] from here on.
    pub fn with_line_limit(mut self) -> Input {
        self.line_limit = Some(MAX_LINE);
        self
    }

    /// The whole input as text, if it is at most [`MAX_DOCUMENT`].
    pub fn into_text(mut self) -> std::io::Result<String> {
        let mut text = String::with_capacity(self.size_hint.min(MAX_DOCUMENT) as usize + 1);
        (&mut self)
            .take(MAX_DOCUMENT + 1)
            .read_to_string(&mut text)?;
        if text.len() as u64 > MAX_DOCUMENT {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "larger than {} MiB, more than any run file or JSON report cauda reads; \
                     convert long runs to .hlog, which is read line by line",
                    MAX_DOCUMENT >> 20
                ),
            ));
        }
        Ok(text)
    }

    /// Names a damaged gzip stream in an I/O error.
    fn annotate(&self, e: std::io::Error) -> std::io::Error {
        if self.gzip {
            std::io::Error::new(
                e.kind(),
                format!(
                    "{}: the gzip stream is truncated or corrupt ({e})",
                    self.source
                ),
            )
        } else {
            e
        }
    }
}

/// A JSON document's whole text, `source` named in the error.
pub fn whole_text(source: &str, reader: Input) -> anyhow::Result<String> {
    reader
        .into_text()
        .map_err(|e| crate::error::input_error(format!("{source}: cannot read as text ({e})")))
}

impl Read for Input {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = {
            let available = self.fill_buf()?;
            let n = available.len().min(out.len());
            out[..n].copy_from_slice(&available[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Input {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.pos == self.filled {
            if let Some(i) = memchr::memrchr(b'\n', &self.buf[..self.filled]) {
                self.line_start = self.base + i as u64 + 1;
            }
            self.base += self.filled as u64;
            let n = loop {
                match self.inner.read(&mut self.buf) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(self.annotate(e)),
                }
            };
            (self.pos, self.filled) = (0, n);
        }
        if let Some(limit) = self.line_limit
            && self.base + self.filled as u64 - self.line_start > limit
        {
            // Only a line near the limit gets here: find where it starts and
            // whether it ends within the limit.
            let start = memchr::memrchr(b'\n', &self.buf[..self.pos])
                .map_or(self.line_start, |i| self.base + i as u64 + 1);
            let end = memchr::memchr(b'\n', &self.buf[self.pos..self.filled])
                .map_or(self.filled, |j| self.pos + j);
            if self.base + end as u64 - start > limit {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "the line starting at byte {start} is longer than {} MiB: not a line of \
                         a latency log (is this the right file or --format?)",
                        limit >> 20
                    ),
                ));
            }
        }
        Ok(&self.buf[self.pos..self.filled])
    }

    fn consume(&mut self, amount: usize) {
        self.pos = (self.pos + amount).min(self.filled);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(bytes: Vec<u8>) -> Input {
        Input::new("t", Box::new(std::io::Cursor::new(bytes)), false).with_line_limit()
    }

    #[test]
    fn lines_up_to_the_limit_pass_and_a_longer_one_is_refused_with_its_offset() {
        let mut ok = vec![b'7'; MAX_LINE as usize];
        ok.push(b'\n');
        let mut lines = Vec::new();
        let mut reader = input([ok.clone(), b"12\n".to_vec()].concat());
        std::io::Read::read_to_end(&mut reader, &mut lines).unwrap();
        assert_eq!(lines.len(), ok.len() + 3);

        let long = [b"1\n".to_vec(), vec![b'7'; MAX_LINE as usize + 1]].concat();
        let err = input(long).lines().find_map(Result::err).unwrap();
        assert!(
            err.to_string()
                .contains("starting at byte 2 is longer than 16 MiB"),
            "{err}"
        );
    }

    #[test]
    fn documents_beyond_the_limit_are_refused() {
        let err = Input::new(
            "t",
            Box::new(std::io::repeat(b' ').take(MAX_DOCUMENT + 1)),
            false,
        )
        .into_text()
        .unwrap_err();
        assert!(err.to_string().contains("larger than 256 MiB"), "{err}");
    }
}
