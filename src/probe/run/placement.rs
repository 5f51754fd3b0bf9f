//! Where cauda's own threads run beside the probe's, and what they used.
//!
//! When the probe's threads leave some of the allowed CPUs free
//! (they were pinned, with `--cpus` or by the scheduler's affinity), the
//! observers are pinned to those; when the probe has every allowed CPU to
//! itself — one probe thread per CPU, or a process given one CPU — they
//! share, and the run file says so with advice. Each observer reports its
//! CPU set and CPU time into the run file ([`Observer`]).

use crate::model::{Observer, Warning};
use crate::sys;

/// Where the observers go.
#[derive(Clone, Debug, Default)]
pub struct Placement {
    /// The CPUs to pin them to; empty: wherever the process may run.
    cpus: Vec<usize>,
    /// What they share with the probe, when they cannot keep apart.
    pub shared: Option<Warning>,
}

impl Placement {
    /// The placement for a probe whose threads are `probe_tids`, in a
    /// process that may run on `allowed`.
    pub fn beside(allowed: &[usize], probe_tids: &[i32]) -> Placement {
        let probe_sets: Vec<Vec<usize>> = probe_tids.iter().map(|&t| sys::cpus_of(t)).collect();
        Placement::from_sets(allowed, &probe_sets)
    }

    /// [`Placement::beside`] from the probe threads' CPU sets.
    fn from_sets(allowed: &[usize], probe_sets: &[Vec<usize>]) -> Placement {
        let used: Vec<usize> = allowed
            .iter()
            .copied()
            .filter(|cpu| probe_sets.iter().any(|set| set.contains(cpu)))
            .collect();
        let free: Vec<usize> = allowed
            .iter()
            .copied()
            .filter(|c| !used.contains(c))
            .collect();
        if !free.is_empty() {
            return Placement {
                cpus: free,
                shared: None,
            };
        }
        // Every allowed CPU is the probe's. Only when each is taken by a
        // probe thread of its own (or there is one CPU) do the observers'
        // wake-ups land on a busy probe CPU rather than an idle one.
        let crowded = used.len() <= probe_sets.len();
        Placement {
            cpus: Vec::new(),
            shared: crowded.then(|| Warning {
                message: format!(
                    "cauda's own threads (the observer and the collector) shared CPU{} {} with \
                     the probe's {} thread(s): each of their wake-ups (about one per interval \
                     each, counted under 'observers') can delay one of the probe's operations",
                    if used.len() == 1 { "" } else { "s" },
                    cpu_list(&used),
                    probe_sets.len()
                ),
                advice: "allow the process one CPU more than the probe uses (taskset -c, or \
                         --cpus to a subset of the allowed CPUs): cauda then keeps its own \
                         threads there"
                    .into(),
            }),
        }
    }

    /// Run first on an observer thread: keeps it on the placement's CPUs.
    pub fn enter(&self) {
        if !self.cpus.is_empty() {
            let _ = sys::pin_current_thread_to(&self.cpus);
        }
    }
}

/// What the calling thread, named `thread`, has used so far: where it may
/// run, its CPU time and wake-ups (an observer thread calls it last).
pub fn leave(thread: &str) -> Observer {
    Observer {
        thread: thread.into(),
        cpus: sys::allowed_cpus(),
        cpu_ns: sys::thread_cpu_ns(),
        wakeups: sys::thread_voluntary_switches(),
    }
}

fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observers_take_the_cpus_the_probe_leaves_free() {
        let p = Placement::from_sets(&[0, 1, 2, 3], &[vec![1], vec![2]]);
        assert_eq!(p.cpus, vec![0, 3]);
        assert!(p.shared.is_none());
    }

    #[test]
    fn an_unpinned_probe_shares_without_a_warning() {
        // One floating probe thread on two CPUs: the scheduler finds the
        // idle one for a waking observer.
        let p = Placement::from_sets(&[0, 1], &[vec![0, 1]]);
        assert!(p.cpus.is_empty());
        assert!(p.shared.is_none());
    }

    #[test]
    fn a_probe_with_every_cpu_to_itself_is_told_what_was_shared() {
        for (allowed, sets) in [
            (vec![1], vec![vec![1]]),
            (vec![0, 1], vec![vec![0], vec![1]]),
            (vec![0, 1], vec![vec![0, 1], vec![0, 1], vec![0, 1]]),
        ] {
            let p = Placement::from_sets(&allowed, &sets);
            assert!(p.cpus.is_empty());
            let warning = p.shared.expect("a warning");
            assert!(
                warning.message.contains(&cpu_list(&allowed)),
                "{}",
                warning.message
            );
            assert!(warning.advice.contains("taskset"));
        }
    }
}
