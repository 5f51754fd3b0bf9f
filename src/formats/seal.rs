//! A run file's seal: the CRC-32 of its compact JSON, written as its last
//! field (`"integrity":"crc32:…"`) by [`super::export::runfile::to_bytes`]
//! and checked by [`super::import::runfile::parse`], which warns when a
//! file was changed after cauda wrote it.

/// The checksum of `bytes`, as the seal writes it.
pub fn checksum(bytes: &[u8]) -> String {
    checksum_parts(bytes, b"")
}

/// The checksum of `first` followed by `second`, without joining them.
pub fn checksum_parts(first: &[u8], second: &[u8]) -> String {
    let mut crc = flate2::Crc::new();
    crc.update(first);
    crc.update(second);
    format!("crc32:{:08x}", crc.sum())
}

/// The seal of `unsealed` (a run's compact JSON without it): the field
/// that takes the place of the object's closing brace, and a final newline.
pub fn seal_of(unsealed: &[u8]) -> String {
    format!(",\"integrity\":\"{}\"}}\n", checksum(unsealed))
}

/// The text of a run file as [`seal_of`] sealed it, up to its seal: what
/// the checksum covers, but for the object's closing brace.
pub fn as_sealed(text: &str) -> Option<&[u8]> {
    const SEAL: &str = ",\"integrity\":\"crc32:";
    let body = text.strip_suffix("\"}\n")?;
    let at = body.rfind(SEAL)?;
    let hex = &body[at + SEAL.len()..];
    (hex.len() == 8 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then(|| &body.as_bytes()[..at])
}
