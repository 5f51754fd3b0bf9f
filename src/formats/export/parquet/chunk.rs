//! One column chunk (a column's rows in one row group) encoded into pages,
//! before compression: a dictionary page and RLE_DICTIONARY data pages
//! (Parquet's usual choice, and the one the `parquet` crate made by
//! default), PLAIN pages where the dictionary grows past 1 MiB or for
//! booleans, or DELTA_BINARY_PACKED pages for a column of increasing
//! integers. Each data page (version 1) holds at most [`PAGE_ROWS`] rows:
//! the definition levels of an optional column (RLE hybrid, width 1,
//! after their 4-byte length), then the values. The chunk's statistics
//! (minimum, maximum, nulls) go into the footer.

use std::collections::HashMap;

use super::encode::{Hybrid, bit_width, delta_binary_packed};

/// Rows per data page at most (the `parquet` crate's default limit).
pub(super) const PAGE_ROWS: usize = 20_000;

/// A dictionary's PLAIN bytes at most before the chunk falls back to PLAIN
/// (the `parquet` crate's default dictionary page limit).
const DICTIONARY_LIMIT: usize = 1 << 20;

/// Parquet's encodings (`parquet.thrift`, enum Encoding).
pub(super) const PLAIN: i32 = 0;
pub(super) const RLE: i32 = 3;
pub(super) const DELTA_BINARY_PACKED: i32 = 5;
pub(super) const RLE_DICTIONARY: i32 = 8;

/// Parquet's physical types (`parquet.thrift`, enum Type).
#[derive(Clone, Copy)]
pub(super) enum Physical {
    Boolean = 0,
    Int64 = 2,
    Double = 5,
    ByteArray = 6,
}

/// A cell's type: its physical type, its PLAIN bytes, its order.
pub(super) trait Value: Clone + PartialEq {
    const PHYSICAL: Physical;
    /// Whether a dictionary may hold it (not booleans).
    const DICTIONARY: bool = true;
    /// Appends the PLAIN encoding of one value.
    fn plain(&self, out: &mut Vec<u8>);
    /// Appends the PLAIN encoding of values in a row (booleans pack bits).
    fn plain_all<'a>(values: impl Iterator<Item = &'a Self>, out: &mut Vec<u8>)
    where
        Self: 'a,
    {
        values.for_each(|v| v.plain(out));
    }
    /// The value as statistics hold it (PLAIN, without a length).
    fn statistic(&self) -> Vec<u8>;
    /// Whether it sorts before `other` in its column order.
    fn before(&self, other: &Self) -> bool;
    /// Whether it is left out of the bounds (NaN).
    fn unordered(&self) -> bool {
        false
    }
}

/// One data page, before compression.
pub(super) struct Page {
    pub(super) rows: usize,
    pub(super) body: Vec<u8>,
}

/// One column chunk, before compression.
pub(super) struct Chunk {
    /// The dictionary's PLAIN bytes and number of entries.
    pub(super) dictionary: Option<(Vec<u8>, usize)>,
    /// The data pages' encoding of values.
    pub(super) encoding: i32,
    pub(super) pages: Vec<Page>,
    pub(super) nulls: u64,
    /// Minimum and maximum, as statistics hold them; none when all null.
    pub(super) bounds: Option<[Vec<u8>; 2]>,
}

/// The dictionary a chunk's values need, if it is small enough.
struct Dictionary {
    index: HashMap<Vec<u8>, u32>,
    bytes: Vec<u8>,
    /// The index of each non-null run, in order.
    runs: Vec<u32>,
}

/// Encodes runs of cells (`None`: null), given twice by `runs`: once for
/// the dictionary and statistics, once for the pages.
pub(super) fn encode<'a, T: Value + 'a, I>(runs: impl Fn() -> I, nullable: bool) -> Chunk
where
    I: Iterator<Item = (Option<&'a T>, usize)>,
{
    let (mut nulls, mut bounds) = (0, None::<(&T, &T)>);
    let mut dictionary = T::DICTIONARY.then(|| Dictionary {
        index: HashMap::new(),
        bytes: Vec::new(),
        runs: Vec::new(),
    });
    for (cell, n) in runs() {
        let Some(v) = cell else {
            nulls += n as u64;
            continue;
        };
        if !v.unordered() {
            bounds = Some(match bounds {
                None => (v, v),
                Some((lo, hi)) => (
                    if v.before(lo) { v } else { lo },
                    if hi.before(v) { v } else { hi },
                ),
            });
        }
        if let Some(d) = &mut dictionary {
            let mut key = Vec::new();
            v.plain(&mut key);
            let next = d.index.len() as u32;
            let at = *d.index.entry(key).or_insert_with_key(|key| {
                d.bytes.extend_from_slice(key);
                next
            });
            d.runs.push(at);
            if d.bytes.len() > DICTIONARY_LIMIT {
                dictionary = None;
            }
        }
    }
    // A column of nulls alone has PLAIN pages of levels alone.
    let (encoding, dictionary, pages) = match dictionary.filter(|d| !d.runs.is_empty()) {
        Some(d) => {
            let width = bit_width(d.index.len().saturating_sub(1) as u64).max(1);
            let mut pages = Pages::new(nullable, Some(width));
            let mut at = d.runs.iter().copied();
            let indices = runs().map(|(cell, n)| (cell.and_then(|_| at.next()), n));
            pages.fill(indices, |page, index, n| {
                if let (Some(index), Some(indices)) = (index, &mut page.indices) {
                    indices.run(u64::from(index), n);
                }
            });
            (RLE_DICTIONARY, Some((d.bytes, d.index.len())), pages)
        }
        None => {
            let mut pages = Pages::new(nullable, None);
            pages.fill(runs(), |page, cell, n| {
                page.plain
                    .extend(cell.into_iter().flat_map(|v| std::iter::repeat_n(v, n)));
            });
            (PLAIN, None, pages)
        }
    };
    Chunk {
        dictionary,
        encoding,
        pages: pages.done,
        nulls,
        bounds: bounds.map(|(lo, hi)| [lo.statistic(), hi.statistic()]),
    }
}

/// A required int64 column in DELTA_BINARY_PACKED pages.
pub(super) fn encode_delta(values: &[i64]) -> Chunk {
    let pages = values
        .chunks(PAGE_ROWS)
        .map(|page| {
            let mut body = Vec::new();
            delta_binary_packed(page, &mut body);
            Page {
                rows: page.len(),
                body,
            }
        })
        .collect();
    let lo = values.iter().min();
    let hi = values.iter().max();
    Chunk {
        dictionary: None,
        encoding: DELTA_BINARY_PACKED,
        pages,
        nulls: 0,
        bounds: lo.zip(hi).map(|(lo, hi)| [lo.statistic(), hi.statistic()]),
    }
}

/// A data page as it fills.
struct Open<'a, T> {
    rows: usize,
    defs: Option<Hybrid>,
    /// Dictionary indices, or else PLAIN values.
    indices: Option<Hybrid>,
    plain: Vec<&'a T>,
}

/// The data pages of a chunk, cut every [`PAGE_ROWS`] rows.
struct Pages<'a, T> {
    nullable: bool,
    /// The dictionary indices' bit width.
    width: Option<u32>,
    open: Open<'a, T>,
    done: Vec<Page>,
}

impl<'a, T: Value> Pages<'a, T> {
    fn new(nullable: bool, width: Option<u32>) -> Self {
        Pages {
            nullable,
            width,
            open: Self::blank(nullable, width),
            done: Vec::new(),
        }
    }

    fn blank(nullable: bool, width: Option<u32>) -> Open<'a, T> {
        Open {
            rows: 0,
            defs: nullable.then(|| Hybrid::new(1)),
            indices: width.map(Hybrid::new),
            plain: Vec::new(),
        }
    }

    /// Adds every run (of a value or its dictionary index), `value`
    /// adding its values to the open page, a page at a time.
    fn fill<X: Copy>(
        &mut self,
        runs: impl Iterator<Item = (Option<X>, usize)>,
        mut value: impl FnMut(&mut Open<'a, T>, Option<X>, usize),
    ) {
        for (cell, mut n) in runs {
            while n > 0 {
                let take = n.min(PAGE_ROWS - self.open.rows);
                if let Some(defs) = &mut self.open.defs {
                    defs.run(u64::from(cell.is_some()), take);
                }
                value(&mut self.open, cell, take);
                self.open.rows += take;
                n -= take;
                if self.open.rows == PAGE_ROWS {
                    self.close();
                }
            }
        }
        self.close();
    }

    fn close(&mut self) {
        let blank = Self::blank(self.nullable, self.width);
        let open = std::mem::replace(&mut self.open, blank);
        if open.rows == 0 {
            return;
        }
        let mut body = Vec::new();
        if let Some(defs) = open.defs {
            let levels = defs.finish();
            body.extend_from_slice(&(levels.len() as u32).to_le_bytes());
            body.extend_from_slice(&levels);
        }
        match (open.indices, self.width) {
            (Some(indices), Some(width)) => {
                body.push(width as u8);
                body.extend_from_slice(&indices.finish());
            }
            _ => T::plain_all(open.plain.into_iter(), &mut body),
        }
        self.done.push(Page {
            rows: open.rows,
            body,
        });
    }
}
