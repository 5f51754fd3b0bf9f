//! The platform side of the kernel series: loading `bpf/cauda.bpf.o` with
//! aya, attaching its BTF tracepoints, and sharing its histogram maps with
//! the kernel through `mmap`.
//!
//! aya (pure Rust: no libbpf, no libelf) parses the object, relocates it
//! against `/sys/kernel/btf/vmlinux` (CO-RE) and attaches `tp_btf`
//! programs, which need neither kprobes nor a mounted tracefs. The object
//! is built by `bpf/build.sh` and committed, so building cauda needs no
//! clang. Everything loaded is owned by [`Loaded`]: dropping it (on every
//! exit path, and by the kernel when the process dies) detaches the
//! programs and frees the maps; nothing is pinned.
#![allow(unsafe_code)]

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::AtomicU64;

use aya::maps::{Array, HashMap, MapData};
use aya::programs::{BtfTracePoint, ProgramError};
use aya::{Btf, Ebpf, EbpfLoader};

/// The compiled programs (`bpf/build.sh`).
static OBJECT: &[u8] = aya::include_bytes_aligned!("../../../bpf/cauda.bpf.o");

/// Interval slots per series in the kernel's maps (`SLOTS` in the C).
pub const SLOTS: usize = 4;
/// Series the programs count (`enum series` in the C).
pub const SERIES: usize = 8;
/// Buckets per histogram: cauda's layout from 1 ns to one hour.
pub const BUCKETS: usize = 33_792;
/// Probe threads the kernel keeps blame counters for (`BLAME_THREADS`).
pub const BLAME_THREADS: usize = 256;
/// One thread's blame counters, bytes (`struct cauda_blame`).
pub const BLAME_COUNTER_BYTES: usize = 936;
/// Places in the table of requests in flight (`REQUEST_BITS`), and the
/// size of each (`struct req_times`: its first word is the request, 0 for
/// a free place).
const REQUEST_PLACES: usize = 1 << 14;
const REQUEST_BYTES: usize = 32;
/// Places in the thread table (`TID_BITS` in bpf/blame.h).
const TID_BITS: u32 = 10;
/// Places tried for a key from its first (`TABLE_PROBES`, bpf/table.h).
const TABLE_PROBES: usize = 8;

/// The first place tried for `key` in a table of 2^`bits` places: the
/// programs' `spread` (bpf/table.h), for the tables user space fills.
fn spread(key: u64, bits: u32) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
}

/// Reasons an event was not counted (`enum dropped` in the C).
pub const DROPPED_KINDS: usize = 4;

/// What the programs count and when (`struct cauda_config`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Config {
    /// Monotonic ns of the run's start; 0 records nothing.
    pub run_start_ns: u64,
    /// Interval length, ns.
    pub interval_ns: u64,
    /// Monotonic ns from which nothing is recorded; 0 while running.
    pub end_ns: u64,
    /// Block requests submitted by this process only (0: any).
    pub tgid: u32,
    /// Block requests of this device only (kernel `dev_t`; 0: any).
    pub dev: u32,
    /// 1 with `--kernel blame`: a request's times also go to the thread
    /// that started it (no lookup per completion otherwise).
    pub blame: u32,
    /// 1 with `--kernel block`: a request's times are recorded in the
    /// block series (blame alone needs only the above).
    pub block: u32,
}

// SAFETY: four-byte and eight-byte integers only, laid out as the C struct
// (40 bytes, no padding); any bit pattern is a valid value.
unsafe impl aya::Pod for Config {}

/// One program to attach: its name in the object and the tracepoints to
/// try, the first the kernel has.
#[derive(Clone, Copy, Debug)]
pub struct Attach {
    /// The program's function name.
    pub program: &'static str,
    /// Tracepoint names, in order of preference.
    pub tracepoints: &'static [&'static str],
    /// Whether the programs work without it (a kernel without any of its
    /// tracepoints then runs without it, and the report says so).
    pub optional: bool,
}

/// Why loading failed, with what the kernel said.
#[derive(Debug)]
pub enum LoadError {
    /// The kernel's BTF could not be read.
    NoBtf(String),
    /// None of a program's tracepoints exists in this kernel.
    NoTracepoint(&'static str, &'static [&'static str]),
    /// The kernel refused the object or a program: the program's name (or
    /// `None` for the object), the errno and the verifier's log.
    Refused(Option<&'static str>, Option<i32>, String),
}

/// Programs loaded and attached, and the histogram maps shared with them.
pub struct Loaded {
    ebpf: Ebpf,
    hist: Mapping,
    stats: Mapping,
    requests: Mapping,
    /// Every probe thread's blame counters (`--kernel blame`), shared with
    /// the threads that read them.
    pub blame: std::sync::Arc<Mapping>,
    /// Held open while the run goes: the kernel counts each program's runs
    /// and run time (`BPF_ENABLE_STATS`) while any such descriptor is open.
    _run_stats: Option<OwnedFd>,
    /// The tracepoint each program was attached to.
    pub attached: Vec<(&'static str, &'static str)>,
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded")
            .field("attached", &self.attached)
            .finish()
    }
}

/// A program's own cost so far, as the kernel counted it.
#[derive(Clone, Debug)]
pub struct ProgramCost {
    /// The program's name.
    pub program: String,
    /// Times it ran.
    pub runs: u64,
    /// Time it ran, ns.
    pub run_ns: u64,
    /// Times the kernel skipped it because it was already running on that
    /// CPU (an interrupt's event inside another's): those events are lost.
    pub skipped: u64,
}

fn errno_of(error: &ProgramError) -> (Option<i32>, String) {
    match error {
        ProgramError::LoadError {
            io_error,
            verifier_log,
        } => (io_error.raw_os_error(), verifier_log.to_string()),
        ProgramError::SyscallError(e) => (e.io_error.raw_os_error(), e.to_string()),
        other => (None, other.to_string()),
    }
}

/// Loads the object, writes `config`, and attaches `programs`.
pub fn load(config: Config, programs: &[Attach]) -> Result<Loaded, LoadError> {
    let btf = Btf::from_sys_fs().map_err(|e| LoadError::NoBtf(e.to_string()))?;
    let mut ebpf = EbpfLoader::new()
        .btf(Some(&btf))
        .load(OBJECT)
        .map_err(|e| LoadError::Refused(None, errno_of_chain(&e), e.to_string()))?;
    let run_stats = aya::sys::enable_stats(aya::sys::Stats::RunTime).ok();
    write_config(&mut ebpf, config).map_err(|e| LoadError::Refused(None, None, e))?;
    let hist = Mapping::of(&ebpf, "hist", SLOTS * SERIES * BUCKETS * 8)
        .map_err(|e| LoadError::Refused(None, None, e))?;
    let stats = Mapping::of(&ebpf, "stats", SLOTS * SERIES * 5 * 8)
        .map_err(|e| LoadError::Refused(None, None, e))?;
    let blame = Mapping::of(&ebpf, "blame", BLAME_THREADS * BLAME_COUNTER_BYTES)
        .map_err(|e| LoadError::Refused(None, None, e))?;
    let requests = Mapping::of(&ebpf, "requests", REQUEST_PLACES * REQUEST_BYTES)
        .map_err(|e| LoadError::Refused(None, None, e))?;
    let mut attached = Vec::new();
    for attach in programs {
        let refused = |e: ProgramError| {
            let (errno, log) = errno_of(&e);
            LoadError::Refused(Some(attach.program), errno, log)
        };
        let program: &mut BtfTracePoint = ebpf
            .program_mut(attach.program)
            .ok_or_else(|| {
                LoadError::Refused(Some(attach.program), None, "not in the object".into())
            })?
            .try_into()
            .map_err(refused)?;
        // A tracepoint the kernel lacks fails in the BTF lookup, before
        // anything is loaded: then the next one is tried.
        let mut chosen = None;
        for &tracepoint in attach.tracepoints {
            match program.load(tracepoint, &btf) {
                Ok(()) => {
                    chosen = Some(tracepoint);
                    break;
                }
                Err(ProgramError::Btf(_)) => continue,
                Err(e) => return Err(refused(e)),
            }
        }
        let Some(tracepoint) = chosen else {
            if attach.optional {
                continue;
            }
            return Err(LoadError::NoTracepoint(attach.program, attach.tracepoints));
        };
        program.attach().map_err(refused)?;
        attached.push((attach.program, tracepoint));
    }
    Ok(Loaded {
        ebpf,
        hist,
        stats,
        requests,
        blame: std::sync::Arc::new(blame),
        _run_stats: run_stats,
        attached,
    })
}

/// The errno of the first system call error in an error's sources (a map
/// the kernel would not create, for one).
fn errno_of_chain(error: &(dyn std::error::Error + 'static)) -> Option<i32> {
    let mut at = Some(error);
    while let Some(e) = at {
        if let Some(errno) = e
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
        {
            return Some(errno);
        }
        at = e.source();
    }
    None
}

fn write_config(ebpf: &mut Ebpf, config: Config) -> Result<(), String> {
    let map = ebpf.map_mut("config").ok_or("no config map")?;
    let mut array: Array<&mut MapData, Config> = Array::try_from(map).map_err(|e| e.to_string())?;
    array.set(0, config, 0).map_err(|e| e.to_string())
}

impl Loaded {
    /// Rewrites the programs' settings (arming at the run's start,
    /// stopping at its end).
    pub fn configure(&mut self, config: Config) -> Result<(), String> {
        write_config(&mut self.ebpf, config)
    }

    /// Marks threads as the probe's own (the `runq` series).
    pub fn add_own_threads(&mut self, tids: &[i32]) -> Result<(), String> {
        let map = self.ebpf.map_mut("own").ok_or("no own map")?;
        let mut own: HashMap<&mut MapData, u32, u8> =
            HashMap::try_from(map).map_err(|e| e.to_string())?;
        for &tid in tids {
            own.insert(tid as u32, 1, 0).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Gives each thread id a blame slot, in order (`--kernel blame`):
    /// the programs find it in the thread table (bpf/table.h).
    pub fn add_blamed_threads(&mut self, tids: &[i32]) -> Result<(), String> {
        let map = self
            .ebpf
            .map_mut("blame_slots")
            .ok_or("no blame_slots map")?;
        let mut table: Array<&mut MapData, [u32; 2]> =
            Array::try_from(map).map_err(|e| e.to_string())?;
        let places = 1usize << TID_BITS;
        for (slot, &tid) in tids.iter().enumerate() {
            let first = spread(tid as u32 as u64, TID_BITS);
            let free = (0..TABLE_PROBES)
                .map(|i| ((first + i) % places) as u32)
                .find(|&at| table.get(&at, 0).is_ok_and(|e| e[0] == 0))
                .ok_or_else(|| format!("no free place for thread {tid} in the blame table"))?;
            table
                .set(free, [tid as u32, slot as u32 + 1], 0)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Bucket counts of series `series` in slot `slot`, shared with the
    /// kernel (read and cleared with atomic operations).
    pub fn buckets(&self, slot: usize, series: usize) -> &[AtomicU64] {
        let words = self.hist.words();
        let at = (slot * SERIES + series) * BUCKETS;
        &words[at..at + BUCKETS]
    }

    /// Count, sum, min, max and clamped of series `series` in slot `slot`.
    pub fn stats(&self, slot: usize, series: usize) -> &[AtomicU64] {
        let words = self.stats.words();
        let at = (slot * SERIES + series) * 5;
        &words[at..at + 5]
    }

    /// Requests the programs saw start (or issued) that have not completed:
    /// the places still taken in their table, read through the mapping.
    pub fn requests_in_flight(&self) -> u64 {
        let words = REQUEST_BYTES / 8;
        self.requests
            .words()
            .iter()
            .step_by(words)
            .filter(|rq| rq.load(std::sync::atomic::Ordering::Relaxed) != 0)
            .count() as u64
    }

    /// Events not counted, by reason (`enum dropped`).
    pub fn dropped(&self) -> [u64; DROPPED_KINDS] {
        let mut out = [0; DROPPED_KINDS];
        if let Some(Ok(array)) = self
            .ebpf
            .map("dropped")
            .map(Array::<&MapData, u64>::try_from)
        {
            for (i, slot) in out.iter_mut().enumerate() {
                *slot = array.get(&(i as u32), 0).unwrap_or(0);
            }
        }
        out
    }

    /// Each attached program's runs, run time and skipped runs so far,
    /// from its descriptor's `/proc/self/fdinfo` entry (which, unlike the
    /// program info aya reads, has the kernel's `recursion_misses`).
    pub fn costs(&self) -> Vec<ProgramCost> {
        self.attached
            .iter()
            .filter_map(|(name, _)| {
                let program = self.ebpf.program(name)?;
                let fd = program.fd().ok()?.as_fd().as_raw_fd();
                let text = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?;
                let field = |key: &str| {
                    text.lines()
                        .find_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok())
                        .unwrap_or(0)
                };
                Some(ProgramCost {
                    program: (*name).to_string(),
                    runs: field("run_cnt:"),
                    run_ns: field("run_time_ns:"),
                    skipped: field("recursion_misses:"),
                })
            })
            .collect()
    }

    /// Bytes the maps hold in the kernel (their sizes as created).
    pub fn map_bytes(&self) -> u64 {
        self.ebpf
            .maps()
            .filter_map(|(_, map)| {
                let info = match map {
                    aya::maps::Map::Array(d)
                    | aya::maps::Map::HashMap(d)
                    | aya::maps::Map::LruHashMap(d) => d.info().ok()?,
                    _ => return None,
                };
                Some(
                    u64::from(info.max_entries())
                        * (u64::from(info.key_size()) + u64::from(info.value_size())),
                )
            })
            .sum()
    }
}

/// A map's values mapped into this process (`BPF_F_MMAPABLE` arrays).
pub struct Mapping {
    at: *mut AtomicU64,
    len: usize,
}

// SAFETY: the region is only ever accessed through `AtomicU64`s, which may
// be shared between threads; the pointer itself is not thread-bound.
unsafe impl Send for Mapping {}
// SAFETY: as above: `&Mapping` only hands out `&[AtomicU64]`.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn of(ebpf: &Ebpf, name: &str, bytes: usize) -> Result<Mapping, String> {
        let map = ebpf.map(name).ok_or_else(|| format!("no {name} map"))?;
        let data = match map {
            aya::maps::Map::Array(data) => data,
            _ => return Err(format!("the {name} map is not an array")),
        };
        // The object's layout must be the one user space reads (a C struct
        // changed without its Rust twin would be read as garbage).
        let info = data
            .info()
            .map_err(|e| format!("cannot read the {name} map's size: {e}"))?;
        let whole = info.value_size() as usize * info.max_entries() as usize;
        if whole != bytes {
            return Err(format!(
                "the {name} map holds {whole} bytes, not the {bytes} this build reads: \
                 bpf/cauda.bpf.o and src/host/trace do not match"
            ));
        }
        let fd = data.fd().as_fd().as_raw_fd();
        let len = bytes.div_ceil(4096) * 4096;
        // SAFETY: a new shared mapping of a BPF_F_MMAPABLE array map's
        // values (its fd is valid while `ebpf` lives, and the mapping keeps
        // the map alive after); no Rust object aliases the new region.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return Err(format!(
                "cannot map the {name} map: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(Mapping {
            at: at.cast(),
            len: bytes / 8,
        })
    }

    /// The start of the mapped values (page-aligned, `len * 8` bytes).
    pub fn bytes(&self) -> *mut u8 {
        self.at.cast()
    }

    fn words(&self) -> &[AtomicU64] {
        // SAFETY: `at` points to `len` 8-byte-aligned u64s (a page-aligned
        // mapping at least that long), alive until `self` is dropped; the
        // kernel updates them with atomic instructions, so they are read
        // and written here only as atomics.
        unsafe { std::slice::from_raw_parts(self.at, self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        let len = (self.len * 8).div_ceil(4096) * 4096;
        // SAFETY: unmaps exactly the region `of` mapped; no slice of it
        // outlives `self` (they borrow it).
        unsafe { libc::munmap(self.at.cast(), len) };
    }
}

#[cfg(test)]
mod tests {
    use super::spread;

    /// The same places as bpf/table.h's `spread` (computed by hand:
    /// the top bits of key × 0x9E3779B97F4A7C15 mod 2^64).
    #[test]
    fn spread_is_the_programs_hash() {
        assert_eq!(spread(1, 10), 632);
        assert_eq!(spread(2, 10), 241);
        assert_eq!(spread(12_345, 10), 644);
        assert_eq!(spread(0xffff_8880_1234_5600, 14), 2214);
        assert!((0..100_000).all(|tid| spread(tid, 10) < 1024));
    }
}
