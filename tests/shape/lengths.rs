//! Lengths and openings: files over the limit, functions over the limit
//! outside tests (with the exception list), files without a `//!`.

use std::collections::BTreeSet;

use crate::scan::{body_open, find_words, ident_at, matching_close, test_items};
use crate::source::Source;
use crate::{FILE_LIMIT, FN_LIMIT};

pub fn long_files(tree: &[Source]) -> Vec<String> {
    tree.iter()
        .filter(|f| f.text.lines().count() > FILE_LIMIT)
        .map(|f| {
            format!(
                "src/{} has {} lines (limit {FILE_LIMIT}): split it by concern into small files",
                f.rel,
                f.text.lines().count()
            )
        })
        .collect()
}

/// A function outside tests: (name, line of `fn`, length in lines).
pub fn functions(file: &Source) -> Vec<(String, usize, usize)> {
    let code = file.code.as_bytes();
    let tests = test_items(code);
    let mut out = Vec::new();
    for pos in find_words(code, "fn") {
        let spaces = code[pos + 2..]
            .iter()
            .take_while(|b| b.is_ascii_whitespace())
            .count();
        let Some(name) = ident_at(code, pos + 2 + spaces).filter(|_| spaces > 0) else {
            continue;
        };
        if tests.iter().any(|(a, b)| *a < pos && pos < *b) {
            continue;
        }
        if let Some(open) = body_open(code, pos + 2 + spaces + name.len()) {
            let (first, last) = (file.line_of(pos), file.line_of(matching_close(code, open)));
            out.push((name.to_string(), first, last - first + 1));
        }
    }
    out
}

pub fn long_functions(tree: &[Source], exceptions: &[(&str, &str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut used = BTreeSet::new();
    for file in tree {
        for (name, line, len) in functions(file).into_iter().filter(|f| f.2 > FN_LIMIT) {
            if exceptions
                .iter()
                .any(|(p, n, _)| *p == file.rel && *n == name)
            {
                used.insert((file.rel.clone(), name));
                continue;
            }
            out.push(format!(
                "src/{}:{line} fn {name} is {len} lines (limit {FN_LIMIT}): split it into \
                 named stages, each a type in and a type out",
                file.rel
            ));
        }
    }
    for (path, name, _) in exceptions {
        if !used.contains(&(path.to_string(), name.to_string())) {
            out.push(format!(
                "src/{path} fn {name} is listed as an exception but is no longer over \
                 {FN_LIMIT} lines (or gone): remove it from LONG_FN_EXCEPTIONS"
            ));
        }
    }
    out
}

pub fn missing_module_docs(tree: &[Source]) -> Vec<String> {
    tree.iter()
        .filter(|f| {
            !f.text
                .lines()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.starts_with("//!"))
        })
        .map(|f| {
            format!(
                "src/{}:1 opens without a `//!` comment: say what the module is and why it exists",
                f.rel
            )
        })
        .collect()
}
