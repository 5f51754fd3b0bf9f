//! `cauda man`: the manual pages, made from the same clap definitions as
//! `--help` (clap_mangen), one page per command and subcommand: `cauda.1`,
//! `cauda-disk.1`, `cauda-host-audit.1` … Without `--dir` it prints one
//! page to stdout (`cauda.1`, or the named command's); with `--dir` it
//! writes every page into a directory, never over a file cauda did not
//! write unless `--force` (each page's first line is [`MAN_MARK`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

use crate::error::{Outcome, input_error};
use crate::output::{self, MAN_MARK, OwnKind};

/// `cauda man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print, e.g. `host audit` for
    /// cauda-host-audit(1) [default: cauda itself, cauda(1)].
    #[arg(value_name = "COMMAND", conflicts_with = "dir")]
    pub command: Vec<String>,
    /// Write every page (cauda.1, cauda-disk.1, cauda-host-audit.1, …)
    /// into DIR, created if missing, instead of printing one; e.g.
    /// ~/.local/share/man/man1, where man finds them.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// With --dir: overwrite pages there that cauda did not write.
    #[arg(long, requires = "dir")]
    pub force: bool,
}

impl ManArgs {
    /// Prints one page or writes them all, of `top` (cauda's whole command
    /// line, which `lib.rs` hands in: this file is one of its commands).
    pub fn run(&self, top: clap::Command) -> Result<Outcome> {
        match &self.dir {
            Some(dir) => {
                let written = write_pages(top, dir, self.force)?;
                eprintln!("wrote {written} manual pages into {}", dir.display());
            }
            None => {
                let page = page_of(top, &self.command)?;
                let mut out = std::io::stdout().lock();
                out.write_all(&page)?;
                out.flush()?;
            }
        }
        Ok(Outcome::Done)
    }
}

/// Every command's page: its file name without `.1` (`cauda-host-audit`)
/// and its clap definition, the top command first.
pub fn commands(top: clap::Command) -> Vec<(String, clap::Command)> {
    fn collect(command: &clap::Command, pages: &mut Vec<(String, clap::Command)>) {
        let name = command
            .get_display_name()
            .unwrap_or(command.get_name())
            .to_string();
        pages.push((name, command.clone()));
        for sub in command.get_subcommands() {
            if sub.get_name() != "help" && !sub.is_hide_set() {
                collect(sub, pages);
            }
        }
    }
    // `cauda help` has no page, so the lists of subcommands leave it out.
    fn without_help(command: clap::Command) -> clap::Command {
        command
            .disable_help_subcommand(true)
            .mut_subcommands(without_help)
    }
    let mut top = without_help(top);
    top.build();
    let mut pages = Vec::new();
    collect(&top, &mut pages);
    pages
}

/// The page of `cauda WORDS…` (`cauda.1` for none).
fn page_of(top: clap::Command, words: &[String]) -> Result<Vec<u8>> {
    let name = std::iter::once("cauda")
        .chain(words.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("-");
    let commands = commands(top);
    match commands.iter().find(|(n, _)| *n == name) {
        Some((_, command)) => render(command, name == "cauda"),
        None => Err(input_error(format!(
            "cauda man {}: no such command; the pages are {}",
            words.join(" "),
            commands
                .iter()
                .map(|(n, _)| n.trim_start_matches("cauda").trim_start_matches('-'))
                .filter(|n| !n.is_empty())
                .map(|n| n.replace('-', " "))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// One page as roff, marked as cauda's, not hyphenated (a flag broken
/// over two lines cannot be searched for); the top page's NAME line is
/// its tagline, and it also says the exit codes and the environment.
fn render(command: &clap::Command, top: bool) -> Result<Vec<u8>> {
    let mut command = command.clone();
    if top {
        command = command.about("a tail-latency lab for Linux");
    }
    let mut roff = Vec::new();
    clap_mangen::Man::new(command).render(&mut roff)?;
    let roff = String::from_utf8(roff)?;
    let mut page = format!("{MAN_MARK} {}\n", env!("CARGO_PKG_VERSION"));
    for line in roff.lines() {
        page.push_str(line);
        page.push('\n');
        if line.starts_with(".TH ") {
            page.push_str(".nh\n");
        }
    }
    if top {
        page.push_str(TOP_SECTIONS);
    }
    Ok(page.into_bytes())
}

/// What `cauda.1` says beyond `--help`: exit codes and environment.
const TOP_SECTIONS: &str = r#".SH "EXIT STATUS"
.TP
\fB0\fR
Success (a closed pipe on stdout is success too).
.TP
\fB1\fR
The measurement or operation failed, or \fBcompare \-\-fail\-if\-worse\fR found a regression.
.TP
\fB2\fR
Bad usage or bad input: the message names the problem and the fix.
.TP
\fB130\fR
Interrupted (Ctrl\-C or SIGTERM); what was measured is saved.
.SH ENVIRONMENT
.TP
\fBNO_COLOR\fR
When set to a non\-empty value, \fBcauda compare\fR prints no colour unless given \fB\-\-color always\fR (https://no\-color.org).
"#;

/// Writes every page into `dir` (made when missing): each checked first,
/// so a page in the way stops the command before anything is written.
fn write_pages(top: clap::Command, dir: &Path, force: bool) -> Result<usize> {
    if dir.exists() && !dir.is_dir() {
        return Err(input_error(format!(
            "--dir {}: is not a directory; give the directory for the pages",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        input_error(format!(
            "--dir {}: cannot create the directory ({e})",
            dir.display()
        ))
    })?;
    let mut pages = Vec::new();
    for (name, command) in commands(top) {
        let path = dir.join(format!("{name}.1"));
        let checked = output::check_writable(&path, OwnKind::ManPage, force, "--dir")?;
        pages.push((path, checked, render(&command, name == "cauda")?));
    }
    for (path, checked, page) in &pages {
        output::write_checked(path, *checked, page)?;
    }
    Ok(pages.len())
}
