//! Colour on a terminal, by the conventions users expect: `--color
//! auto|always|never`, and under `auto` no colour when stdout is not a
//! terminal or `NO_COLOR` is set to anything but the empty string
//! (<https://no-color.org>: a flag given on the command line overrides it).

use std::ffi::OsStr;
use std::io::IsTerminal;

/// When to colour what is printed (`--color`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset or empty.
    #[default]
    Auto,
    /// Always colour, even into a pipe or a file, whatever `NO_COLOR` says.
    Always,
    /// Never colour.
    Never,
}

impl ColorChoice {
    /// Whether to colour, given whether the output is a terminal and the
    /// value of `NO_COLOR`.
    pub fn enabled(self, is_terminal: bool, no_color: Option<&OsStr>) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => is_terminal && no_color.is_none_or(OsStr::is_empty),
        }
    }

    /// Whether to colour what goes to this process's stdout.
    pub fn for_stdout(self) -> bool {
        self.enabled(
            std::io::stdout().is_terminal(),
            std::env::var_os("NO_COLOR").as_deref(),
        )
    }
}

/// A colour of the few cauda prints, as its SGR code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paint {
    /// Green: better.
    Good,
    /// Bold red: worse.
    Bad,
}

/// `text` wrapped in the escape sequences of `paint`.
pub fn paint(text: &str, paint: Paint) -> String {
    let code = match paint {
        Paint::Good => "32",
        Paint::Bad => "1;31",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_colours_a_terminal_unless_no_color_is_set_non_empty() {
        let auto = ColorChoice::Auto;
        assert!(auto.enabled(true, None));
        assert!(auto.enabled(true, Some(OsStr::new(""))));
        assert!(!auto.enabled(true, Some(OsStr::new("1"))));
        assert!(!auto.enabled(true, Some(OsStr::new("0"))));
        assert!(!auto.enabled(false, None));
        assert!(ColorChoice::Always.enabled(false, Some(OsStr::new("1"))));
        assert!(!ColorChoice::Never.enabled(true, None));
    }

    #[test]
    fn paint_resets_after_the_text() {
        assert_eq!(paint("WORSE", Paint::Bad), "\x1b[1;31mWORSE\x1b[0m");
    }
}
