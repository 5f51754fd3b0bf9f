//! The guards of the guards: each checker on a tiny tree, clean and then
//! with a planted offender.

use std::fs;

use crate::circles::{folder_cycles, module_cycles};
use crate::layers::layer_offenders;
use crate::lengths::{long_files, long_functions, missing_module_docs};
use crate::source::{Source, read_tree, strip_code};
use crate::{FILE_LIMIT, FN_LIMIT};

/// A temporary crate with these files under `src/`.
fn tree(files: &[(&str, &str)]) -> Vec<Source> {
    let dir = tempfile::tempdir().expect("temp dir");
    for (rel, text) in files {
        let path = dir.path().join("src").join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    read_tree(&dir.path().join("src"))
}

const LAYERS: &str = "# ground first\nunits\nmodel  # data\nlib main\n";

fn clean() -> Vec<(&'static str, &'static str)> {
    vec![
        ("lib.rs", "//! Root.\npub mod model;\npub mod units;\n"),
        (
            "main.rs",
            "//! Binary.\nfn main() { cauda::model::run(); }\n",
        ),
        ("units.rs", "//! Units.\npub fn ns() {}\n"),
        (
            "model/mod.rs",
            "//! Data.\nmod a;\nmod b;\nuse crate::units;\n",
        ),
        (
            "model/a.rs",
            "//! A.\nuse super::b::B;\n#[cfg(test)]\nmod tests { use std::fs;

use crate::circles::{folder_cycles, module_cycles};
use crate::layers::layer_offenders;
use crate::lengths::{long_files, long_functions, missing_module_docs};
use crate::source::{read_tree, strip_code, Source};
use crate::{FILE_LIMIT, FN_LIMIT}; }\n",
        ),
        ("model/b.rs", "//! B.\npub struct B;\n"),
    ]
}

fn with<'a>(extra: &[(&'a str, &'a str)]) -> Vec<Source> {
    let mut files: Vec<(&'a str, &'a str)> = clean();
    for (rel, text) in extra {
        files.retain(|(r, _)| r != rel);
        files.push((rel, text));
    }
    tree(&files)
}

#[test]
fn stripping_blanks_comments_and_literals_but_keeps_lines() {
    let code = strip_code("a /* x\n/* y */ */ b \"crate::q\" r#\"{\"#\n'{' c // d\n");
    assert_eq!(code.lines().count(), 3);
    assert!(!code.contains(['x', 'y', 'q', '{', 'd']), "{code:?}");
    assert!(code.contains('a') && code.contains('b') && code.contains('c'));
}

#[test]
fn layers_pass_on_a_clean_tree_and_count_each_use_upward() {
    assert!(layer_offenders(&tree(&clean()), LAYERS).is_empty());
    let bad = with(&[(
        "units.rs",
        "//! U.\nuse crate::model;\nuse crate::{lib, model::X};\n",
    )]);
    let found = layer_offenders(&bad, LAYERS);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert!(
        found[0].starts_with("src/units.rs:2 units uses model"),
        "{found:#?}"
    );
    let unplaced = with(&[("extra.rs", "//! E.\n")]);
    assert!(layer_offenders(&unplaced, LAYERS)[0].contains("`extra` is in no layer"));
}

#[test]
fn a_circle_between_modules_is_found() {
    assert!(module_cycles(&tree(&clean())).is_empty());
    let bad = with(&[("units.rs", "//! U.\nfn f() { crate::model::g() }\n")]);
    let found = module_cycles(&bad);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].contains("model → units → model"), "{found:#?}");
}

#[test]
fn a_circle_inside_a_folder_is_found() {
    assert_eq!(folder_cycles(&tree(&clean())), Vec::<String>::new());
    let three = with(&[
        ("model/b.rs", "//! B.\nuse crate::model::c::C;\n"),
        ("model/c/mod.rs", "//! C.\nmod d;\n"),
        ("model/c/d.rs", "//! D.\nfn f() { super::super::a::g() }\n"),
    ]);
    let found = folder_cycles(&three);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("src/model/: a.rs → b.rs → c/ → a.rs"),
        "{found:#?}"
    );
    assert!(
        found[0].contains("c/ → a.rs  src/model/c/d.rs:2"),
        "{found:#?}"
    );
}

#[test]
fn a_visibility_or_a_second_super_is_no_reference() {
    let restricted = with(&[
        ("model/mod.rs", "//! Data.\nmod b;\npub use b::B;\n"),
        (
            "model/b.rs",
            "//! B.\npub(in crate::model) fn f() {}\npub(in super) fn g() { super::super::units::ns() }\npub struct B;\n",
        ),
    ]);
    assert_eq!(folder_cycles(&restricted), Vec::<String>::new());
    let used = with(&[
        (
            "model/mod.rs",
            "//! Data.\nmod b;\npub use b::B;\npub struct M;\n",
        ),
        ("model/b.rs", "//! B.\npub struct B(crate::model::M);\n"),
    ]);
    assert_eq!(folder_cycles(&used).len(), 1);
}

#[test]
fn test_code_and_inline_modules_make_no_circle() {
    let b = "//! B.\npub struct B;\nmod inner {\n    use super::B;\n}\n\
             #[cfg(test)]\nmod tests {\n    use crate::model::a::A;\n}\n";
    assert_eq!(
        folder_cycles(&with(&[("model/b.rs", b)])),
        Vec::<String>::new()
    );
    let live = b.replace("#[cfg(test)]\n", "");
    assert_eq!(folder_cycles(&with(&[("model/b.rs", &live)])).len(), 1);
}

#[test]
fn a_child_and_its_parent_using_each_other_is_a_circle() {
    let knot = with(&[
        (
            "model/mod.rs",
            "//! Data.\nmod a;\nmod b;\npub use b::B;\npub struct M;\n",
        ),
        ("model/b.rs", "//! B.\npub struct B(super::M);\n"),
    ]);
    let found = folder_cycles(&knot);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("src/model/: mod.rs → b.rs → mod.rs"),
        "{found:#?}"
    );
    let root = with(&[
        ("units.rs", "//! U.\nuse crate::Root;\n"),
        ("lib.rs", "//! R.\npub use units::ns;\n"),
    ]);
    assert!(folder_cycles(&root)[0].starts_with("src/: lib.rs → units.rs → lib.rs"));
}

#[test]
fn files_over_the_limit_are_found() {
    let at_limit = format!("//! Long.\n{}", "\n".repeat(FILE_LIMIT - 1));
    let over = format!("{at_limit}\n");
    assert!(long_files(&with(&[("units.rs", &at_limit)])).is_empty());
    let found = long_files(&with(&[("units.rs", &over)]));
    assert!(
        found[0].starts_with("src/units.rs has 601 lines"),
        "{found:#?}"
    );
}

/// A function `name` of `lines` lines whose body holds braces in a
/// string, a char and a comment.
fn function(name: &str, lines: usize) -> String {
    let body = "    let _ = (\"}\", '}'); // }\n".repeat(lines - 2);
    format!("fn {name}() {{\n{body}}}\n")
}

#[test]
fn functions_over_the_limit_are_found_outside_tests() {
    let ok = format!("//! F.\n{}", function("short", FN_LIMIT));
    assert!(long_functions(&with(&[("units.rs", &ok)]), &[]).is_empty());
    let tests = format!(
        "//! F.\n#[cfg(test)]\nmod tests {{\n{}}}\n",
        function("long", 200)
    );
    assert!(long_functions(&with(&[("units.rs", &tests)]), &[]).is_empty());
    let long = format!(
        "//! F.\nfn g(x: [u8; 2]);\n{}",
        function("long", FN_LIMIT + 1)
    );
    let found = long_functions(&with(&[("units.rs", &long)]), &[]);
    assert_eq!(
        found,
        [
            "src/units.rs:3 fn long is 121 lines (limit 120): split it into named \
                        stages, each a type in and a type out"
        ]
    );
}

#[test]
fn an_exception_must_be_needed() {
    let long = format!("//! F.\n{}", function("long", FN_LIMIT + 1));
    let excused = [("units.rs", "long", "a reason")];
    assert!(long_functions(&with(&[("units.rs", &long)]), &excused).is_empty());
    let found = long_functions(&tree(&clean()), &excused);
    assert!(found[0].contains("no longer over 120 lines"), "{found:#?}");
}

#[test]
fn a_file_without_a_module_comment_is_found() {
    assert!(missing_module_docs(&tree(&clean())).is_empty());
    let found = missing_module_docs(&with(&[(
        "units.rs",
        "/// Not a module comment.\nfn f() {}\n",
    )]));
    assert_eq!(found.len(), 1);
    assert!(found[0].starts_with("src/units.rs:1"));
}
