//! The tuning journal: the way back.
//!
//! One record per line, appended and fsynced *before* the change it
//! describes is made, so after a crash or `kill -9` the journal names at
//! least everything that was changed. A line is `JSON<TAB>CRC32<LF>`: the
//! checksum (IEEE CRC-32 of the JSON text, 8 hex digits) tells a complete
//! record from a damaged one.
//!
//! - The first line is a header naming the host and boot it was written on.
//! - A final fragment with no newline is a write torn by a crash: it is
//!   ignored (the change it announced was never started, because the
//!   record is synced before the write), and cut off before anything is
//!   appended again.
//! - Any complete line that fails its checksum or does not parse makes the
//!   whole journal refused, with the line number and what was wrong:
//!   rolling back from a journal that cannot be trusted could write wrong
//!   values.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::paths::{SYSCTL_FILE, UDEV_FILE, is_setting_path};
use crate::error::input_error;
use crate::model::check::Profile;

/// Where the journal goes when `--journal` is not given (below `--root`).
pub const DEFAULT_JOURNAL: &str = "/var/lib/cauda/tune.journal";

/// The journal format's name and version, in its header.
pub const JOURNAL_SCHEMA: &str = "cauda.journal/1";

/// One line of the journal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Record {
    /// The first line: where and when the journal was written.
    Header {
        /// [`JOURNAL_SCHEMA`].
        schema: String,
        /// The host name (`/proc/sys/kernel/hostname` under the root).
        host: String,
        /// The boot id (`/proc/sys/kernel/random/boot_id` under the root).
        boot_id: String,
        /// The root directory the paths are below (`/` on a live host).
        root: String,
        /// The profile tuned for, when the journal comes from `host tune`.
        profile: Option<Profile>,
        /// The cauda version that wrote it.
        cauda: String,
        /// Seconds since the Unix epoch.
        created_unix: u64,
    },
    /// A runtime setting about to be written.
    Change {
        /// Sequence number, from 1.
        seq: u32,
        /// The check id the change satisfies.
        id: String,
        /// The absolute host path.
        path: String,
        /// The file's exact content before the change.
        old: String,
        /// The value written.
        new: String,
    },
    /// A file (sysctl.d, udev rule) about to be written whole.
    File {
        /// Sequence number, from 1.
        seq: u32,
        /// The absolute host path.
        path: String,
        /// The file's exact content before, or `null` when it did not exist.
        old: Option<String>,
        /// The content written.
        new: String,
    },
    /// The change `seq` was written, read back and verified.
    Done {
        /// The change's sequence number.
        seq: u32,
    },
    /// Everything above was rolled back (by `host rollback` or a failed apply).
    RolledBack {
        /// Why.
        reason: String,
        /// Seconds since the Unix epoch.
        at_unix: u64,
    },
}

/// A change or file recorded in a journal, with whether it completed.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The record (`Change` or `File`).
    pub record: Record,
    /// A `Done` record followed it.
    pub done: bool,
}

/// A journal read back and checked.
#[derive(Clone, Debug)]
pub struct Parsed {
    /// The file.
    pub path: PathBuf,
    /// The header's fields.
    pub header: Record,
    /// Changes and files, in the order they were made.
    pub entries: Vec<Entry>,
    /// A `RolledBack` record is the last word.
    pub rolled_back: bool,
    /// Bytes of a torn final line (0 when the journal ends cleanly).
    pub torn_bytes: usize,
    /// Length of the journal up to its last complete line.
    pub valid_len: u64,
}

/// The IEEE CRC-32 (the one zlib and Ethernet use), bit by bit: journals
/// are a few lines, speed does not matter.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// The line for a record, newline included.
pub fn encode(record: &Record) -> String {
    let json = serde_json::to_string(record).expect("journal records always serialise");
    format!("{json}\t{:08x}\n", crc32(json.as_bytes()))
}

/// Appends records to a journal, syncing each to disk before returning.
#[derive(Debug)]
pub struct JournalWriter {
    file: File,
    path: PathBuf,
}

impl JournalWriter {
    /// Creates a new journal holding `header`. Refuses to replace a
    /// journal that has not been rolled back: it may be the only way back.
    pub fn create(path: &Path, header: &Record) -> Result<JournalWriter> {
        if path.exists() {
            match parse(path) {
                Ok(old) if old.rolled_back => {
                    std::fs::remove_file(path).with_context(|| {
                        format!("cannot replace the finished journal {}", path.display())
                    })?;
                }
                Ok(_) => {
                    return Err(input_error(format!(
                        "--journal {}: a journal that has not been rolled back is already there; \
                         run `cauda host rollback --journal {0}` first, or choose another file",
                        path.display()
                    )));
                }
                Err(_) => {
                    return Err(input_error(format!(
                        "--journal {}: the file exists and is not a finished cauda journal; \
                         choose another file",
                        path.display()
                    )));
                }
            }
        }
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(input_error(format!(
                "--journal {}: the directory {} does not exist; create it first",
                path.display(),
                dir.display()
            )));
        }
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(path)
            .with_context(|| format!("cannot create the journal {}", path.display()))?;
        let mut writer = JournalWriter {
            file,
            path: path.to_path_buf(),
        };
        writer.append(header)?;
        if let Ok(d) = File::open(&dir) {
            d.sync_all()
                .with_context(|| format!("cannot sync the directory {}", dir.display()))?;
        }
        Ok(writer)
    }

    /// Reopens a checked journal to append to it, first cutting off a
    /// torn final line so the next record starts on a line of its own.
    pub fn reopen(parsed: &Parsed) -> Result<JournalWriter> {
        let file = OpenOptions::new()
            .write(true)
            .open(&parsed.path)
            .with_context(|| format!("cannot open the journal {}", parsed.path.display()))?;
        if parsed.torn_bytes > 0 {
            file.set_len(parsed.valid_len)
                .with_context(|| format!("cannot trim {}", parsed.path.display()))?;
        }
        drop(file);
        let file = OpenOptions::new()
            .append(true)
            .open(&parsed.path)
            .with_context(|| format!("cannot open the journal {}", parsed.path.display()))?;
        Ok(JournalWriter {
            file,
            path: parsed.path.clone(),
        })
    }

    /// Appends one record and syncs it to disk.
    pub fn append(&mut self, record: &Record) -> Result<()> {
        self.file
            .write_all(encode(record).as_bytes())
            .and_then(|()| self.file.sync_data())
            .with_context(|| {
                format!(
                    "cannot write the journal {} (is the disk full?)",
                    self.path.display()
                )
            })
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The largest journal read: a few hundred bytes per change, so even a
/// tuning of every setting on a large host is far below it.
pub const MAX_JOURNAL_BYTES: u64 = 64 << 20;

/// Reads and checks a journal. Every refusal is an input error naming the
/// line and saying what was wrong.
pub fn parse(path: &Path) -> Result<Parsed> {
    let bytes = crate::input::read_regular(path, MAX_JOURNAL_BYTES).map_err(|refusal| {
        let why = match refusal {
            crate::input::Refusal::Io(e) => format!("cannot read it ({e})"),
            other => other.to_string(),
        };
        input_error(format!(
            "--journal {}: {why}; give the file `host tune --apply` wrote",
            path.display()
        ))
    })?;
    parse_bytes(path, &bytes)
}

fn refuse(path: &Path, line: usize, what: impl std::fmt::Display) -> anyhow::Error {
    input_error(format!(
        "journal {} line {line}: {what}; nothing was changed. The journal cannot be trusted: \
         inspect it, and restore by hand the values its earlier lines name",
        path.display()
    ))
}

/// [`parse`] on bytes already read.
pub fn parse_bytes(path: &Path, bytes: &[u8]) -> Result<Parsed> {
    let complete_len = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let torn_bytes = bytes.len() - complete_len;
    let mut header = None;
    let mut entries: Vec<Entry> = Vec::new();
    let mut rolled_back = false;
    for (index, line) in bytes[..complete_len]
        .split_inclusive(|&b| b == b'\n')
        .enumerate()
    {
        let number = index + 1;
        let line = &line[..line.len() - 1];
        let record = decode(line).map_err(|why| refuse(path, number, why))?;
        match (&record, header.is_some()) {
            (Record::Header { schema, .. }, false) => {
                if schema != JOURNAL_SCHEMA {
                    return Err(refuse(
                        path,
                        number,
                        format!("format {schema} is not {JOURNAL_SCHEMA} (a newer cauda?)"),
                    ));
                }
                header = Some(record);
            }
            (_, false) => {
                return Err(refuse(path, number, "the first record is not a header"));
            }
            (Record::Header { .. }, true) => {
                return Err(refuse(path, number, "a second header"));
            }
            (Record::Change { path: p, .. }, true) if !is_setting_path(p) => {
                return Err(refuse(
                    path,
                    number,
                    format!("{p} is not a kernel setting under /proc/sys or /sys"),
                ));
            }
            (Record::File { path: p, .. }, true) if p != SYSCTL_FILE && p != UDEV_FILE => {
                return Err(refuse(
                    path,
                    number,
                    format!("{p} is not one of the files --persist writes"),
                ));
            }
            (Record::Change { seq, .. } | Record::File { seq, .. }, true) => {
                if entries.iter().any(|e| seq_of(&e.record) == *seq) {
                    return Err(refuse(path, number, format!("change {seq} appears twice")));
                }
                rolled_back = false;
                entries.push(Entry {
                    record,
                    done: false,
                });
            }
            (Record::Done { seq }, true) => {
                let Some(entry) = entries.iter_mut().find(|e| seq_of(&e.record) == *seq) else {
                    return Err(refuse(
                        path,
                        number,
                        format!("change {seq} is marked done but was never recorded"),
                    ));
                };
                entry.done = true;
            }
            (Record::RolledBack { .. }, true) => rolled_back = true,
        }
    }
    let Some(header) = header else {
        return Err(if torn_bytes > 0 {
            refuse(
                path,
                1,
                "the header itself is torn (the apply was killed at once)",
            )
        } else {
            refuse(path, 1, "the journal is empty")
        });
    };
    Ok(Parsed {
        path: path.to_path_buf(),
        header,
        entries,
        rolled_back,
        torn_bytes,
        valid_len: complete_len as u64,
    })
}

fn seq_of(record: &Record) -> u32 {
    match record {
        Record::Change { seq, .. } | Record::File { seq, .. } | Record::Done { seq } => *seq,
        _ => 0,
    }
}

fn decode(line: &[u8]) -> Result<Record, String> {
    let text = std::str::from_utf8(line).map_err(|_| "not UTF-8 text".to_string())?;
    let (json, sum) = text
        .rsplit_once('\t')
        .ok_or("no checksum (expected JSON, a tab, and 8 hex digits)")?;
    let expected = u32::from_str_radix(sum, 16)
        .ok()
        .filter(|_| sum.len() == 8)
        .ok_or_else(|| format!("checksum '{sum}' is not 8 hex digits"))?;
    let actual = crc32(json.as_bytes());
    if actual != expected {
        return Err(format!(
            "checksum mismatch (recorded {expected:08x}, content gives {actual:08x}): the line \
             was altered or damaged"
        ));
    }
    serde_json::from_str(json).map_err(|e| format!("not a journal record: {e}"))
}

/// Seconds since the Unix epoch.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Record {
        Record::Header {
            schema: JOURNAL_SCHEMA.into(),
            host: "box".into(),
            boot_id: "b".into(),
            root: "/".into(),
            profile: Some(Profile::Latency),
            cauda: "0".into(),
            created_unix: 1,
        }
    }

    fn change(seq: u32) -> Record {
        Record::Change {
            seq,
            id: "vm.swappiness".into(),
            path: "/proc/sys/vm/swappiness".into(),
            old: "60\n".into(),
            new: "10".into(),
        }
    }

    #[test]
    fn crc32_known_answer() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn round_trip_with_torn_tail() {
        let mut text = encode(&header()) + &encode(&change(1)) + &encode(&Record::Done { seq: 1 });
        let second = encode(&change(2));
        text.push_str(&second[..second.len() / 2]);
        let parsed = parse_bytes(Path::new("j"), text.as_bytes()).unwrap();
        assert_eq!(parsed.entries.len(), 1);
        assert!(parsed.entries[0].done);
        assert_eq!(parsed.torn_bytes, second.len() / 2);
        assert_eq!(parsed.valid_len as usize, text.len() - second.len() / 2);
        assert!(!parsed.rolled_back);
    }

    #[test]
    fn a_well_formed_record_naming_a_foreign_file_is_refused() {
        let forged = Record::Change {
            seq: 1,
            id: "x".into(),
            path: "/etc/shadow".into(),
            old: "root::0:0\n".into(),
            new: "".into(),
        };
        let text = encode(&header()) + &encode(&forged);
        let err = parse_bytes(Path::new("j"), text.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("not a kernel setting"), "{err}");
        let file = Record::File {
            seq: 1,
            path: "/etc/sysctl.d/10-other.conf".into(),
            old: None,
            new: "".into(),
        };
        let text = encode(&header()) + &encode(&file);
        assert!(parse_bytes(Path::new("j"), text.as_bytes()).is_err());
    }

    #[test]
    fn a_damaged_complete_line_is_refused_with_its_number() {
        let text = encode(&header()) + &encode(&change(1)).replace("60", "61");
        let err = parse_bytes(Path::new("j"), text.as_bytes()).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("line 2") && msg.contains("checksum mismatch"),
            "{msg}"
        );
        let no_header = encode(&change(1));
        let err = parse_bytes(Path::new("j"), no_header.as_bytes()).unwrap_err();
        assert!(err.to_string().contains("not a header"));
        assert!(parse_bytes(Path::new("j"), b"").is_err());
    }
}
