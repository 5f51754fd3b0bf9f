//! The reference made from the command line's own definitions: shell
//! completions that load and complete, manual pages that render without a
//! warning and hold every command and flag `--help` shows, and the
//! colour conventions of `compare` (`--color`, `NO_COLOR`, terminals).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command as StdCommand;

use predicates::prelude::*;

mod common;
use common::{cauda, refused};

/// Whether `program` runs here (`program --version`).
fn has(program: &str) -> bool {
    StdCommand::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Skips (returns true) when `program` is missing, unless CI requires it.
fn skip_without(program: &str, require: &str) -> bool {
    if has(program) {
        return false;
    }
    assert!(
        std::env::var_os(require).is_none(),
        "{require} is set but {program} is missing"
    );
    eprintln!("skipped: {program} is not installed (set {require}=1 to make this a failure)");
    true
}

fn stdout_of(args: &[&str]) -> String {
    let out = cauda().args(args).output().unwrap();
    assert!(out.status.success(), "cauda {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// What bash's completion offers for `words`, the last one being completed.
fn bash_completes(script: &Path, words: &[&str]) -> Vec<String> {
    let line = words.join(" ");
    let program = format!(
        r#"source "$1"
COMP_WORDS=({line}); COMP_CWORD={cword}; COMP_LINE="{line}"; COMP_POINT=${{#COMP_LINE}}
_cauda cauda "{last}" "{prev}"
printf '%s\n' "${{COMPREPLY[@]}}""#,
        cword = words.len() - 1,
        last = words[words.len() - 1],
        prev = words[words.len() - 2],
    );
    let out = StdCommand::new("bash")
        .args(["--norc", "--noprofile", "-c", &program, "bash"])
        .arg(script)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_bash_completion_loads_and_completes_commands_and_flags() {
    if skip_without("bash", "CAUDA_REQUIRE_BASH") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("cauda.bash");
    std::fs::write(&script, stdout_of(&["completions", "bash"])).unwrap();
    assert_eq!(bash_completes(&script, &["cauda", "ti"]), ["timer"]);
    let flags = bash_completes(&script, &["cauda", "disk", "--r"]);
    for flag in ["--rate", "--runtime", "--rw"] {
        assert!(flags.iter().any(|f| f == flag), "{flag} not in {flags:?}");
    }
    assert!(flags.iter().all(|f| f.starts_with("--r")), "{flags:?}");
    let host = bash_completes(&script, &["cauda", "host", "a"]);
    assert_eq!(host, ["audit"]);
}

/// The top-level commands, as `cauda --help` lists them.
fn commands_in_help(help: &str) -> Vec<String> {
    let Some((_, rest)) = help.split_once("Commands:\n") else {
        return Vec::new();
    };
    rest.lines()
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// The long flags `--help` defines (option lines, not mentions in text).
fn flags_in_help(help: &str) -> BTreeSet<String> {
    help.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .filter_map(|l| {
            l.split([' ', ',', '=', '<', '['])
                .find(|w| w.starts_with("--") && w.len() > 2)
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn every_shell_script_names_every_command() {
    let top = commands_in_help(&stdout_of(&["--help"]));
    assert!(top.len() >= 16, "{top:?}");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout_of(&["completions", shell]);
        for command in &top {
            assert!(script.contains(command.as_str()), "{shell}: no {command}");
        }
        assert!(
            script.contains("hold-latency"),
            "{shell}: no host's subcommands"
        );
    }
    for (shell, check) in [("zsh", "-n"), ("fish", "--no-execute")] {
        if !has(shell) {
            eprintln!("{shell} is not installed: its script is not parsed");
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("script");
        std::fs::write(&file, stdout_of(&["completions", shell])).unwrap();
        let out = StdCommand::new(shell)
            .arg(check)
            .arg(&file)
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell} {check}: {out:?}");
        if shell == "fish" {
            let program = format!("source {}; complete -C 'cauda disk --r'", file.display());
            let out = StdCommand::new("fish")
                .args(["-c", &program])
                .output()
                .unwrap();
            let offered = String::from_utf8_lossy(&out.stdout);
            assert!(
                offered.lines().any(|l| l.starts_with("--rate\t")),
                "{offered}"
            );
        }
    }
}

#[test]
fn an_unknown_shell_is_refused_naming_the_supported_ones() {
    let out = cauda().args(["completions", "tcsh"]).output().unwrap();
    let stderr = common::ended(&out, 2, &["tcsh", "bash", "zsh", "fish"]);
    assert!(out.stdout.is_empty(), "{stderr}");
}

/// The text of a roff page as a reader sees the words: hyphens unescaped,
/// font changes dropped.
fn roff_words(page: &str) -> String {
    page.replace("\\-", "-")
        .replace("\\fB", "")
        .replace("\\fI", "")
        .replace("\\fR", "")
        .replace("\\fP", "")
}

/// Every command path below `cauda` (`["host", "audit"]`), by `--help`.
fn command_paths(path: Vec<String>, all: &mut Vec<Vec<String>>) {
    let mut args = path.clone();
    args.push("--help".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let help = stdout_of(&args);
    all.push(path.clone());
    for command in commands_in_help(&help) {
        let mut sub = path.clone();
        sub.push(command);
        command_paths(sub, all);
    }
}

#[test]
fn every_command_and_flag_of_help_is_in_its_manual_page() {
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("man1");
    cauda()
        .args(["man", "--dir"])
        .arg(&pages)
        .assert()
        .success()
        .stderr(predicate::str::contains("manual pages into"));
    let mut paths = Vec::new();
    command_paths(Vec::new(), &mut paths);
    assert!(paths.len() >= 21, "{paths:?}");
    let mut expected = BTreeSet::new();
    for path in &paths {
        let name = std::iter::once("cauda")
            .chain(path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("-");
        let file = pages.join(format!("{name}.1"));
        let page = roff_words(&std::fs::read_to_string(&file).unwrap_or_else(|e| {
            panic!("{}: {e}", file.display());
        }));
        assert!(page.contains(&format!(".TH {name} 1")), "{name}: title");
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let help = stdout_of(&args);
        for flag in flags_in_help(&help) {
            assert!(page.contains(&flag), "{name}.1 lacks {flag}");
        }
        for command in commands_in_help(&help) {
            assert!(
                page.contains(&format!("{name}-{command}")),
                "{name}.1 lacks {command}"
            );
        }
        expected.insert(format!("{name}.1"));
    }
    let written: BTreeSet<String> = std::fs::read_dir(&pages)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(written, expected);
    for name in [
        "cauda.1",
        "cauda-disk.1",
        "cauda-host-audit.1",
        "cauda-man.1",
    ] {
        assert!(written.contains(name), "{name}");
    }
    // The top page also says the exit codes.
    let top = std::fs::read_to_string(pages.join("cauda.1")).unwrap();
    assert!(
        top.contains("EXIT STATUS") && top.contains("NO_COLOR"),
        "{top}"
    );
}

#[test]
fn every_manual_page_renders_without_a_warning() {
    if skip_without("man", "CAUDA_REQUIRE_MAN") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    cauda()
        .args(["man", "--dir"])
        .arg(dir.path())
        .assert()
        .success();
    let mut pages = 0;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let page = entry.unwrap().path();
        let out = StdCommand::new("sh")
            .args([
                "-c",
                "MANWIDTH=80 man -l --warnings=w \"$1\" 2>&1 >/dev/null",
                "sh",
            ])
            .arg(&page)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && said.is_empty(),
            "{}: {said}",
            page.display()
        );
        // And it says something: the page's name in its NAME section.
        let text = StdCommand::new("man")
            .arg("-l")
            .arg(&page)
            .env("MANWIDTH", "80")
            .output()
            .unwrap();
        let stem = page.file_stem().unwrap().to_string_lossy().into_owned();
        assert!(
            String::from_utf8_lossy(&text.stdout).contains(&stem),
            "{stem}"
        );
        pages += 1;
    }
    assert!(pages >= 21, "{pages} pages");
}

#[test]
fn man_prints_one_page_and_names_the_pages_when_asked_for_another() {
    let top = stdout_of(&["man"]);
    assert!(top.starts_with(".\\\" Written by `cauda man`"), "{top}");
    assert!(top.contains(".TH cauda 1"), "{top}");
    let audit = stdout_of(&["man", "host", "audit"]);
    assert!(audit.contains(".TH cauda-host-audit 1"), "{audit}");
    refused(&["man", "host", "nosuch"], "the pages are lab, timer");
}

#[test]
fn man_never_writes_over_a_page_cauda_did_not_write() {
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("cauda-disk.1");
    std::fs::write(&theirs, ".TH cauda-disk 1 \"another cauda\"\n").unwrap();
    refused(
        &["man", "--dir", dir.path().to_str().unwrap()],
        "cauda-disk.1: the file exists and was not written by cauda",
    );
    // Nothing was written: the check comes before any page.
    assert!(!dir.path().join("cauda.1").exists());
    assert!(
        std::fs::read_to_string(&theirs)
            .unwrap()
            .contains("another cauda")
    );
    let again = |force: bool| {
        let mut command = cauda();
        command.args(["man", "--dir"]).arg(dir.path());
        if force {
            command.arg("--force");
        }
        command.assert().success();
    };
    again(true);
    assert!(
        !std::fs::read_to_string(&theirs)
            .unwrap()
            .contains("another cauda")
    );
    // cauda's own pages are written again without --force.
    again(false);
    // A file where the directory should be is refused.
    refused(
        &["man", "--dir", theirs.to_str().unwrap()],
        "is not a directory",
    );
    refused(&["man", "--force"], "--dir");
    // A link planted at a page's name is never written through, --force or not.
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    std::fs::remove_file(dir.path().join("cauda-timer.1")).unwrap();
    std::os::unix::fs::symlink(&victim, dir.path().join("cauda-timer.1")).unwrap();
    refused(
        &["man", "--dir", dir.path().to_str().unwrap(), "--force"],
        "cauda-timer.1: is a symbolic link",
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
}

/// Two inputs whose comparison has a WORSE verdict.
fn worse_pair(dir: &Path) -> (String, String) {
    let write = |name: &str, base: u32| {
        let path = dir.join(name);
        let text: String = (0..2000).map(|i| format!("{}\n", base + i % 50)).collect();
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    (write("fast.txt", 100), write("slow.txt", 300))
}

const ESC: &str = "\x1b[";

#[test]
fn compare_colours_its_verdicts_only_when_asked_or_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let (fast, slow) = worse_pair(dir.path());
    let with = |color: &str, no_color: Option<&str>| {
        let mut command = cauda();
        command.args(["compare", &fast, &slow, "--color", color]);
        if let Some(v) = no_color {
            command.env("NO_COLOR", v);
        } else {
            command.env_remove("NO_COLOR");
        }
        String::from_utf8(command.output().unwrap().stdout).unwrap()
    };
    let always = with("always", Some("1"));
    assert!(
        always.contains(&format!("{ESC}1;31mWORSE{ESC}0m")),
        "{always}"
    );
    let plain = with("auto", None);
    assert!(plain.contains("WORSE") && !plain.contains(ESC), "{plain}");
    assert!(!with("never", None).contains(ESC));
    assert!(!with("auto", Some("1")).contains(ESC));
    // The columns are the same with and without colour.
    assert_eq!(
        always
            .replace(&format!("{ESC}1;31m"), "")
            .replace(&format!("{ESC}0m"), ""),
        plain
    );
    refused(
        &["compare", &fast, &slow, "--color", "sometimes"],
        "auto, always, never",
    );
}

#[test]
fn compare_colours_a_terminal_unless_no_color_is_set() {
    if skip_without("script", "CAUDA_REQUIRE_SCRIPT") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (fast, slow) = worse_pair(dir.path());
    let binary = assert_cmd::cargo::cargo_bin("cauda");
    let on_a_terminal = |no_color: &str| {
        let line = format!("{} compare {fast} {slow}", binary.display());
        let out = StdCommand::new("script")
            .args(["-qec", &line, "/dev/null"])
            .env("NO_COLOR", no_color)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(on_a_terminal("").contains(&format!("{ESC}1;31mWORSE")));
    let without = on_a_terminal("1");
    assert!(
        without.contains("WORSE") && !without.contains(ESC),
        "{without}"
    );
}

#[test]
fn progress_is_drawn_only_on_a_terminal() {
    if skip_without("script", "CAUDA_REQUIRE_SCRIPT") {
        return;
    }
    // The shortest lab: the audit and hiccup steps (about 3 s).
    let dir = tempfile::tempdir().unwrap();
    let args = ["lab", "--quick", "--skip", "timer,disk,net", "--dir"];
    let out = cauda()
        .args(args)
        .arg(dir.path())
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[2/2] hiccup"),
        "one line per step: {stderr}"
    );
    assert!(
        !stderr.contains('\x1b') && !out.stdout.contains(&0x1b),
        "{stderr}"
    );
    let line = format!(
        "{} {} {}",
        assert_cmd::cargo::cargo_bin("cauda").display(),
        args.join(" "),
        dir.path().display()
    );
    let on_a_terminal = StdCommand::new("script")
        .args(["-qec", &line, "/dev/null"])
        .output()
        .unwrap();
    assert!(on_a_terminal.status.success(), "{on_a_terminal:?}");
    let text = String::from_utf8_lossy(&on_a_terminal.stdout);
    assert!(text.contains("\r\x1b[2K"), "no live line: {text}");
}

#[test]
fn help_and_usage_errors_on_a_terminal_follow_no_color() {
    if skip_without("script", "CAUDA_REQUIRE_SCRIPT") {
        return;
    }
    // clap styles --help and its errors on a terminal; NO_COLOR turns
    // that off as it does compare's verdicts.
    let binary = assert_cmd::cargo::cargo_bin("cauda");
    for args in ["--help", "compare --help", "lab --no-such-flag"] {
        let line = format!("{} {args}", binary.display());
        let out = StdCommand::new("script")
            .args(["-qc", &line, "/dev/null"])
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Usage"), "{args}: {text}");
        assert!(!text.contains('\x1b'), "{args}: {text}");
    }
}
