//! The documentation's shape and its agreement with `--help` (issue 31,
//! "Documentation in layers"), guarded in `cargo test`:
//! - `README.md` holds at most 15 KB (the guide is `docs/`);
//! - no line of a Markdown table (a line starting with `|`) in `README.md`,
//!   `docs/*.md` or `bench/RESULTS.md` is over 300 characters;
//! - every subcommand (recursively, `host audit` included) and every long
//!   flag that the built binary's `cauda … --help` lists is mentioned
//!   somewhere in `docs/*.md` (a command as `cauda host audit`, a flag as
//!   `--flag` not followed by more of a flag's name);
//! - every relative link in `README.md` and `docs/*.md` names a file or
//!   directory that exists.
//!
//! Each test lists every offender, with where it is and what to do.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const README_MAX_BYTES: u64 = 15_000;
const TABLE_LINE_MAX_CHARS: usize = 300;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `docs/*.md`, sorted.
fn doc_pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    assert!(!pages.is_empty(), "docs/ holds no .md page");
    pages
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn readme_is_at_most_15_kb() {
    let size = std::fs::metadata(root().join("README.md"))
        .expect("README.md")
        .len();
    assert!(
        size <= README_MAX_BYTES,
        "README.md is {size} bytes, over {README_MAX_BYTES}: move detail to a page of docs/ and link to it"
    );
}

#[test]
fn no_table_line_is_over_300_characters() {
    let mut files = vec![root().join("README.md"), root().join("bench/RESULTS.md")];
    files.extend(doc_pages());
    let mut offenders = Vec::new();
    for file in &files {
        for (i, line) in read(file).lines().enumerate() {
            let chars = line.chars().count();
            if line.starts_with('|') && chars > TABLE_LINE_MAX_CHARS {
                offenders.push(format!("{}:{}: {chars} characters", shown(file), i + 1));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "table lines over {TABLE_LINE_MAX_CHARS} characters (split the row, or move the detail below the table):\n{}",
        offenders.join("\n")
    );
}

/// One command's help: its subcommands and its long flags.
#[derive(Debug, Default, PartialEq)]
struct Help {
    subcommands: Vec<String>,
    flags: BTreeSet<String>,
}

/// Reads clap's long help (`--help`): subcommand names are the lines of the
/// `Commands:` section indented by exactly two spaces (`help` left out);
/// flags are option lines (`  -o, --output <FILE>`, `      --dir <PATH>`),
/// indented by at most six spaces, where descriptions are indented by ten.
fn parse_help(text: &str) -> Help {
    let mut help = Help::default();
    let mut in_commands = false;
    for line in text.lines() {
        if !line.is_empty() && !line.starts_with(' ') {
            in_commands = line.trim_end() == "Commands:";
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let body = line.trim_start();
        if in_commands && indent == 2 {
            let name = body.split_whitespace().next().unwrap_or("");
            if !name.is_empty() && name != "help" {
                help.subcommands.push(name.to_string());
            }
            continue;
        }
        if indent <= 6 {
            // `--dir <PATH>` or `-o, --output <FILE>`
            let rest = body.strip_prefix("--").or_else(|| {
                body.strip_prefix('-')
                    .and_then(|r| r.split_once(", --"))
                    .map(|(_, long)| long)
            });
            if let Some(long) = rest {
                let name: String = long
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                if !name.is_empty() {
                    help.flags.insert(format!("--{name}"));
                }
            }
        }
    }
    help
}

fn help_of(path: &[String]) -> Help {
    let out = Command::new(env!("CARGO_BIN_EXE_cauda"))
        .args(path)
        .arg("--help")
        .output()
        .expect("run cauda --help");
    assert!(
        out.status.success(),
        "cauda {} --help failed: {out:?}",
        path.join(" ")
    );
    parse_help(&String::from_utf8(out.stdout).expect("help is UTF-8"))
}

/// Every command path (`[]`, `["lab"]`, `["host", "audit"]`, …) with its help.
fn every_command() -> Vec<(Vec<String>, Help)> {
    let mut done = Vec::new();
    let mut todo = vec![Vec::<String>::new()];
    while let Some(path) = todo.pop() {
        let help = help_of(&path);
        for sub in &help.subcommands {
            let mut child = path.clone();
            child.push(sub.clone());
            todo.push(child);
        }
        done.push((path, help));
    }
    done
}

/// `--flag` occurs in `text` not followed by a character of a longer flag's
/// name (so `--force-destroy-data` does not mention `--force`).
fn mentions_flag(text: &str, flag: &str) -> bool {
    text.match_indices(flag).any(|(at, _)| {
        let next = text[at + flag.len()..].chars().next();
        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

/// What the help lists that `docs` does not mention, as lines to print.
fn missing_from(docs: &str, commands: &[(Vec<String>, Help)]) -> Vec<String> {
    let mut missing = Vec::new();
    for (path, help) in commands {
        let shown = if path.is_empty() {
            "cauda".to_string()
        } else {
            format!("cauda {}", path.join(" "))
        };
        if !path.is_empty() && !docs.contains(&shown) {
            missing.push(format!("command `{shown}`"));
        }
        for flag in &help.flags {
            if !mentions_flag(docs, flag) {
                missing.push(format!("flag {flag} (of `{shown}`)"));
            }
        }
    }
    missing
}

#[test]
fn every_command_and_flag_of_help_is_in_docs() {
    let docs: String = doc_pages()
        .iter()
        .map(|p| read(p))
        .collect::<Vec<_>>()
        .join("\n");
    let commands = every_command();
    assert!(
        commands.len() > 10,
        "too few commands found in --help: {commands:?}"
    );
    let missing = missing_from(&docs, &commands);
    assert!(
        missing.is_empty(),
        "in `cauda … --help` but not in docs/*.md (document each on its command's page):\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_help_reader_finds_commands_and_flags() {
    let root = "Usage: cauda <COMMAND>\n\nCommands:\n  lab      Run the suite\n           wrapped --not-a-flag\n  host     The host\n  help     Print this message\n\nOptions:\n  -h, --help\n          Print help\n";
    let help = parse_help(root);
    assert_eq!(help.subcommands, ["lab", "host"]);
    assert_eq!(help.flags.iter().collect::<Vec<_>>(), ["--help"]);
    let lab = "Options:\n      --dir <PATH>\n          Where, see --quick\n      --quick\n  -o, --output <FILE>\n          x\n";
    let help = parse_help(lab);
    assert!(help.subcommands.is_empty());
    assert_eq!(
        help.flags.iter().collect::<Vec<_>>(),
        ["--dir", "--output", "--quick"]
    );
    // A flag named only as part of a longer one, and a command not named,
    // are both reported.
    let commands = vec![(vec!["lab".to_string()], help)];
    let missing = missing_from("`cauda lab --dir-x`, --quick, -o/--output", &commands);
    assert_eq!(missing, ["flag --dir (of `cauda lab`)"]);
    let missing = missing_from("--dir --quick --output", &commands);
    assert_eq!(missing, ["command `cauda lab`"]);
}

/// Relative link targets in Markdown outside fenced code: `[text](target)`.
fn relative_links(text: &str) -> Vec<(usize, String)> {
    let mut links = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            let target = after[..end].trim();
            let external = target.contains("://") || target.starts_with("mailto:");
            if !external && !target.starts_with('#') && !target.is_empty() {
                links.push((i + 1, target.to_string()));
            }
            rest = &after[end..];
        }
    }
    links
}

#[test]
fn every_relative_link_points_to_a_file_that_exists() {
    let mut files = vec![root().join("README.md")];
    files.extend(doc_pages());
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let dir = file.parent().expect("a file has a folder");
        for (line, target) in relative_links(&read(file)) {
            let path = target.split('#').next().unwrap_or("");
            checked += 1;
            if !dir.join(path).exists() {
                broken.push(format!("{}:{line}: {target}", shown(file)));
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} links found: is the reader broken?"
    );
    assert!(
        broken.is_empty(),
        "links to files that do not exist (paths are relative to the page):\n{}",
        broken.join("\n")
    );
}
