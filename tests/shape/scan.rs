//! Small scanners over blanked code (byte offsets): words, identifiers,
//! `use` groups and paths, item bodies and their braces, `#[cfg(test)]`
//! items and inline modules.

pub fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// Positions where `word` starts a word in `code` (regex `\bword`), each
/// after the previous match.
pub fn find_words(code: &[u8], word: &str) -> Vec<usize> {
    let w = word.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i + w.len() <= code.len() {
        if code[i..].starts_with(w) && (i == 0 || !is_word(code[i - 1])) {
            found.push(i);
            i += w.len();
        } else {
            i += 1;
        }
    }
    found
}

/// The identifier (ASCII, as layers.py) starting at `pos`, if any.
pub fn ident_at(code: &[u8], pos: usize) -> Option<&str> {
    let rest = code.get(pos..)?;
    if !rest
        .first()
        .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
    {
        return None;
    }
    let len = rest
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
        .count();
    std::str::from_utf8(&rest[..len]).ok()
}

/// The items of a `{...}` group whose `{` is at `open`, as byte ranges, and
/// where the group ends.
pub fn group_items(code: &[u8], open: usize) -> (Vec<(usize, usize)>, usize) {
    let (mut depth, mut start, mut items) = (0, open + 1, Vec::new());
    for (i, &b) in code.iter().enumerate().skip(open) {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    items.push((start, i));
                    return (items, i + 1);
                }
            }
            b',' if depth == 1 => {
                items.push((start, i));
                start = i + 1;
            }
            _ => {}
        }
    }
    (Vec::new(), code.len())
}

/// The first identifier of each item of a group (layers.py's `brace_heads`).
pub fn brace_heads(code: &[u8], open: usize) -> Vec<String> {
    let (items, _) = group_items(code, open);
    items
        .into_iter()
        .filter_map(|(a, b)| {
            let skip = code[a..b]
                .iter()
                .take_while(|c| c.is_ascii_whitespace())
                .count();
            ident_at(&code[..b], a + skip).map(String::from)
        })
        .collect()
}

/// Counts a run of `super::` at `pos`; returns how many and where it ends.
pub fn supers_at(code: &[u8], mut pos: usize) -> (usize, usize) {
    let mut ups = 0;
    while code[pos..].starts_with(b"super::") {
        ups += 1;
        pos += 7;
    }
    (ups, pos)
}

/// The `{` that opens the body of the item whose head starts at `pos`, or
/// `None` when a `;` ends it first (brackets and parentheses skipped).
pub fn body_open(code: &[u8], pos: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (i, &b) in code.iter().enumerate().skip(pos) {
        match b {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b'{' if depth == 0 => return Some(i),
            b';' if depth == 0 => return None,
            _ => {}
        }
    }
    None
}

/// The `}` matching the `{` at `open` (the last byte when there is none).
pub fn matching_close(code: &[u8], open: usize) -> usize {
    group_items(code, open).1.saturating_sub(1)
}

pub fn after_colons(code: &[u8], pos: usize) -> bool {
    code[..pos].ends_with(b"::")
}

/// The byte ranges of inline `mod name { ... }` blocks.
pub fn inline_modules(code: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for pos in find_words(code, "mod") {
        let spaces = code[pos + 3..]
            .iter()
            .take_while(|b| b.is_ascii_whitespace())
            .count();
        let Some(name) = ident_at(code, pos + 3 + spaces).filter(|_| spaces > 0) else {
            continue;
        };
        let after = pos + 3 + spaces + name.len();
        let gap = code[after..]
            .iter()
            .take_while(|b| b.is_ascii_whitespace())
            .count();
        if code.get(after + gap) == Some(&b'{') {
            out.push((after + gap, matching_close(code, after + gap)));
        }
    }
    out
}

/// The paths a `use` tree or path at `pos` names (`a::{b, c::d}` gives
/// `[a, b]` and `[a, c, d]`), stopping at `self`, `*` or a non-path; and
/// where it ends.
pub fn path_leaves(code: &[u8], mut pos: usize) -> (Vec<Vec<String>>, usize) {
    let mut segments = Vec::new();
    loop {
        if code.get(pos) == Some(&b'{') {
            let (items, end) = group_items(code, pos);
            let mut leaves = Vec::new();
            for (a, _) in items {
                let skip = code[a..]
                    .iter()
                    .take_while(|c| c.is_ascii_whitespace())
                    .count();
                for leaf in path_leaves(code, a + skip).0 {
                    leaves.push([segments.clone(), leaf].concat());
                }
            }
            return (leaves, end);
        }
        match ident_at(code, pos) {
            Some(id) if id != "self" => {
                segments.push(id.to_string());
                pos += id.len();
                if !code[pos..].starts_with(b"::") {
                    break;
                }
                pos += 2;
            }
            _ => break,
        }
    }
    (vec![segments], pos)
}

/// The byte ranges of `#[cfg(test)]` items (from the attribute to the end
/// of the item's body).
pub fn test_items(code: &[u8]) -> Vec<(usize, usize)> {
    find_words(code, "#[cfg(test)]")
        .into_iter()
        .filter_map(|p| body_open(code, p + 12).map(|open| (p, matching_close(code, open))))
        .collect()
}
