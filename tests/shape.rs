//! The code's shape, guarded in `cargo test` so that CI fails where it slips
//! (STYLE.md: "Guards for these shapes live in the repo's tests"; issue 29).
//!
//! Six checks, each a test that lists every offender with its place and fix:
//! - **Layers**: every reference from one top-level module to another
//!   (`use crate::x`, `crate::x::` in code, `super::` that climbs out of a
//!   module) goes to the module's own layer of `layers.txt` or a lower one.
//!   This is `../shared/tools/layers.py` ported line for line, so the two
//!   count the same; a module missing from `layers.txt` is an offender too.
//! - **No circle between top-level modules** (as layers.py reports them).
//! - **No circle inside a folder**: the nodes of a folder are its files and
//!   subfolders (a subfolder counts as one node, whatever file inside it
//!   refers) plus the file that defines the folder's own module (`mod.rs`,
//!   `lib.rs`, or `x.rs` beside `x/`). An edge is a path in code or in a
//!   `use` (`super::x`, `self::x`, `crate::a::x`, or a bare `x::` naming a
//!   child module); declaring a child (`mod x;`) is not an edge. A child that
//!   uses an item its parent's `mod.rs` defines (or re-exports), while that
//!   `mod.rs` uses the child, is a circle: that is the common knot, and it
//!   is reported like any other. Paths inside an inline module resolve from
//!   it, and `#[cfg(test)]` items are left out: a test may reach a sibling
//!   for a fixture without knotting the code. (The layers and the circles
//!   between top-level modules count test code, as layers.py does.)
//! - **No file in `src/` over 600 lines.**
//! - **No function over 120 lines** outside `#[cfg(test)]` items, from the
//!   `fn` line to the closing brace; [`LONG_FN_EXCEPTIONS`] names the few
//!   allowed, and an exception no longer needed is itself an offender.
//! - **Every `.rs` file opens with a `//!` comment** saying what it is.
//!
//! Comments and string/char literals (raw ones too) are blanked before any
//! scan, keeping line numbers. The scanners live in `tests/shape/`; its
//! `guards.rs` runs each checker on tiny trees, clean and with a planted
//! offender, so the guards are tested too.

#[path = "shape/circles.rs"]
mod circles;
#[path = "shape/guards.rs"]
mod guards;
#[path = "shape/layers.rs"]
mod layers;
#[path = "shape/lengths.rs"]
mod lengths;
#[path = "shape/scan.rs"]
mod scan;
#[path = "shape/source.rs"]
mod source;

use std::fs;
use std::path::Path;
use std::sync::OnceLock;

use circles::{folder_cycles, module_cycles};
use layers::layer_offenders;
use lengths::{long_files, long_functions, missing_module_docs};
use source::{Source, read_tree};

/// Functions allowed past [`FN_LIMIT`]: (file under `src/`, fn name, reason).
/// Keep it short and true, and list each in ARCHITECTURE.md with its reason.
const LONG_FN_EXCEPTIONS: &[(&str, &str, &str)] = &[];
/// The most lines a file in `src/` may have.
const FILE_LIMIT: usize = 600;
/// The most lines a function outside tests may have.
const FN_LIMIT: usize = 120;

// ---------------------------------------------------------------- the checks

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// This repository's `src/`, read once for all the checks.
fn this_tree() -> &'static [Source] {
    static TREE: OnceLock<Vec<Source>> = OnceLock::new();
    TREE.get_or_init(|| read_tree(&repo().join("src")))
}

#[test]
fn layers_hold() {
    let spec = fs::read_to_string(repo().join("layers.txt")).expect("layers.txt");
    verdict(
        "use(s) against layers.txt",
        layer_offenders(this_tree(), &spec),
    );
}

#[test]
fn no_circle_between_top_level_modules() {
    verdict(
        "circle(s) between top-level modules",
        module_cycles(this_tree()),
    );
}

#[test]
fn no_circle_inside_a_folder() {
    verdict("circle(s) inside a folder", folder_cycles(this_tree()));
}

#[test]
fn no_file_over_the_limit() {
    verdict("file(s) too long", long_files(this_tree()));
}

#[test]
fn no_function_over_the_limit() {
    verdict(
        "function(s) too long",
        long_functions(this_tree(), LONG_FN_EXCEPTIONS),
    );
}

#[test]
fn every_file_opens_with_a_module_comment() {
    verdict(
        "file(s) without a `//!` opening",
        missing_module_docs(this_tree()),
    );
}

/// Fails with every offender, one a line.
fn verdict(what: &str, offenders: Vec<String>) {
    if !offenders.is_empty() {
        panic!("{} {what}:\n  {}", offenders.len(), offenders.join("\n  "));
    }
}
