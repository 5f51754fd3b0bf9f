//! The first bytes of an input as detection reads them: refused when they
//! are not text, else the text and its first non-blank lines, which each
//! format's detection rule ([`super::IMPORTERS`]) looks at.

use anyhow::Result;

use crate::error::input_error;

/// What detection expects, named in its errors.
const EXPECTED: &str = "expected a cauda run file, an HdrHistogram .hlog or .hgrm, fio JSON or logs, a sockperf \
         full log, cyclictest output, or one number per line";

/// How many of the first non-blank lines detection looks at.
const LINES: usize = 40;

/// The first bytes of a (decompressed) input, as text.
pub struct Head<'a> {
    /// All of them.
    pub text: &'a str,
    /// Without leading white space.
    pub trimmed: &'a str,
    /// The first non-blank lines, each trimmed.
    pub lines: Vec<&'a str>,
}

impl<'a> Head<'a> {
    /// The text of `bytes`, or why it is none: empty, not UTF-8 (but for a
    /// character cut at the end of the sample), or holding a NUL.
    pub fn of(source: &str, bytes: &'a [u8]) -> Result<Head<'a>> {
        if bytes.is_empty() {
            return Err(input_error(format!(
                "{source}: the file is empty; {EXPECTED}"
            )));
        }
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => text,
            // A multi-byte character cut at the end of the sample is still text.
            Err(e) if e.error_len().is_none() => {
                std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or("")
            }
            Err(e) => {
                return Err(input_error(format!(
                    "{source}: byte {} is not text; {EXPECTED}",
                    e.valid_up_to()
                )));
            }
        };
        if let Some(pos) = text.find('\0') {
            return Err(input_error(format!(
                "{source}: byte {pos} is a NUL, so this is a binary file; {EXPECTED}"
            )));
        }
        let trimmed = text.trim_start();
        let lines = trimmed
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .take(LINES)
            .collect();
        Ok(Head {
            text,
            trimmed,
            lines,
        })
    }
}
