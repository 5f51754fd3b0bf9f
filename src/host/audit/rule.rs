//! The audit's vocabulary: a check being built ([`Rule`]: what it reads,
//! why it matters, its source), judged into a [`Check`] with its fix, and
//! how a sysfs choice file states its value. Every area's checks
//! (`cpu`, `cmdline`, `memory`, `block`, `net`) are written with it.

use crate::model::check::{Check, Fix, Status};

/// A check being built: what it is and why, before its value is judged.
pub(crate) struct Rule {
    id: String,
    read: String,
    why: String,
    source: &'static str,
}

/// Starts a check with its id, the path it reads, why it matters and its source.
pub(crate) fn rule(
    id: impl Into<String>,
    read: impl Into<String>,
    why: impl Into<String>,
    source: &'static str,
) -> Rule {
    Rule {
        id: id.into(),
        read: read.into(),
        why: why.into(),
        source,
    }
}

impl Rule {
    /// The check with its current value, recommendation, verdict and fix.
    pub(crate) fn judged(
        self,
        current: impl Into<String>,
        recommended: impl Into<String>,
        status: Status,
        fix: Option<Fix>,
    ) -> Check {
        Check {
            id: self.id,
            read: self.read,
            current: current.into(),
            recommended: recommended.into(),
            status,
            why: self.why,
            source: self.source.into(),
            // A fix only where the value is wrong for the profile.
            fix: fix.filter(|_| status == Status::Warn),
        }
    }

    /// Recorded for context: no recommendation for this profile.
    pub(crate) fn info(self, current: impl Into<String>, recommended: impl Into<String>) -> Check {
        self.judged(current, recommended, Status::Info, None)
    }

    /// Ok when `good`, else a warning with its fix.
    pub(crate) fn expect(
        self,
        current: impl Into<String>,
        recommended: impl Into<String>,
        good: bool,
        fix: Option<Fix>,
    ) -> Check {
        let status = if good { Status::Ok } else { Status::Warn };
        self.judged(current, recommended, status, fix)
    }

    /// The value could not be read: `info`, saying why.
    pub(crate) fn missing(self, why: impl std::fmt::Display) -> Check {
        let current = format!("not available: {why}");
        self.judged(current, "", Status::Info, None)
    }
}

/// A runtime write of `value` to `path`.
pub(crate) fn write(path: impl Into<String>, value: impl Into<String>) -> Option<Fix> {
    Some(Fix::Write {
        path: path.into(),
        value: value.into(),
    })
}

/// A boot argument.
pub(crate) fn boot(argument: impl Into<String>) -> Option<Fix> {
    Some(Fix::Boot {
        argument: argument.into(),
    })
}

/// The value in effect of a sysfs choice file: the bracketed word of
/// `always [madvise] never`, or the whole text when nothing is bracketed.
pub fn chosen(text: &str) -> String {
    match (text.find('['), text.find(']')) {
        (Some(open), Some(close)) if open < close => text[open + 1..close].to_string(),
        _ => text.trim().to_string(),
    }
}

/// The choices a sysfs choice file offers (`none [mq-deadline] kyber` → three words).
pub fn choices(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choice_files_state_the_bracketed_word() {
        assert_eq!(chosen("always [madvise] never"), "madvise");
        assert_eq!(chosen("none [mq-deadline] kyber bfq"), "mq-deadline");
        assert_eq!(chosen("[none]"), "none");
        assert_eq!(chosen("menu"), "menu");
        assert_eq!(
            choices("none [mq-deadline] kyber"),
            vec!["none", "mq-deadline", "kyber"]
        );
    }

    #[test]
    fn a_fix_is_kept_only_on_a_warning() {
        let make = || rule("x", "/x", "why", "src");
        let ok = make().expect("1", "1", true, write("/x", "1"));
        assert_eq!((ok.status, ok.fix), (Status::Ok, None));
        let warn = make().expect("60", "1", false, write("/x", "1"));
        assert_eq!(warn.status, Status::Warn);
        assert!(warn.fix.is_some());
        let missing = make().missing("/x does not exist");
        assert_eq!(missing.status, Status::Info);
        assert_eq!(missing.current, "not available: /x does not exist");
    }
}
