//! The rule for the names a run carries — series tags and `--label` keys
//! and values: one line of text, at most [`NAME_LIMIT`] bytes. Checked
//! where they come in (a flag, a run file, any imported input), so that
//! no exporter or report is sized by a name (a 1 MB label repeated on
//! every Parquet row, a 100 MB tag in every table of a report) and no
//! line-based format is broken by one (a tag with a newline in an
//! `.hlog`).

/// The most bytes a tag, a label key or a label value may hold (1 KiB).
pub const NAME_LIMIT: usize = 1024;

/// Checks `value`, named `what` in the error (e.g. `series tag`, `label
/// 'host'`): at most [`NAME_LIMIT`] bytes and no control character.
pub fn check_name(what: &str, value: &str) -> Result<(), String> {
    if value.len() > NAME_LIMIT {
        let head: String = value.chars().take(24).collect();
        return Err(format!(
            "{what} '{}…' is {} bytes long; tags and labels hold at most {NAME_LIMIT} bytes \
             (1 KiB)",
            head.escape_debug(),
            value.len()
        ));
    }
    if let Some((at, c)) = value.char_indices().find(|(_, c)| c.is_control()) {
        return Err(format!(
            "{what} '{}' holds a control character (U+{:04X} at byte {at}); tags and labels \
             are one line of text",
            value.escape_debug(),
            c as u32
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_and_control_characters_are_refused() {
        assert!(check_name("series tag", "read").is_ok());
        assert!(check_name("series tag", &"é".repeat(NAME_LIMIT / 2)).is_ok());
        let long = check_name("label 'host'", &"x".repeat(NAME_LIMIT + 1)).unwrap_err();
        assert!(long.starts_with("label 'host' 'xxxx"), "{long}");
        assert!(long.contains("1025 bytes long"), "{long}");
        assert!(long.contains("at most 1024 bytes"), "{long}");
        let newline = check_name("series tag", "a\nb").unwrap_err();
        assert!(newline.contains("'a\\nb'"), "{newline}");
        assert!(newline.contains("U+000A at byte 1"), "{newline}");
        assert!(check_name("series tag", "a\u{7f}").is_err());
        assert!(check_name("series tag", "tab\there").is_err());
    }
}
