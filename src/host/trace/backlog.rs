//! The blame vector of a backlogged operation: one due before the one
//! before it ended, so its window opened while that one still waited or
//! ran, and the thread's reading at that one's start covers more than its
//! window. The probe thread reads its counters again when the backlogged
//! operation's window opens (it runs then, having just ended the one
//! before); from that reading on the vector is exact, as any operation's,
//! and before it the thread's last sleep, wait and run at that reading
//! give their parts inside the window.

use super::blame::{
    BLOCKED, BLOCKED_TIMER, Counters, RUNNABLE, RUNNING, Vector, fit, part, vector,
};

/// The vector of a backlogged operation (its window `now − latency_ns`
/// to `now`): `start` is the reading at the start of the operations it
/// was due behind, `opened` the reading when its own window opened, `end`
/// the one at its end.
///
/// Inside the window before `opened`, the thread's last wait (became
/// runnable → ran) is run-queue time and its last sleep before that
/// (blocked → became runnable, at most what it slept since `start`) is
/// blocked time; what interrupts, softirqs, the idle exit and steal took
/// from them, and how the sleep splits into timer, block queue and device
/// time, are the earlier operations' shares. Time the spans do not cover
/// (the thread's earlier states) is unexplained, and so is all of it when
/// a switch went untraced.
pub fn backlog_vector(
    start: &Counters,
    opened: &Counters,
    end: &Counters,
    now: u64,
    latency_ns: u64,
) -> Vector {
    let from = now.saturating_sub(latency_ns);
    let mut v = vector(opened, end, now, latency_ns);
    let ran = opened.since;
    if opened.state as usize != RUNNING || ran <= from || opened.missed != start.missed {
        return v;
    }
    let d = |pick: fn(&Counters) -> u64| pick(opened).saturating_sub(pick(start));
    let waited = if opened.runnable_since != 0 && opened.runnable_since <= ran {
        ran.saturating_sub(opened.runnable_since.max(from))
    } else {
        0
    };
    let woke = if waited > 0 {
        opened.runnable_since
    } else {
        ran
    };
    let slept_before = d(|c| c.time[BLOCKED]) + d(|c| c.time[BLOCKED_TIMER]);
    let slept = if opened.blocked_since != 0 && opened.blocked_since <= woke {
        woke.saturating_sub(opened.blocked_since.max(from))
            .min(slept_before)
    } else {
        0
    };
    // What the causes took from that wait and sleep, in the proportion
    // they took from the earlier operations' waits and sleeps.
    let taken_from_wait = share(d(|c| c.stolen[RUNNABLE]), waited, d(|c| c.time[RUNNABLE]));
    let taken_from_sleep = share(
        d(|c| c.stolen[BLOCKED]) + d(|c| c.stolen[BLOCKED_TIMER]),
        slept,
        slept_before,
    );
    let before = vector(start, opened, ran, ran.saturating_sub(start.window).max(1));
    let causes: Vec<usize> = (part::IRQ..part::TIMER).chain([part::STEAL]).collect();
    spread(&mut v, &before, &causes, taken_from_wait + taken_from_sleep);
    let asleep = [
        part::TIMER,
        part::BLOCK_QUEUE,
        part::BLOCK_DEVICE,
        part::BLOCKED,
    ];
    let slept_net = slept - taken_from_sleep;
    if asleep.iter().all(|&i| before.parts[i] == 0) {
        v.parts[part::BLOCKED] += slept_net;
    } else {
        spread(&mut v, &before, &asleep, slept_net);
    }
    v.parts[part::RUN_QUEUE] += waited - taken_from_wait;
    v.runnable = (v.runnable + waited).min(latency_ns);
    v.parts[part::UNEXPLAINED] = 0;
    fit(&mut v.parts, latency_ns);
    v
}

/// `x` in the proportion `of` is of `whole`, at most `of` (the causes
/// can have taken more than the state's time: they overlap steal).
fn share(x: u64, of: u64, whole: u64) -> u64 {
    if whole == 0 {
        return 0;
    }
    let part = (u128::from(x) * u128::from(of.min(whole)) / u128::from(whole)) as u64;
    part.min(of)
}

/// Adds `total` to `v`'s parts `at`, in the proportions of `like`'s
/// (nothing where `like` has none of them).
fn spread(v: &mut Vector, like: &Vector, at: &[usize], total: u64) {
    let sum: u64 = at.iter().map(|&i| like.parts[i]).sum();
    if sum == 0 {
        return;
    }
    let mut left = total;
    let mut last = at[0];
    for &i in at {
        let add = (u128::from(like.parts[i]) * u128::from(total) / u128::from(sum)) as u64;
        v.parts[i] += add;
        left -= add;
        if like.parts[i] > 0 {
            last = i;
        }
    }
    // What the rounding down left goes to the last part that has some.
    v.parts[last] += left;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(state: usize, since: u64, window: u64) -> Counters {
        let mut c = Counters::default();
        c.window = window;
        c.state = state as u32;
        c.since = since;
        c
    }

    /// The first operation was due at 1,000; the thread slept until a
    /// timer at 1,100 and waited runnable until 4,000 (the next one due
    /// at 2,000 meanwhile): the reading at the first one's start, and the
    /// one when the second one's window opened, just after 4,000.
    fn behind_a_wait() -> (Counters, Counters) {
        let start = at(BLOCKED, 500, 1_000);
        let mut opened = at(RUNNING, 4_000, 2_000);
        opened.time[BLOCKED_TIMER] = 100;
        opened.time[RUNNABLE] = 2_900;
        opened.runnable_since = 1_100;
        opened.blocked_since = 500;
        (start, opened)
    }

    #[test]
    fn a_backlogged_operation_gets_its_own_part_of_the_wait() {
        // It ended at 4,050 without another switch: 2,000 of the wait
        // and 50 of running are its own.
        let (start, opened) = behind_a_wait();
        let v = backlog_vector(&start, &opened, &opened, 4_050, 2_050);
        assert_eq!(v.parts[part::RUN_QUEUE], 2_000);
        assert_eq!(v.parts[part::RUNNING], 50);
        assert_eq!(v.runnable, 2_000);
        assert_eq!(v.parts.iter().sum::<u64>(), 2_050);
    }

    #[test]
    fn a_wait_before_and_one_after_its_window_opened_both_count() {
        // It ran from 4,000, was preempted at 4,100 and waited until
        // 5,000, and ended at 5,020. Its window holds 2,000 of the first
        // wait and 900 of the second, 120 of running (only the last wait
        // counted before: 900 of run queue, the rest spread in
        // proportion).
        let (start, opened) = behind_a_wait();
        let mut end = at(RUNNING, 5_000, 2_000);
        end.time = opened.time;
        end.time[RUNNING] = 100;
        end.time[RUNNABLE] += 900;
        end.runnable_since = 4_100;
        end.blocked_since = 500;
        let v = backlog_vector(&start, &opened, &end, 5_020, 3_020);
        assert_eq!(v.parts[part::RUN_QUEUE], 2_900);
        assert_eq!(v.parts[part::RUNNING], 120);
        assert_eq!(v.runnable, 2_900);
        assert_eq!(v.parts[part::UNEXPLAINED], 0);
    }

    #[test]
    fn what_took_from_the_earlier_wait_takes_its_share_of_this_one() {
        // A TIMER softirq took 290 of the first wait's 2,900: of its
        // 2,000 in this window, 200.
        let (start, mut opened) = behind_a_wait();
        opened.softirq_ns[1] = 290;
        opened.stolen[RUNNABLE] = 290;
        let v = backlog_vector(&start, &opened, &opened, 4_050, 2_050);
        assert_eq!(v.parts[part::SOFTIRQ + 1], 200);
        assert_eq!(v.parts[part::RUN_QUEUE], 1_800);
        assert_eq!(v.runnable, 2_000);
        assert_eq!(v.parts.iter().sum::<u64>(), 2_050);
    }

    #[test]
    fn a_sleep_inside_the_window_is_split_as_the_earlier_ones() {
        // The first one due at 1,000 slept on its request from 1,500
        // (queue 100, device 900) until 2,500, waited until 2,600; the
        // next due at 2,000 holds 500 of the sleep, 600 of it is
        // request time in proportion 1:9.
        let start = at(RUNNING, 900, 1_000);
        let mut opened = at(RUNNING, 2_600, 2_000);
        opened.time[RUNNING] = 500;
        opened.time[BLOCKED] = 1_000;
        opened.time[RUNNABLE] = 100;
        opened.block_queue_ns = 100;
        opened.block_device_ns = 900;
        opened.requests = 1;
        opened.blocked_since = 1_500;
        opened.runnable_since = 2_500;
        let v = backlog_vector(&start, &opened, &opened, 2_650, 650);
        assert_eq!(v.parts[part::BLOCK_QUEUE], 50);
        assert_eq!(v.parts[part::BLOCK_DEVICE], 450);
        assert_eq!(v.parts[part::RUN_QUEUE], 100);
        assert_eq!(v.parts[part::RUNNING], 50);
        assert_eq!(v.parts.iter().sum::<u64>(), 650);
    }

    #[test]
    fn causes_that_took_more_than_the_sleep_take_all_of_it_and_no_more() {
        // The idle exit took 300 from a sleep the window held 200 of.
        let (start, mut opened) = behind_a_wait();
        opened.time[BLOCKED_TIMER] = 250;
        opened.stolen[BLOCKED_TIMER] = 300;
        opened.idle_exit_ns = 300;
        opened.runnable_since = 2_200;
        let v = backlog_vector(&start, &opened, &opened, 4_050, 2_050);
        assert_eq!(v.parts[part::IDLE_EXIT], 200);
        assert_eq!(v.parts[part::RUN_QUEUE], 1_800);
        assert_eq!(v.parts.iter().sum::<u64>(), 2_050);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// Whatever the three readings hold (the kernel's counters may
        /// disagree among themselves), the vector adds up to the latency
        /// and its whole wait is at most the latency.
        #[test]
        fn any_readings_give_a_vector_of_the_latency(
            times in proptest::collection::vec(0u64..10_000, 24),
            stamps in proptest::collection::vec(0u64..10_000, 9),
            states in proptest::collection::vec(0usize..5, 2),
            causes in proptest::collection::vec(0u64..10_000, 6),
            missed in 0u64..2,
            latency in 0u64..10_000,
        ) {
            let mut start = at(states[0], stamps[0], stamps[1]);
            let mut opened = at(states[1], stamps[2], stamps[3]);
            let mut end = at(RUNNING, stamps[4], stamps[3]);
            for (i, c) in [&mut start, &mut opened, &mut end].into_iter().enumerate() {
                c.time.copy_from_slice(&times[i * 8..i * 8 + 8]);
                c.stolen[BLOCKED] = causes[i];
                c.stolen[RUNNABLE] = causes[i + 3];
                c.softirq_ns[3] = causes[i] + causes[i + 3];
            }
            opened.runnable_since = stamps[5];
            opened.blocked_since = stamps[6];
            opened.missed = missed;
            end.runnable_since = stamps[7];
            end.blocked_since = stamps[8];
            let v = backlog_vector(&start, &opened, &end, 10_000, latency);
            proptest::prop_assert_eq!(v.parts.iter().sum::<u64>(), latency);
            proptest::prop_assert!(v.runnable <= latency);
        }
    }

    #[test]
    fn an_untraced_switch_leaves_the_time_before_unexplained() {
        let (start, mut opened) = behind_a_wait();
        opened.missed = 1;
        let v = backlog_vector(&start, &opened, &opened, 4_050, 2_050);
        assert_eq!(v.parts[part::RUN_QUEUE], 0);
        assert_eq!(v.parts[part::RUNNING], 50);
        assert_eq!(v.parts[part::UNEXPLAINED], 2_000);
    }
}
