//! How a merge names an input in tags (`--tag-by source`) and warnings:
//! by its file name, without the directories.

/// The file name of `source`, or `source` itself when it has none.
pub fn stem(source: &str) -> String {
    std::path::Path::new(source)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| source.to_string())
}
