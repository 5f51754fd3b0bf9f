//! The merge's first check, before anything is merged: no value may count
//! twice — a file given twice, the output among the inputs, the same run
//! under two names (by content, [`super::identity`]), or a merged input
//! that already holds another.

use anyhow::Result;

use super::identity::{held_ids, run_id};
use crate::error::input_error;
use crate::model::Loaded;

/// Refuses a merge that would count values twice: a file given twice,
/// the output among the inputs (a second `merge runs/*.json -o
/// runs/fleet.json` would take in the first one's result), or a merged
/// input that already holds another input. Files are compared by device
/// and inode (`replaced`: those of the file the output replaces), runs by
/// content: two inputs holding the same run, or a merged input holding a
/// run another input holds (by the ids its merge recorded; a merge written
/// before ids were recorded, by the paths it recorded, from here).
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
    refuse_same_runs(files, inputs)?;
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

/// Refuses two inputs that hold one run (see [`super::identity`]): the
/// same run under two names, a merged run beside one of its inputs, or two
/// merged runs that hold one run each.
fn refuse_same_runs(files: &[std::path::PathBuf], inputs: &[Loaded]) -> Result<()> {
    use std::collections::HashMap;
    // Each id, with the input that first held it and whether as itself.
    let mut first: HashMap<String, (usize, bool)> = HashMap::new();
    for (k, input) in inputs.iter().enumerate() {
        let own = run_id(input);
        let held = held_ids(input);
        let ids = std::iter::once((own.as_str(), true)).chain(held.iter().map(|&id| (id, false)));
        for (id, itself) in ids {
            match first.get(id) {
                Some(&(j, _)) if j == k => {}
                Some(&(j, earlier_itself)) => {
                    let (a, b) = (files[j].display(), files[k].display());
                    let why = match (earlier_itself, itself) {
                        (true, true) => format!(
                            "{a} and {b} hold the same run (the same start, labels and \
                             measurements, interval by interval): a copy or another name of \
                             one file; its values would count twice — give each run once"
                        ),
                        (false, true) => format!(
                            "{a}: a merge that already holds {b}'s run; its values would \
                             count twice — leave one of them out"
                        ),
                        (true, false) => format!(
                            "{b}: a merge that already holds {a}'s run; its values would \
                             count twice — leave one of them out"
                        ),
                        (false, false) => format!(
                            "{a} and {b} are merges that both hold one run ({id}); its values \
                             would count twice — merge their inputs instead"
                        ),
                    };
                    return Err(input_error(why));
                }
                None => {
                    first.insert(id.to_string(), (k, itself));
                }
            }
        }
    }
    Ok(())
}
