//! The merge's first check, before any input is read: no value may count
//! twice — a file given twice, the output among the inputs, or a merged
//! input that already holds another.

use anyhow::Result;

use crate::error::input_error;
use crate::model::Loaded;

/// Refuses a merge that would count values twice: a file given twice,
/// the output among the inputs (a second `merge runs/*.json -o
/// runs/fleet.json` would take in the first one's result), or a merged
/// input that already holds another input. Files are compared by device
/// and inode (`replaced`: those of the file the output replaces); a
/// merge's inputs by the paths it recorded, from here.
pub fn refuse_double_counting(
    files: &[std::path::PathBuf],
    replaced: Option<(u64, u64)>,
    inputs: &[Loaded],
) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let id = |p: &std::path::Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let mut seen: Vec<((u64, u64), &std::path::Path)> = Vec::new();
    for file in files {
        let Some(key) = id(file) else { continue };
        if let Some((_, first)) = seen.iter().find(|(k, _)| *k == key) {
            return Err(input_error(format!(
                "{} and {} are the same file: its values would count twice; give each run once",
                first.display(),
                file.display()
            )));
        }
        if replaced == Some(key) {
            return Err(input_error(format!(
                "-o {0}: is also an input, so the merge would count it and then replace it; \
                 write the merge elsewhere, or leave {0} out of the inputs",
                file.display()
            )));
        }
        seen.push((key, file));
    }
    for (input, file) in inputs.iter().zip(files) {
        let Some(run) = input.run.as_ref().filter(|r| r.probe == "merge") else {
            continue;
        };
        let held = run.parameters["inputs"].as_array().into_iter().flatten();
        for source in held.filter_map(|i| i["source"].as_str()) {
            let Some(key) = id(std::path::Path::new(source)) else {
                continue;
            };
            if let Some((_, other)) = seen.iter().find(|(k, p)| *k == key && *p != file) {
                return Err(input_error(format!(
                    "{}: a merge that already holds {}, which is given too: its values would \
                     count twice; leave one of them out",
                    file.display(),
                    other.display()
                )));
            }
        }
    }
    Ok(())
}
