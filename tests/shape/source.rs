//! Reading `src/`: each `.rs` file with its module path, and its code with
//! comments and string/char literals blanked so that scans see only code.

use std::fs;
use std::path::Path;

/// One `.rs` file under `src/`.
pub struct Source {
    /// Path under `src/`, with `/` separators.
    pub rel: String,
    /// The file as written.
    pub text: String,
    /// The file with comments and literals blanked ([`strip_code`]).
    pub code: String,
    /// Module path as layers.py names it (`lib.rs` is `["lib"]`).
    pub module: Vec<String>,
    /// Where each line break of `code` is, to number lines quickly.
    breaks: Vec<usize>,
}

impl Source {
    /// The real module path: `lib.rs` is the crate root `[]`; `main.rs` is
    /// another crate, `None`.
    pub fn crate_path(&self) -> Option<Vec<String>> {
        match self.module.as_slice() {
            [one] if one == "lib" => Some(vec![]),
            [one] if one == "main" => None,
            _ => Some(self.module.clone()),
        }
    }

    /// The line (from 1) holding byte `pos` of `code`.
    pub fn line_of(&self, pos: usize) -> usize {
        self.breaks.partition_point(|&b| b < pos) + 1
    }
}

pub fn read_tree(src: &Path) -> Vec<Source> {
    let mut files = Vec::new();
    walk(src, src, &mut files);
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    files
}

pub fn walk(src: &Path, dir: &Path, out: &mut Vec<Source>) {
    for entry in fs::read_dir(dir).expect("read src/") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            walk(src, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(src)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let text = fs::read_to_string(&path).expect("read a source file");
            let code = strip_code(&text);
            let breaks = code.match_indices('\n').map(|(i, _)| i).collect();
            out.push(Source {
                module: module_path(&rel),
                code,
                rel,
                text,
                breaks,
            });
        }
    }
}

/// `probe/session.rs` → `[probe, session]`; `probe/mod.rs` → `[probe]`.
pub fn module_path(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if parts.len() > 1 && parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// Blanks comments and string/char literals, keeping every line break.
pub fn strip_code(text: &str) -> String {
    let s: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < s.len() {
        let may_open = matches!(s[i], '/' | 'r' | '"' | '\'');
        match may_open.then(|| literal_end(&s, i)).flatten() {
            Some(end) => {
                out.extend(
                    s[i..end]
                        .iter()
                        .map(|&c| if c == '\n' { '\n' } else { ' ' }),
                );
                i = end;
            }
            None => {
                out.push(s[i]);
                i += 1;
            }
        }
    }
    out
}

/// Where the comment or literal starting at `s[i]` ends, if one does.
pub fn literal_end(s: &[char], i: usize) -> Option<usize> {
    let n = s.len();
    let at = |k: usize, p: &str| p.chars().enumerate().all(|(o, c)| s.get(k + o) == Some(&c));
    if at(i, "//") {
        return Some((i..n).find(|&j| s[j] == '\n').unwrap_or(n));
    }
    if at(i, "/*") {
        let (mut depth, mut j) = (1, i + 2);
        while j < n && depth > 0 {
            if at(j, "/*") || at(j, "*/") {
                depth += if s[j] == '/' { 1 } else { -1 };
                j += 2;
            } else {
                j += 1;
            }
        }
        return Some(j.min(n));
    }
    let word_before = i > 0 && (s[i - 1].is_alphanumeric() || s[i - 1] == '_');
    let hashes = s[i + 1..].iter().take_while(|&&c| c == '#').count();
    if s[i] == 'r' && !word_before && hashes <= 8 && s.get(i + 1 + hashes) == Some(&'"') {
        let close: String = std::iter::once('"')
            .chain((0..hashes).map(|_| '#'))
            .collect();
        let end = (i + 2 + hashes..n).find(|&j| at(j, &close));
        return Some(end.map_or(n, |j| j + 1 + hashes));
    }
    if s[i] == '"' {
        let mut j = i + 1;
        while j < n && s[j] != '"' {
            j += if s[j] == '\\' { 2 } else { 1 };
        }
        return Some((j + 1).min(n));
    }
    if s[i] == '\'' {
        let escaped = at(i + 1, "\\") && s.get(i + 2).is_some_and(|&c| c != '\n') && at(i + 3, "'");
        let plain = s.get(i + 1).is_some_and(|&c| c != '\\' && c != '\'') && at(i + 2, "'");
        return match (escaped, plain) {
            (true, _) => Some(i + 4),
            (_, true) => Some(i + 3),
            _ => None,
        };
    }
    None
}
