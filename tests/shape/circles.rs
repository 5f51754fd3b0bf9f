//! Circles of references: between top-level modules (the edges layers.py
//! finds) and between the nodes of one folder (see the test's `//!`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::layers::{layer_refs, top_modules};
use crate::scan::{
    after_colons, find_words, ident_at, inline_modules, is_word, path_leaves, supers_at, test_items,
};
use crate::source::Source;

/// Circles between top-level modules, over the edges layers.py finds.
pub fn module_cycles(tree: &[Source]) -> Vec<String> {
    let modules = top_modules(tree);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut site = BTreeMap::new();
    for file in tree {
        let me = file.module[0].clone();
        graph.entry(me.clone()).or_default();
        for (to, line, _) in layer_refs(file, &modules) {
            site.entry((me.clone(), to.clone()))
                .or_insert(format!("src/{}:{line}", file.rel));
            graph.get_mut(&me).unwrap().insert(to);
        }
    }
    circles(&graph, &site, "top-level modules", |m| m.to_string())
}

/// Every module path a file's code outside tests refers to, with its line:
/// `crate::a::b`, `super::b`, `self::b`, and a bare `b::` naming a child
/// module of the file. Paths inside an inline module resolve from it.
pub fn path_refs(
    file: &Source,
    me: &[String],
    children: &BTreeSet<String>,
) -> Vec<(Vec<String>, usize)> {
    let code = file.code.as_bytes();
    let inline = inline_modules(code);
    let depth = |pos: usize| within(&inline, pos);
    let mut starts = rooted_paths(code, me, depth);
    let groups: Vec<(usize, usize)> = starts
        .iter()
        .filter(|s| code.get(s.at) == Some(&b'{'))
        .map(|s| (s.at, path_leaves(code, s.at).1))
        .collect();
    let free = |pos: usize| depth(pos) == 0 && within(&groups, pos) == 0;
    starts.extend(child_paths(code, me, children, free));
    let tests = test_items(code);
    let mut found = Vec::new();
    for start in starts.into_iter().filter(|s| within(&tests, s.pos) == 0) {
        for leaf in path_leaves(code, start.at).0 {
            found.push(([&start.base[..], &leaf].concat(), file.line_of(start.pos)));
        }
    }
    found
}

/// A path in code: where it is written, where its rest starts (after
/// `crate::` and the like), and the module path it starts from.
struct PathStart {
    pos: usize,
    at: usize,
    base: Vec<String>,
}

/// How many of these byte ranges hold `pos`.
fn within(ranges: &[(usize, usize)], pos: usize) -> usize {
    ranges.iter().filter(|(a, b)| *a < pos && pos < *b).count()
}

/// Paths from `crate::`, `super::` (those that leave the file) and
/// `self::` (outside inline modules). A visibility (`pub(in crate::x)`)
/// names a module without using it, and the second `super` of
/// `super::super::` is part of the first's path: neither is a reference.
fn rooted_paths(code: &[u8], me: &[String], depth: impl Fn(usize) -> usize) -> Vec<PathStart> {
    let mut starts = Vec::new();
    let used = |pos: usize| !after_colons(code, pos) && !in_visibility(code, pos);
    for pos in find_words(code, "crate::").into_iter().filter(|&p| used(p)) {
        starts.push(PathStart {
            pos,
            at: pos + 7,
            base: vec![],
        });
    }
    for pos in find_words(code, "super::").into_iter().filter(|&p| used(p)) {
        let (ups, at) = supers_at(code, pos);
        let ups = ups
            .checked_sub(depth(pos))
            .filter(|&u| u > 0 && u <= me.len());
        if let Some(ups) = ups {
            starts.push(PathStart {
                pos,
                at,
                base: me[..me.len() - ups].to_vec(),
            });
        }
    }
    for pos in find_words(code, "self::") {
        if depth(pos) == 0 && !after_colons(code, pos) {
            starts.push(PathStart {
                pos,
                at: pos + 6,
                base: me.to_vec(),
            });
        }
    }
    starts
}

/// Whether the path at `pos` is a visibility's: `pub(in PATH)`.
fn in_visibility(code: &[u8], pos: usize) -> bool {
    let trimmed = |end: usize| {
        let mut end = end;
        while end > 0 && code[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
        end
    };
    let end = trimmed(pos);
    if end < 2 || &code[end - 2..end] != b"in" || (end > 2 && is_word(code[end - 3])) {
        return false;
    }
    code[..trimmed(end - 2)].ends_with(b"pub(")
}

/// Paths that begin with a child module's name (`child::x`), where `free`
/// says a position is in the file's own scope.
fn child_paths(
    code: &[u8],
    me: &[String],
    children: &BTreeSet<String>,
    free: impl Fn(usize) -> bool,
) -> Vec<PathStart> {
    let word_start = |p: usize| (p == 0 || !is_word(code[p - 1])) && !after_colons(code, p);
    (0..code.len())
        .filter(|&pos| word_start(pos))
        .filter(|&pos| {
            let child = ident_at(code, pos).filter(|c| children.contains(*c));
            child.is_some_and(|c| code[pos + c.len()..].starts_with(b"::")) && free(pos)
        })
        .map(|pos| PathStart {
            pos,
            at: pos,
            base: me.to_vec(),
        })
        .collect()
}

/// The graph of each folder: for every folder (module path with children),
/// which node refers to which, with one site per edge.
pub struct Folders {
    graphs: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>>,
    sites: BTreeMap<(Vec<String>, String, String), String>,
    labels: BTreeMap<Vec<String>, String>,
}

pub fn folder_cycles(tree: &[Source]) -> Vec<String> {
    let folders = folder_graphs(tree);
    let mut out = Vec::new();
    for (folder, graph) in &folders.graphs {
        let sites: BTreeMap<(String, String), String> = folders
            .sites
            .iter()
            .filter(|((f, _, _), _)| f == folder)
            .map(|((_, a, b), s)| ((a.clone(), b.clone()), s.clone()))
            .collect();
        let label = |node: &str| node_label(&folders.labels, folder, node);
        let place = format!(
            "src/{}",
            folder.iter().map(|s| format!("{s}/")).collect::<String>()
        );
        out.extend(circles(graph, &sites, &place, label));
    }
    out
}

pub fn folder_graphs(tree: &[Source]) -> Folders {
    let paths: Vec<(&Source, Vec<String>)> = tree
        .iter()
        .filter_map(|f| f.crate_path().map(|p| (f, p)))
        .collect();
    let mut children: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    let mut labels = BTreeMap::new();
    for (file, path) in &paths {
        labels.insert(
            path.clone(),
            file.rel.rsplit('/').next().unwrap().to_string(),
        );
        for k in 0..path.len() {
            children
                .entry(path[..k].to_vec())
                .or_default()
                .insert(path[k].clone());
        }
    }
    let mut folders = Folders {
        graphs: BTreeMap::new(),
        sites: BTreeMap::new(),
        labels,
    };
    for (file, me) in &paths {
        let mine = children.get(me).cloned().unwrap_or_default();
        for (target, line) in path_refs(file, me, &mine) {
            let common = me.iter().zip(&target).take_while(|(a, b)| a == b).count();
            let folder = me[..common].to_vec();
            let Some(kids) = children.get(&folder) else {
                continue;
            };
            let node = |p: &[String]| {
                p.get(common)
                    .filter(|c| kids.contains(*c))
                    .cloned()
                    .unwrap_or_default()
            };
            let (from, to) = (node(me), node(&target));
            if from != to {
                let site = format!("src/{}:{line}", file.rel);
                folders
                    .sites
                    .entry((folder.clone(), from.clone(), to.clone()))
                    .or_insert(site);
                folders
                    .graphs
                    .entry(folder)
                    .or_default()
                    .entry(from)
                    .or_default()
                    .insert(to);
            }
        }
    }
    folders
}

/// A node's name for people: a child file `x.rs`, a subfolder `x/`, or the
/// file of the folder's own module (`""`), such as `mod.rs`.
pub fn node_label(labels: &BTreeMap<Vec<String>, String>, folder: &[String], node: &str) -> String {
    if node.is_empty() {
        return labels
            .get(folder)
            .cloned()
            .unwrap_or_else(|| "mod.rs".into());
    }
    let path = [folder, &[node.to_string()]].concat();
    let is_folder = labels
        .keys()
        .any(|k| k.len() > path.len() && k.starts_with(&path));
    if is_folder {
        format!("{node}/")
    } else {
        format!("{node}.rs")
    }
}

/// Every strongly connected component of more than one node, each printed
/// as one circle through it and every edge inside it with a site.
pub fn circles(
    graph: &BTreeMap<String, BTreeSet<String>>,
    sites: &BTreeMap<(String, String), String>,
    place: &str,
    label: impl Fn(&str) -> String,
) -> Vec<String> {
    let mut out = Vec::new();
    for comp in strongly_connected(graph) {
        let circle: Vec<String> = shortest_circle(graph, &comp)
            .iter()
            .map(|n| label(n))
            .collect();
        let mut text = format!(
            "{place}: {} — break it: move what the others need into a file they all use, \
             so references run one way",
            circle.join(" → ")
        );
        for (a, b) in comp.iter().flat_map(|a| {
            graph[a]
                .iter()
                .filter(|b| comp.contains(*b))
                .map(move |b| (a, b))
        }) {
            let site = sites
                .get(&(a.clone(), b.clone()))
                .map_or("", String::as_str);
            text += &format!("\n      {} → {}  {site}", label(a), label(b));
        }
        out.push(text);
    }
    out
}

/// Tarjan's strongly connected components, those with two nodes or more.
pub fn strongly_connected(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        comps: Vec<BTreeSet<String>>,
    }
    fn visit<'g>(st: &mut State<'g>, v: &'g str) {
        let n = st.index.len();
        st.index.insert(v, n);
        st.low.insert(v, n);
        st.stack.push(v);
        for w in st.graph.get(v).into_iter().flatten() {
            if !st.index.contains_key(w.as_str()) {
                visit(st, w);
                let low = st.low[v].min(st.low[w.as_str()]);
                st.low.insert(v, low);
            } else if st.stack.contains(&w.as_str()) {
                let low = st.low[v].min(st.index[w.as_str()]);
                st.low.insert(v, low);
            }
        }
        if st.low[v] == st.index[v] {
            let at = st.stack.iter().rposition(|x| *x == v).unwrap();
            let comp: BTreeSet<String> = st.stack.drain(at..).map(String::from).collect();
            if comp.len() > 1 {
                st.comps.push(comp);
            }
        }
    }
    let mut st = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        comps: Vec::new(),
    };
    for v in graph.keys() {
        if !st.index.contains_key(v.as_str()) {
            visit(&mut st, v);
        }
    }
    st.comps
}

/// The shortest way from the component's first node back to itself.
pub fn shortest_circle(
    graph: &BTreeMap<String, BTreeSet<String>>,
    comp: &BTreeSet<String>,
) -> Vec<String> {
    let start = comp.iter().next().unwrap();
    let mut came_from: BTreeMap<&String, &String> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for w in graph[v].iter().filter(|w| comp.contains(*w)) {
            if w == start {
                let mut path = vec![start.clone()];
                let mut at = v;
                while at != start {
                    path.push(at.clone());
                    at = came_from[at];
                }
                path.push(start.clone());
                path.reverse();
                return path;
            }
            if !came_from.contains_key(w) {
                came_from.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    comp.iter().cloned().collect()
}
