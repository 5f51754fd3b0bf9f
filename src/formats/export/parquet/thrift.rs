//! A Thrift compact-protocol encoder of just what a Parquet footer and its
//! page headers need: structs of integers, booleans, binaries, nested
//! structs and lists, written field by field in increasing field id.
//!
//! The wire format (Apache Thrift, `doc/specs/thrift-compact-protocol.md`):
//! a field is a byte `delta << 4 | type` when its id is 1 to 15 above the
//! previous field's in the same struct (else the type byte, then the id as
//! a zigzag varint); booleans carry their value in the type (1 true, 2
//! false); integers are zigzag ULEB128; a binary is its ULEB128 length and
//! bytes; a list is a byte `size << 4 | element type` (size 15 or more:
//! `0xF0 | type`, then the size); a struct ends with a 0 byte.

use super::encode::{uleb, zigzag};

/// Compact protocol type ids.
const TRUE: u8 = 1;
const FALSE: u8 = 2;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const BINARY: u8 = 8;
const LIST: u8 = 9;
/// A struct, as a field's or a list element's type.
pub(super) const STRUCT: u8 = 12;
/// Element types of lists, for [`Compact::list`].
pub(super) const LIST_I32: u8 = I32;
pub(super) const LIST_BINARY: u8 = BINARY;

/// Bytes being written, and the last field id of each open struct.
pub(super) struct Compact {
    out: Vec<u8>,
    last: Vec<i16>,
}

impl Compact {
    /// A top-level struct begins (ended by [`Compact::end`]).
    pub(super) fn new() -> Self {
        Compact {
            out: Vec::new(),
            last: vec![0],
        }
    }

    fn field(&mut self, id: i16, kind: u8) {
        let last = self.last.last_mut().expect("inside a struct");
        let delta = id - *last;
        if (1..=15).contains(&delta) {
            self.out.push((delta as u8) << 4 | kind);
        } else {
            self.out.push(kind);
            uleb(&mut self.out, zigzag(i64::from(id)));
        }
        *last = id;
    }

    pub(super) fn i16(&mut self, id: i16, v: i16) -> &mut Self {
        self.field(id, I16);
        uleb(&mut self.out, zigzag(i64::from(v)));
        self
    }

    pub(super) fn i32(&mut self, id: i16, v: i32) -> &mut Self {
        self.field(id, I32);
        uleb(&mut self.out, zigzag(i64::from(v)));
        self
    }

    pub(super) fn i64(&mut self, id: i16, v: i64) -> &mut Self {
        self.field(id, I64);
        uleb(&mut self.out, zigzag(v));
        self
    }

    pub(super) fn bool(&mut self, id: i16, v: bool) -> &mut Self {
        self.field(id, if v { TRUE } else { FALSE });
        self
    }

    pub(super) fn binary(&mut self, id: i16, v: &[u8]) -> &mut Self {
        self.field(id, BINARY);
        self.bytes(v);
        self
    }

    /// A struct field begins; its fields follow, then [`Compact::end`].
    pub(super) fn begin(&mut self, id: i16) -> &mut Self {
        self.field(id, STRUCT);
        self.element_begin()
    }

    /// A struct as a list's element begins.
    pub(super) fn element_begin(&mut self) -> &mut Self {
        self.last.push(0);
        self
    }

    /// The innermost open struct ends.
    pub(super) fn end(&mut self) -> &mut Self {
        self.out.push(0);
        self.last.pop();
        self
    }

    /// A list field of `len` elements of type `element` begins; the
    /// elements follow ([`Compact::element_i32`], [`Compact::element_binary`],
    /// or structs from [`Compact::element_begin`]).
    pub(super) fn list(&mut self, id: i16, element: u8, len: usize) -> &mut Self {
        self.field(id, LIST);
        if len < 15 {
            self.out.push((len as u8) << 4 | element);
        } else {
            self.out.push(0xF0 | element);
            uleb(&mut self.out, len as u64);
        }
        self
    }

    pub(super) fn element_i32(&mut self, v: i32) -> &mut Self {
        uleb(&mut self.out, zigzag(i64::from(v)));
        self
    }

    pub(super) fn element_binary(&mut self, v: &[u8]) -> &mut Self {
        self.bytes(v);
        self
    }

    fn bytes(&mut self, v: &[u8]) {
        uleb(&mut self.out, v.len() as u64);
        self.out.extend_from_slice(v);
    }

    /// Ends the top-level struct and returns its bytes.
    pub(super) fn finish(mut self) -> Vec<u8> {
        self.end();
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_lists_and_structs_as_the_specification_writes_them() {
        let mut c = Compact::new();
        c.i32(1, 2).i64(3, -1).bool(4, true);
        c.list(5, LIST_BINARY, 1).element_binary(b"ab");
        c.begin(30).i32(1, 7).end();
        c.list(31, STRUCT, 16);
        for _ in 0..16 {
            c.element_begin().end();
        }
        let out = c.finish();
        let mut want = vec![0x15, 4, 0x26, 1, 0x11, 0x19, 0x18, 2, b'a', b'b'];
        // Field 30 is 25 above 5: the long form, id zigzag 60.
        want.extend([STRUCT, 60, 0x15, 14, 0]);
        want.extend([0x19, 0xFC, 16]);
        want.extend([0; 16]);
        want.push(0);
        assert_eq!(out, want);
    }
}
