//! The layers check, ported from `../shared/tools/layers.py` so that both
//! count the same: references between top-level modules against
//! `layers.txt`.

use std::collections::{BTreeMap, BTreeSet};

use crate::scan::{brace_heads, find_words, ident_at, supers_at};
use crate::source::Source;

/// A reference to a top-level module: (module, line, name), as layers.py's
/// `edges_of` finds them.
pub fn layer_refs(file: &Source, modules: &BTreeSet<String>) -> Vec<(String, usize, String)> {
    let code = file.code.as_bytes();
    let me = &file.module;
    let mut found = Vec::new();
    let mut named = |pos: usize, heads: Vec<String>, base: Option<&String>| {
        for h in heads {
            found.push((base.unwrap_or(&h).clone(), file.line_of(pos), h));
        }
    };
    let mut roots = find_words(code, "crate::");
    if me == &["main"] {
        roots.extend(find_words(code, "cauda::"));
    }
    for pos in roots {
        named(pos, heads_at(code, pos + 7), None);
    }
    for pos in find_words(code, "super::") {
        let (ups, end) = supers_at(code, pos);
        let base = if me.len() >= ups {
            &me[..me.len() - ups]
        } else {
            &[]
        };
        named(pos, heads_at(code, end), base.first());
    }
    found.sort_by_key(|f| f.1);
    found.retain(|(t, _, _)| modules.contains(t) && *t != me[0]);
    found
}

/// The first identifier of the path at `pos`, or of each item of its group.
pub fn heads_at(code: &[u8], pos: usize) -> Vec<String> {
    if code.get(pos) == Some(&b'{') {
        brace_heads(code, pos)
    } else {
        ident_at(code, pos).map(String::from).into_iter().collect()
    }
}

/// `layers.txt` → each module's layer, counting from the ground (0).
pub fn parse_layers(spec: &str) -> BTreeMap<String, usize> {
    let lines = spec.lines().map(|l| l.split('#').next().unwrap_or(""));
    let layers = lines
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|l| !l.is_empty());
    let mut level = BTreeMap::new();
    for (i, layer) in layers.enumerate() {
        for m in layer {
            level.insert(m.to_string(), i);
        }
    }
    level
}

pub fn top_modules(tree: &[Source]) -> BTreeSet<String> {
    tree.iter().map(|f| f.module[0].clone()).collect()
}

pub fn layer_offenders(tree: &[Source], spec: &str) -> Vec<String> {
    let level = parse_layers(spec);
    let modules = top_modules(tree);
    let mut out: Vec<String> = modules
        .iter()
        .filter(|m| !level.contains_key(*m))
        .map(|m| format!("module `{m}` is in no layer: add it to layers.txt"))
        .collect();
    for file in tree {
        let me = &file.module[0];
        for (to, line, name) in layer_refs(file, &modules) {
            let upward = matches!((level.get(me), level.get(&to)), (Some(a), Some(b)) if b > a);
            if upward {
                out.push(format!(
                    "src/{}:{line} {me} uses {to} ({name}), a higher layer: \
                     move what it needs down to {me}'s layer or lower",
                    file.rel
                ));
            }
        }
    }
    out
}
