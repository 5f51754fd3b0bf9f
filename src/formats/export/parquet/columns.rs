//! The column writer behind `cauda convert --to parquet`: columns filled
//! row by row (as runs of equal cells where cells repeat), then written as
//! one Parquet file through the `parquet` crate's `SerializedFileWriter`,
//! with no Arrow in between.

use std::ops::Range;
use std::sync::Arc;

use ::parquet::basic::{Compression, Encoding, GzipLevel, LogicalType, Repetition};
use ::parquet::data_type::{ByteArrayType, DataType, Int64Type};
use ::parquet::file::metadata::KeyValue;
use ::parquet::file::properties::WriterProperties;
use ::parquet::file::writer::{SerializedColumnWriter, SerializedFileWriter};
use ::parquet::schema::types::{ColumnPath, Type};
use anyhow::{Context, Result};

/// The value of the `cauda.schema` key in every table's metadata: how
/// cauda knows its own files.
pub const MARK: &str = "cauda.parquet/1";

/// Rows per row group (Parquet's usual 1 Mi): readers scan groups in parallel.
const ROW_GROUP: usize = 1 << 20;

/// A column as it fills, as runs of equal cells (`None`: null): most
/// cells repeat the one above (the run, the series, an interval's start
/// beside each of its buckets).
pub(super) struct Column<D: DataType> {
    name: String,
    logical: Option<LogicalType>,
    nullable: bool,
    runs: Vec<(Option<D::T>, usize)>,
}

impl<D: DataType> Column<D> {
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
    pub(super) fn of(self, logical: LogicalType) -> Self {
        Column {
            logical: Some(logical),
            ..self
        }
    }

    /// Adds `rows` rows holding `cell`.
    pub(super) fn push(&mut self, cell: Option<D::T>, rows: usize) {
        match self.runs.last_mut() {
            Some((last, n)) if *last == cell => *n += rows,
            _ => self.runs.push((cell, rows)),
        }
    }

    /// How many rows it holds.
    pub(super) fn rows(&self) -> usize {
        self.runs.iter().map(|(_, n)| n).sum()
    }
}

/// A UTF-8 column.
pub(super) fn text(name: &str, nullable: bool) -> Column<ByteArrayType> {
    Column {
        nullable,
        ..Column::new(name)
    }
    .of(LogicalType::String)
}

/// A column of integers that seldom repeat, one per row.
pub(super) struct Dense {
    name: &'static str,
    pub(super) values: Vec<i64>,
}

impl Dense {
    pub(super) fn new(name: &'static str) -> Self {
        Dense {
            name,
            values: Vec::new(),
        }
    }
}

/// A column of any type, for writing.
pub(super) trait Field {
    fn schema(&self) -> Result<Arc<Type>>;
    fn write(&self, rows: Range<usize>, out: &mut SerializedColumnWriter<'_>) -> Result<()>;
}

/// Values handed to the column writer at a time.
const BATCH: usize = 4096;

impl<D: DataType> Field for Column<D> {
    fn schema(&self) -> Result<Arc<Type>> {
        let repetition = match self.nullable {
            true => Repetition::OPTIONAL,
            false => Repetition::REQUIRED,
        };
        let field = Type::primitive_type_builder(&self.name, D::get_physical_type())
            .with_repetition(repetition)
            .with_logical_type(self.logical.clone());
        Ok(Arc::new(field.build()?))
    }

    fn write(&self, rows: Range<usize>, out: &mut SerializedColumnWriter<'_>) -> Result<()> {
        let out = out.typed::<D>();
        let (mut values, mut defs) = (Vec::with_capacity(BATCH), Vec::with_capacity(BATCH));
        let mut flush = |values: &mut Vec<D::T>, defs: &mut Vec<i16>| {
            let defs_given = self.nullable.then_some(&defs[..]);
            let written = out.write_batch(values, defs_given, None);
            values.clear();
            defs.clear();
            written
        };
        let mut at = 0;
        for (cell, n) in &self.runs {
            let (from, to) = (at.max(rows.start), (at + n).min(rows.end));
            at += n;
            for _ in from..to {
                defs.push(i16::from(cell.is_some()));
                values.extend(cell.iter().cloned());
                if defs.len() == BATCH {
                    flush(&mut values, &mut defs)?;
                }
            }
            if at >= rows.end {
                break;
            }
        }
        flush(&mut values, &mut defs)?;
        Ok(())
    }
}

impl Field for Dense {
    fn schema(&self) -> Result<Arc<Type>> {
        Column::<Int64Type>::new(self.name).schema()
    }

    fn write(&self, rows: Range<usize>, out: &mut SerializedColumnWriter<'_>) -> Result<()> {
        out.typed::<Int64Type>()
            .write_batch(&self.values[rows], None, None)?;
        Ok(())
    }
}

/// How each table is written, chosen on a 1-hour 1 kHz timer run
/// (`bench/parquet_size.sh`): GZIP at its usual level 6 through flate2,
/// which cauda already uses (no C code, no new crate): 2.61 MB for both
/// tables, against 3.52 MB with snappy and 5.07 MB uncompressed, for 0.15 s
/// more than snappy. `value_ns`, increasing within each interval, is
/// DELTA_BINARY_PACKED (a third of its dictionary-encoded size); every
/// other column keeps Parquet's default, dictionary and run-length
/// encoding, which suits the keys repeated over many rows and the small
/// counts best (delta coding them changed the total by under 1 %).
fn properties(table: &str) -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::GZIP(GzipLevel::default()))
        .set_column_dictionary_enabled(ColumnPath::from("value_ns"), false)
        .set_column_encoding(ColumnPath::from("value_ns"), Encoding::DELTA_BINARY_PACKED)
        .set_key_value_metadata(Some(vec![
            KeyValue::new("cauda.schema".into(), MARK.to_string()),
            KeyValue::new("cauda.table".into(), table.to_string()),
        ]))
        .build()
}

/// One Parquet file of `rows` rows in the columns `fields`.
pub(super) fn write_table(table: &str, fields: &[&dyn Field], rows: usize) -> Result<Vec<u8>> {
    let columns = fields.iter().map(|f| f.schema()).collect::<Result<_>>()?;
    let schema = Type::group_type_builder("schema")
        .with_fields(columns)
        .build()?;
    let mut out = Vec::new();
    let mut writer =
        SerializedFileWriter::new(&mut out, Arc::new(schema), Arc::new(properties(table)))?;
    for start in (0..rows).step_by(ROW_GROUP) {
        let mut group = writer.next_row_group()?;
        for field in fields {
            let mut column = group
                .next_column()?
                .context("the Parquet writer has fewer columns than the schema")?;
            field.write(start..(start + ROW_GROUP).min(rows), &mut column)?;
            column.close()?;
        }
        group.close()?;
    }
    writer.close()?;
    Ok(out)
}
