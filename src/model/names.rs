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

/// A name read from a run file, checked before it is copied out of the
/// text (a 100 MB tag is refused where it lies rather than held twice);
/// `what` names it in the error.
struct NameSeed<'a>(&'a str);

impl<'de> serde::de::DeserializeSeed<'de> for NameSeed<'_> {
    type Value = String;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for NameSeed<'_> {
    type Value = String;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a {} of at most {NAME_LIMIT} bytes", self.0)
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<String, E> {
        check_name(self.0, text).map_err(E::custom)?;
        Ok(text.to_string())
    }
}

/// `#[serde(deserialize_with)]` for a series tag: [`check_name`] as it is
/// read.
pub fn tag<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    serde::de::DeserializeSeed::deserialize(NameSeed("series tag"), d)
}

/// `#[serde(deserialize_with)]` for a run's labels: [`check_name`] on
/// every key and value as it is read.
pub fn labels<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<std::collections::BTreeMap<String, String>, D::Error> {
    struct Labels;
    impl<'de> serde::de::Visitor<'de> for Labels {
        type Value = std::collections::BTreeMap<String, String>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object of labels, KEY: VALUE")
        }

        fn visit_map<M: serde::de::MapAccess<'de>>(
            self,
            mut map: M,
        ) -> Result<Self::Value, M::Error> {
            let mut labels = std::collections::BTreeMap::new();
            while let Some(key) = map.next_key_seed(NameSeed("label key"))? {
                let what = format!("label '{key}'");
                let value = map.next_value_seed(NameSeed(&what))?;
                labels.insert(key, value);
            }
            Ok(labels)
        }
    }
    d.deserialize_map(Labels)
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

    /// A run file's tags and labels are checked as they are read.
    #[test]
    fn run_files_are_checked_as_they_are_read() {
        #[derive(serde::Deserialize)]
        struct Doc {
            #[serde(deserialize_with = "tag")]
            _tag: String,
            #[serde(deserialize_with = "labels")]
            labels: std::collections::BTreeMap<String, String>,
        }
        let doc = |tag: &str, value: &str| {
            serde_json::from_value::<Doc>(
                serde_json::json!({"_tag": tag, "labels": {"host": value}}),
            )
        };
        assert_eq!(doc("read", "a1").unwrap().labels["host"], "a1");
        let err = doc(&"t".repeat(2000), "a1").err().unwrap().to_string();
        assert!(err.starts_with("series tag 'tttt"), "{err}");
        let err = doc("read", "a\n1").err().unwrap().to_string();
        assert!(
            err.starts_with("label 'host' 'a\\n1' holds a control character"),
            "{err}"
        );
    }
}
