//! Fast line iteration for large text logs: scans the reader's buffer in
//! place and copies only the lines that straddle two reads.

use std::io::BufRead;

/// Calls `f(line_number, line, ended_with_newline)` for every line (without
/// its `\n`). Stops at the first error from `f` or from the reader.
pub fn for_each_line<R: BufRead, E: From<std::io::Error>>(
    reader: &mut R,
    mut f: impl FnMut(usize, &[u8], bool) -> Result<(), E>,
) -> Result<(), E> {
    let mut carry: Vec<u8> = Vec::new();
    let mut line_no = 0usize;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            if !carry.is_empty() {
                line_no += 1;
                f(line_no, &carry, false)?;
            }
            return Ok(());
        }
        let len = buf.len();
        let mut start = 0;
        while let Some(pos) = memchr::memchr(b'\n', &buf[start..]) {
            let end = start + pos;
            line_no += 1;
            if carry.is_empty() {
                f(line_no, &buf[start..end], true)?;
            } else {
                carry.extend_from_slice(&buf[start..end]);
                f(line_no, &carry, true)?;
                carry.clear();
            }
            start = end + 1;
        }
        carry.extend_from_slice(&buf[start..]);
        reader.consume(len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_across_small_buffers() {
        let text = b"alpha\nbeta\n\ngamma";
        for cap in [1, 2, 3, 7, 64] {
            let mut reader = std::io::BufReader::with_capacity(cap, &text[..]);
            let mut seen = Vec::new();
            for_each_line::<_, std::io::Error>(&mut reader, |n, line, nl| {
                seen.push((n, String::from_utf8_lossy(line).into_owned(), nl));
                Ok(())
            })
            .unwrap();
            assert_eq!(
                seen,
                vec![
                    (1, "alpha".into(), true),
                    (2, "beta".into(), true),
                    (3, "".into(), true),
                    (4, "gamma".into(), false)
                ],
                "capacity {cap}"
            );
        }
    }
}
