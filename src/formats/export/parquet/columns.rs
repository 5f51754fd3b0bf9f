//! The columns behind `cauda convert --to parquet`: filled row by row (as
//! runs of equal cells where cells repeat), then written as one Parquet
//! file by cauda's own writer (`chunk.rs` encodes a column's pages,
//! `file.rs` lays out the file and its footer), with no Arrow and no
//! Parquet crate in between.

use std::ops::Range;
use std::rc::Rc;

use anyhow::Result;

use super::chunk::{Chunk, Physical, Value, encode, encode_delta};
use super::encode::plain_bools;
use super::file::{Logical, Schema, Writer};

/// The value of the `cauda.schema` key in every table's metadata: how
/// cauda knows its own files.
pub const MARK: &str = "cauda.parquet/1";

/// Rows per row group (Parquet's usual 1 Mi): readers scan groups in parallel.
const ROW_GROUP: usize = 1 << 20;

/// A text cell (UTF-8), shared by the rows that repeat it.
pub(super) type Text = Rc<str>;

impl Value for i64 {
    const PHYSICAL: Physical = Physical::Int64;
    fn plain(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn statistic(&self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
    fn before(&self, other: &Self) -> bool {
        self < other
    }
}

impl Value for f64 {
    const PHYSICAL: Physical = Physical::Double;
    fn plain(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn statistic(&self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
    fn before(&self, other: &Self) -> bool {
        self < other
    }
    fn unordered(&self) -> bool {
        self.is_nan()
    }
}

impl Value for bool {
    const PHYSICAL: Physical = Physical::Boolean;
    const DICTIONARY: bool = false;
    fn plain(&self, out: &mut Vec<u8>) {
        plain_bools(std::iter::once(*self), out);
    }
    fn plain_all<'a>(values: impl Iterator<Item = &'a Self>, out: &mut Vec<u8>) {
        plain_bools(values.copied(), out);
    }
    fn statistic(&self) -> Vec<u8> {
        vec![u8::from(*self)]
    }
    fn before(&self, other: &Self) -> bool {
        self < other
    }
}

/// Text: PLAIN is a 4-byte length and the bytes; ordered byte by byte,
/// unsigned (a STRING column's order).
impl Value for Text {
    const PHYSICAL: Physical = Physical::ByteArray;
    fn plain(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.len() as u32).to_le_bytes());
        out.extend_from_slice(self.as_bytes());
    }
    fn statistic(&self) -> Vec<u8> {
        self.as_bytes().to_vec()
    }
    fn before(&self, other: &Self) -> bool {
        self.as_bytes() < other.as_bytes()
    }
}

/// A column as it fills, as runs of equal cells (`None`: null): most
/// cells repeat the one above (the run, the series, an interval's start
/// beside each of its buckets).
pub(super) struct Column<T> {
    name: String,
    logical: Option<Logical>,
    nullable: bool,
    runs: Vec<(Option<T>, usize)>,
}

impl<T: Value> Column<T> {
    pub(super) fn new(name: &str) -> Self {
        Column {
            name: name.to_string(),
            logical: None,
            nullable: false,
            runs: Vec::new(),
        }
    }

    pub(super) fn nullable(name: &str) -> Self {
        Column {
            nullable: true,
            ..Column::new(name)
        }
    }

    /// The column with a logical type (a string, a timestamp).
    pub(super) fn of(self, logical: Logical) -> Self {
        Column {
            logical: Some(logical),
            ..self
        }
    }

    /// Adds `rows` rows holding `cell`.
    pub(super) fn push(&mut self, cell: Option<T>, rows: usize) {
        match self.runs.last_mut() {
            Some((last, n)) if *last == cell => *n += rows,
            _ => self.runs.push((cell, rows)),
        }
    }

    /// How many rows it holds.
    pub(super) fn rows(&self) -> usize {
        self.runs.iter().map(|(_, n)| n).sum()
    }

    /// The runs within `rows`, cut at its ends.
    fn runs_in(&self, rows: Range<usize>) -> impl Iterator<Item = (Option<&T>, usize)> {
        let mut at = 0;
        self.runs.iter().filter_map(move |(cell, n)| {
            let (from, to) = (at.max(rows.start), (at + n).min(rows.end));
            at += n;
            (from < to).then(|| (cell.as_ref(), to - from))
        })
    }
}

/// A UTF-8 column.
pub(super) fn text(name: &str, nullable: bool) -> Column<Text> {
    Column {
        nullable,
        ..Column::new(name)
    }
    .of(Logical::String)
}

/// A column of integers that seldom repeat, one per row; `delta` for
/// increasing ones (DELTA_BINARY_PACKED), else dictionary-encoded.
pub(super) struct Dense {
    name: &'static str,
    delta: bool,
    pub(super) values: Vec<i64>,
}

impl Dense {
    pub(super) fn new(name: &'static str) -> Self {
        Dense {
            name,
            delta: false,
            values: Vec::new(),
        }
    }

    /// A column of values increasing within each interval (`value_ns`):
    /// delta-coded, a third of its dictionary-encoded size.
    pub(super) fn increasing(name: &'static str) -> Self {
        Dense {
            delta: true,
            ..Dense::new(name)
        }
    }
}

/// A column of any type, for writing.
pub(super) trait Field {
    fn schema(&self) -> Schema;
    /// The column's chunk of one row group.
    fn chunk(&self, rows: Range<usize>) -> Chunk;
}

impl<T: Value> Field for Column<T> {
    fn schema(&self) -> Schema {
        Schema {
            name: self.name.clone(),
            physical: T::PHYSICAL,
            nullable: self.nullable,
            logical: self.logical,
        }
    }

    fn chunk(&self, rows: Range<usize>) -> Chunk {
        encode(|| self.runs_in(rows.clone()), self.nullable)
    }
}

impl Field for Dense {
    fn schema(&self) -> Schema {
        Column::<i64>::new(self.name).schema()
    }

    fn chunk(&self, rows: Range<usize>) -> Chunk {
        let values = &self.values[rows];
        match self.delta {
            true => encode_delta(values),
            false => encode(|| values.iter().map(|v| (Some(v), 1)), false),
        }
    }
}

/// How each table is written, chosen on a 1-hour 1 kHz timer run
/// (`bench/parquet_size.sh`): GZIP at its usual level 6 (through
/// libdeflate, which cauda already uses for histograms; no new crate),
/// 2.61 MB for both tables with the `parquet` crate, against 3.52 MB with
/// snappy and 5.07 MB uncompressed. `value_ns`, increasing within each
/// interval, is DELTA_BINARY_PACKED (a third of its dictionary-encoded
/// size); every other column has Parquet's usual dictionary and
/// run-length encoding, which suits the keys repeated over many rows and
/// the small counts best. One Parquet file of `rows` rows in the columns
/// `fields`, in row groups of [`ROW_GROUP`] rows.
pub(super) fn write_table(table: &str, fields: &[&dyn Field], rows: usize) -> Result<Vec<u8>> {
    let mut writer = Writer::new(fields.iter().map(|f| f.schema()).collect());
    for start in (0..rows).step_by(ROW_GROUP) {
        let range = start..(start + ROW_GROUP).min(rows);
        let chunks = fields.iter().map(|f| f.chunk(range.clone())).collect();
        writer.row_group(range.len(), chunks)?;
    }
    Ok(writer.finish(&[("cauda.schema", MARK), ("cauda.table", table)]))
}
