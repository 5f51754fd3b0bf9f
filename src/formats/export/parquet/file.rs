//! A Parquet file's layout (apache/parquet-format, `parquet.thrift`):
//! `PAR1`, then each row group's column chunks (pages, each a Thrift
//! `PageHeader` and its GZIP-compressed bytes), then the footer: the
//! `FileMetaData` (schema, row groups with each chunk's offsets, sizes,
//! encodings and statistics, key-value metadata, column orders) in the
//! Thrift compact protocol, its length as 4 little-endian bytes, and
//! `PAR1` again. Pages are compressed with libdeflate at level 6 (GZIP is
//! RFC 1952, as Parquet's `Compression.md` asks).

use anyhow::{Context, Result};
use libdeflater::{CompressionLvl, Compressor};

use super::chunk::{Chunk, PLAIN, Physical, RLE};
use super::thrift::{Compact, LIST_BINARY, LIST_I32, STRUCT};

const MAGIC: &[u8] = b"PAR1";
/// `CompressionCodec.GZIP`.
const GZIP: i32 = 2;
/// `PageType`: a data page (version 1) and a dictionary page.
const DATA_PAGE: i32 = 0;
const DICTIONARY_PAGE: i32 = 2;
/// `ConvertedType.UTF8`, which a STRING logical type is also written as.
const UTF8: i32 = 0;

/// A logical type of a column.
#[derive(Clone, Copy)]
pub(super) enum Logical {
    /// UTF-8 text.
    String,
    /// Nanoseconds since the Unix epoch, UTC.
    TimestampNanos,
}

/// One column of the schema.
pub(super) struct Schema {
    pub(super) name: String,
    pub(super) physical: Physical,
    pub(super) nullable: bool,
    pub(super) logical: Option<Logical>,
}

/// What the footer says of one column chunk.
struct ChunkMeta {
    physical: Physical,
    encodings: Vec<i32>,
    name: String,
    values: i64,
    uncompressed: i64,
    compressed: i64,
    data_page: i64,
    dictionary_page: Option<i64>,
    nulls: u64,
    bounds: Option<[Vec<u8>; 2]>,
}

/// What the footer says of one row group.
struct GroupMeta {
    rows: i64,
    start: i64,
    columns: Vec<ChunkMeta>,
}

/// A Parquet file being written, row group by row group.
pub(super) struct Writer {
    out: Vec<u8>,
    schema: Vec<Schema>,
    groups: Vec<GroupMeta>,
    gzip: Compressor,
}

impl Writer {
    pub(super) fn new(schema: Vec<Schema>) -> Self {
        Writer {
            out: MAGIC.to_vec(),
            schema,
            groups: Vec::new(),
            gzip: Compressor::new(CompressionLvl::default()),
        }
    }

    /// Writes one row group of `rows` rows, a chunk per schema column.
    pub(super) fn row_group(&mut self, rows: usize, chunks: Vec<Chunk>) -> Result<()> {
        let start = self.out.len() as i64;
        let mut columns = Vec::with_capacity(chunks.len());
        for (i, chunk) in chunks.into_iter().enumerate() {
            let column = (self.schema[i].physical, self.schema[i].name.clone());
            columns.push(self.chunk(chunk, column, rows)?);
        }
        self.groups.push(GroupMeta {
            rows: rows as i64,
            start,
            columns,
        });
        Ok(())
    }

    fn chunk(
        &mut self,
        chunk: Chunk,
        column: (Physical, String),
        rows: usize,
    ) -> Result<ChunkMeta> {
        let start = self.out.len() as i64;
        let mut uncompressed = 0;
        let mut dictionary_page = None;
        if let Some((bytes, entries)) = &chunk.dictionary {
            dictionary_page = Some(start);
            uncompressed += self.page(bytes, DICTIONARY_PAGE, |h| {
                h.begin(7).i32(1, *entries as i32).i32(2, PLAIN).end();
            })?;
        }
        let data_page = self.out.len() as i64;
        for page in &chunk.pages {
            uncompressed += self.page(&page.body, DATA_PAGE, |h| {
                h.begin(5).i32(1, page.rows as i32).i32(2, chunk.encoding);
                h.i32(3, RLE).i32(4, RLE).end();
            })?;
        }
        let mut encodings = vec![chunk.encoding, RLE];
        if chunk.dictionary.is_some() {
            encodings.push(PLAIN);
        }
        encodings.sort_unstable();
        Ok(ChunkMeta {
            physical: column.0,
            encodings,
            name: column.1,
            values: rows as i64,
            uncompressed,
            compressed: self.out.len() as i64 - start,
            data_page,
            dictionary_page,
            nulls: chunk.nulls,
            bounds: chunk.bounds,
        })
    }

    /// Writes one page: its header (`kind`, the sizes, then what `tail`
    /// writes: the page type's own header), then its compressed bytes.
    /// Returns its size uncompressed, header included.
    fn page(&mut self, body: &[u8], kind: i32, tail: impl FnOnce(&mut Compact)) -> Result<i64> {
        let mut packed = vec![0; self.gzip.gzip_compress_bound(body.len())];
        let len = self
            .gzip
            .gzip_compress(body, &mut packed)
            .context("compressing a Parquet page")?;
        let size = |n: usize| {
            i32::try_from(n).context("a Parquet page past 2 GiB (use fewer or shorter labels)")
        };
        let mut header = Compact::new();
        header.i32(1, kind);
        header.i32(2, size(body.len())?).i32(3, size(len)?);
        tail(&mut header);
        let header = header.finish();
        self.out.extend_from_slice(&header);
        self.out.extend_from_slice(&packed[..len]);
        Ok((header.len() + body.len()) as i64)
    }

    /// The footer, and the whole file; `metadata` are key-value pairs.
    pub(super) fn finish(mut self, metadata: &[(&str, &str)]) -> Vec<u8> {
        let mut m = Compact::new();
        m.i32(1, 1);
        m.list(2, STRUCT, self.schema.len() + 1);
        m.element_begin().binary(4, b"schema");
        m.i32(5, self.schema.len() as i32).end();
        for column in &self.schema {
            schema_element(&mut m, column);
        }
        let rows: i64 = self.groups.iter().map(|g| g.rows).sum();
        m.i64(3, rows);
        m.list(4, STRUCT, self.groups.len());
        for (ordinal, group) in self.groups.iter().enumerate() {
            row_group(&mut m, group, ordinal as i16);
        }
        m.list(5, STRUCT, metadata.len());
        for (key, value) in metadata {
            m.element_begin();
            m.binary(1, key.as_bytes())
                .binary(2, value.as_bytes())
                .end();
        }
        let by = concat!("cauda version ", env!("CARGO_PKG_VERSION"));
        m.binary(6, by.as_bytes());
        // Every column in its type's order (TypeDefinedOrder): what lets a
        // reader trust min_value and max_value.
        m.list(7, STRUCT, self.schema.len());
        for _ in &self.schema {
            m.element_begin().begin(1).end().end();
        }
        let footer = m.finish();
        self.out.extend_from_slice(&footer);
        self.out
            .extend_from_slice(&(footer.len() as u32).to_le_bytes());
        self.out.extend_from_slice(MAGIC);
        self.out
    }
}

/// A `SchemaElement` of one leaf column.
fn schema_element(m: &mut Compact, column: &Schema) {
    m.element_begin();
    m.i32(1, column.physical as i32);
    m.i32(3, i32::from(column.nullable));
    m.binary(4, column.name.as_bytes());
    match column.logical {
        Some(Logical::String) => {
            m.i32(6, UTF8);
            m.begin(10).begin(1).end().end();
        }
        Some(Logical::TimestampNanos) => {
            // TimestampType { isAdjustedToUTC: true, unit: NANOS }.
            m.begin(10).begin(8).bool(1, true);
            m.begin(2).begin(3).end().end();
            m.end().end();
        }
        None => {}
    }
    m.end();
}

/// A `RowGroup` and its `ColumnChunk`s.
fn row_group(m: &mut Compact, group: &GroupMeta, ordinal: i16) {
    m.element_begin();
    m.list(1, STRUCT, group.columns.len());
    for c in &group.columns {
        m.element_begin().i64(2, 0).begin(3);
        m.i32(1, c.physical as i32);
        m.list(2, LIST_I32, c.encodings.len());
        for &e in &c.encodings {
            m.element_i32(e);
        }
        m.list(3, LIST_BINARY, 1).element_binary(c.name.as_bytes());
        m.i32(4, GZIP).i64(5, c.values);
        m.i64(6, c.uncompressed).i64(7, c.compressed);
        m.i64(9, c.data_page);
        if let Some(at) = c.dictionary_page {
            m.i64(11, at);
        }
        m.begin(12).i64(3, c.nulls as i64);
        if let Some([lo, hi]) = &c.bounds {
            m.binary(5, hi).binary(6, lo);
        }
        m.end(); // Statistics
        m.end(); // ColumnMetaData
        m.end(); // ColumnChunk
    }
    let uncompressed: i64 = group.columns.iter().map(|c| c.uncompressed).sum();
    let compressed: i64 = group.columns.iter().map(|c| c.compressed).sum();
    m.i64(2, uncompressed).i64(3, group.rows);
    m.i64(5, group.start).i64(6, compressed).i16(7, ordinal);
    m.end();
}
