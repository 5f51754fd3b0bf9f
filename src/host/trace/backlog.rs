//! The blame vector of a backlogged operation: one due before the one
//! before it ended, so its window opened while that one still waited or
//! ran, and the thread's reading at that one's start covers more than its
//! window. The probe thread reads its counters again when the backlogged
//! operation's window opens (it runs then, having just ended the one
//! before): from that reading on the vector is exact, as any operation's,
//! and before it the trail of the thread's last spans (each state's end,
//! kept by the kernel) gives its own window's states.

use super::blame::{
    BLOCKED, BLOCKED_TIMER, Counters, RUNNABLE, RUNNING, TRAIL, UNKNOWN, Vector, fit, part, vector,
};

/// The vector of a backlogged operation (its window `now − latency_ns`
/// to `now`): `start` is the reading at the start of the operations it
/// was due behind, `opened` the reading (with the trail) when its own
/// window opened, `end` the one at its end.
///
/// Inside the window before `opened`, the trail's spans give the thread's
/// running, run-queue and blocked time exactly (a sleep ended by a timer
/// apart). What interrupts, softirqs, the idle exit and steal took from
/// each state there is its share of what they took from that state since
/// `start`, split among them as in the operations before; a sleep's block
/// queue and device time likewise (interrupts that hit the thread after
/// it last switched in and before `opened` are counted as taken from its
/// earlier running there: the kernel counts that span's own time only when
/// it ends). Time the trail does not reach (more than [`TRAIL`] − 1
/// spans), or spent in no state (a switch went untraced), is unexplained.
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
    if opened.state as usize != RUNNING || ran <= from {
        return v;
    }
    let spent = spans_between(opened, from, ran);
    let d = |pick: fn(&Counters) -> u64| pick(opened).saturating_sub(pick(start));
    let taken_running = share(
        d(|c| c.stolen[RUNNING]),
        spent[RUNNING],
        d(|c| c.time[RUNNING]),
    );
    let taken_waiting = share(
        d(|c| c.stolen[RUNNABLE]),
        spent[RUNNABLE],
        d(|c| c.time[RUNNABLE]),
    );
    let slept = spent[BLOCKED] + spent[BLOCKED_TIMER];
    let taken_asleep = share(
        d(|c| c.stolen[BLOCKED]) + d(|c| c.stolen[BLOCKED_TIMER]),
        slept,
        d(|c| c.time[BLOCKED]) + d(|c| c.time[BLOCKED_TIMER]),
    );
    let before = vector(start, opened, ran, ran.saturating_sub(start.window).max(1));
    let causes: Vec<usize> = (part::IRQ..part::TIMER).chain([part::STEAL]).collect();
    spread(
        &mut v,
        &before,
        &causes,
        taken_running + taken_waiting + taken_asleep,
    );
    v.parts[part::RUNNING] += spent[RUNNING] - taken_running;
    v.parts[part::RUN_QUEUE] += spent[RUNNABLE] - taken_waiting;
    v.runnable = (v.runnable + spent[RUNNABLE]).min(latency_ns);
    // The sleep less what was taken from it: a timer's apart, the rest
    // split into block queue, device and blocked as before.
    let by_timer = spent[BLOCKED_TIMER] - share(taken_asleep, spent[BLOCKED_TIMER], slept);
    let other = slept - taken_asleep - by_timer;
    v.parts[part::TIMER] += by_timer;
    let asleep = [part::BLOCK_QUEUE, part::BLOCK_DEVICE, part::BLOCKED];
    if asleep.iter().all(|&i| before.parts[i] == 0) {
        v.parts[part::BLOCKED] += other;
    } else {
        spread(&mut v, &before, &asleep, other);
    }
    v.parts[part::UNEXPLAINED] = 0;
    fit(&mut v.parts, latency_ns);
    v
}

/// The thread's time in each state from `from` to `to` (when it last
/// switched in), from the trail of its last spans at `c`; time the trail
/// does not reach is in none.
fn spans_between(c: &Counters, from: u64, to: u64) -> [u64; 8] {
    let mut spent = [0u64; 8];
    let oldest = c.trail_n.saturating_sub(TRAIL as u64);
    let mut j = c.trail_n;
    while j > oldest + 1 {
        j -= 1;
        let end = c.trail[(j % TRAIL as u64) as usize];
        let begin = c.trail[((j - 1) % TRAIL as u64) as usize].at;
        let until = end.at.min(to);
        if until <= from {
            break;
        }
        // A span in no state (a switch went untraced) is in no part:
        // unexplained.
        let state = end.state as usize & 7;
        if state != UNKNOWN {
            spent[state] += until.saturating_sub(begin.max(from));
        }
        if begin <= from {
            break;
        }
    }
    spent
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
    use super::super::blame::SpanEnd;
    use super::*;

    /// A reading of a thread running since the last of `spans` ended,
    /// with window `window`: each span (state, end) in its trail, and its
    /// time counted per state inside `counted_from` as the kernel counts
    /// it (the first span begins at `first`).
    fn reading(first: u64, spans: &[(usize, u64)], window: u64, counted_from: u64) -> Counters {
        let mut c = Counters::default();
        c.window = window;
        c.state = RUNNING as u32;
        let mut begin = first;
        let mut all = vec![(0, first)];
        all.extend_from_slice(spans);
        for (k, &(state, at)) in all.iter().enumerate() {
            c.trail[k % TRAIL] = SpanEnd {
                at,
                state: state as u32,
                pad: 0,
            };
            if k > 0 && state != UNKNOWN {
                c.time[state] += at.saturating_sub(begin.max(counted_from));
            }
            begin = at;
        }
        c.trail_n = all.len() as u64;
        c.since = begin;
        c
    }

    /// The first operation was due at 1,000; the thread slept from 500
    /// until a timer at 1,100 and waited runnable until 4,000 (the next
    /// one due at 2,000 meanwhile): the reading at the first one's start,
    /// and the one when the second one's window opened, just after 4,000.
    fn behind_a_wait() -> (Counters, Counters) {
        let mut start = Counters::default();
        start.window = 1_000;
        start.state = BLOCKED as u32;
        start.since = 500;
        let opened = reading(
            500,
            &[(BLOCKED_TIMER, 1_100), (RUNNABLE, 4_000)],
            2_000,
            1_000,
        );
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
        // 5,000, and ended at 5,020: 2,000 of the first wait, 900 of the
        // second, 120 of running.
        let (start, opened) = behind_a_wait();
        let end = reading(
            500,
            &[
                (BLOCKED_TIMER, 1_100),
                (RUNNABLE, 4_000),
                (RUNNING, 4_100),
                (RUNNABLE, 5_000),
            ],
            2_000,
            1_000,
        );
        let v = backlog_vector(&start, &opened, &end, 5_020, 3_020);
        assert_eq!(v.parts[part::RUN_QUEUE], 2_900);
        assert_eq!(v.parts[part::RUNNING], 120);
        assert_eq!(v.runnable, 2_900);
        assert_eq!(v.parts[part::UNEXPLAINED], 0);
    }

    #[test]
    fn a_preemption_before_its_window_opened_is_in_the_trail() {
        // Preempted at 4,010, after the first ended and before the second
        // one's window opened, until 7,010; it ended at 7,020. Its window
        // holds 5,000 of wait and 20 of running, and no sleep (the last
        // wait and the sleep before it gave 3,000 of wait and a sleep of
        // 100 that was not there).
        let start = behind_a_wait().0;
        let opened = reading(
            500,
            &[
                (BLOCKED_TIMER, 1_100),
                (RUNNABLE, 4_000),
                (RUNNING, 4_010),
                (RUNNABLE, 7_010),
            ],
            2_000,
            1_000,
        );
        let v = backlog_vector(&start, &opened, &opened, 7_020, 5_020);
        assert_eq!(v.parts[part::RUN_QUEUE], 5_000);
        assert_eq!(v.parts[part::RUNNING], 20);
        assert_eq!(v.parts[part::TIMER], 0);
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
    fn causes_that_took_more_than_the_sleep_take_all_of_it_and_no_more() {
        // The idle exit took 300 from a sleep the window held 200 of
        // (the timer's callback at 2,200).
        let mut start = behind_a_wait().0;
        start.since = 0;
        let mut opened = reading(
            500,
            &[(BLOCKED_TIMER, 2_200), (RUNNABLE, 4_000)],
            2_000,
            1_000,
        );
        opened.stolen[BLOCKED] = 1_300;
        opened.idle_exit_ns = 1_300;
        let v = backlog_vector(&start, &opened, &opened, 4_050, 2_050);
        assert_eq!(v.parts[part::IDLE_EXIT], 200);
        assert_eq!(v.parts[part::TIMER], 0);
        assert_eq!(v.parts[part::RUN_QUEUE], 1_800);
        assert_eq!(v.parts.iter().sum::<u64>(), 2_050);
    }

    #[test]
    fn a_sleep_inside_the_window_is_split_as_the_earlier_ones() {
        // The first one due at 1,000 ran, slept on its request from 1,500
        // (queue 100, device 900) until 2,500, waited until 2,600; the
        // next one, due at 2,000, holds 500 of the sleep: request time in
        // proportion 1:9.
        let mut start = Counters::default();
        start.window = 1_000;
        start.state = RUNNING as u32;
        start.since = 900;
        let mut opened = reading(
            900,
            &[(RUNNING, 1_500), (BLOCKED, 2_500), (RUNNABLE, 2_600)],
            2_000,
            1_000,
        );
        opened.block_queue_ns = 100;
        opened.block_device_ns = 900;
        opened.requests = 1;
        let v = backlog_vector(&start, &opened, &opened, 2_650, 650);
        assert_eq!(v.parts[part::BLOCK_QUEUE], 50);
        assert_eq!(v.parts[part::BLOCK_DEVICE], 450);
        assert_eq!(v.parts[part::RUN_QUEUE], 100);
        assert_eq!(v.parts[part::RUNNING], 50);
        assert_eq!(v.parts.iter().sum::<u64>(), 650);
    }

    #[test]
    fn a_span_in_no_state_and_one_beyond_the_trail_are_unexplained() {
        // A switch to it went untraced: from 1,100 to 3,000 it was in no
        // state, then ran until the end at 4,050.
        let start = behind_a_wait().0;
        let opened = reading(500, &[(BLOCKED_TIMER, 1_100), (0, 3_000)], 2_000, 1_000);
        let v = backlog_vector(&start, &opened, &opened, 4_050, 2_050);
        assert_eq!(v.parts[part::RUNNING], 1_050);
        assert_eq!(v.parts[part::UNEXPLAINED], 1_000);
        // Ten preemptions of 100 each after 2,000, the last ending at
        // 4,000: the trail keeps the ends of the last eight spans, so the
        // last seven are counted and the 1,300 before them unexplained.
        let spans: Vec<(usize, u64)> = (0..10u64)
            .flat_map(|k| [(RUNNING, 2_100 + 200 * k), (RUNNABLE, 2_200 + 200 * k)])
            .collect();
        let opened = reading(2_000, &spans, 2_000, 1_000);
        let v = backlog_vector(&start, &opened, &opened, 4_050, 2_050);
        assert_eq!(v.parts[part::RUN_QUEUE], 400);
        assert_eq!(v.parts[part::RUNNING], 350);
        assert_eq!(v.parts[part::UNEXPLAINED], 1_300);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1024))]
        /// A thread's random timeline of states (a sleep a timer ended,
        /// and time in no state, among them), counted as the kernel counts
        /// it: where the backlogged operation's window before its opening
        /// holds at most seven spans, the vector is the time the thread
        /// spent in each state inside the window, exactly, and what the
        /// trail does not reach (before its first span) is unexplained.
        #[test]
        fn the_vector_is_the_timeline_inside_the_window(
            steps in proptest::collection::vec((0usize..5, 1u64..3_000), 1..12),
            due in 0u64..20_000,
            tail in 0u64..3_000,
        ) {
            let states = [RUNNABLE, RUNNING, BLOCKED, BLOCKED_TIMER, UNKNOWN];
            let mut spans = Vec::new();
            let mut at = 1_000;
            for &(s, long) in &steps {
                at += long;
                spans.push((states[s], at));
            }
            // It runs from the last span's end (its window opens then),
            // and ends `tail` later; the window may begin before the
            // trail's first span (at 1,000).
            let opened_at = at;
            let from = due.min(opened_at - 1);
            let now = opened_at + tail;
            let mut start = Counters::default();
            start.window = 0;
            let opened = reading(1_000, &spans, from, 0);
            let v = backlog_vector(&start, &opened, &opened, now, now - from);
            let mut truth = [0u64; 8];
            truth[UNKNOWN] = 1_000u64.saturating_sub(from);
            let mut begin = 1_000;
            for &(s, end) in &spans {
                truth[s] += end.saturating_sub(begin.max(from)).min(end - begin);
                begin = end;
            }
            truth[RUNNING] += tail;
            let inside = spans.iter().filter(|&&(_, end)| end > from).count();
            proptest::prop_assert_eq!(v.parts.iter().sum::<u64>(), now - from);
            if inside < TRAIL {
                proptest::prop_assert_eq!(v.parts[part::RUN_QUEUE], truth[RUNNABLE]);
                proptest::prop_assert_eq!(v.parts[part::RUNNING], truth[RUNNING]);
                proptest::prop_assert_eq!(v.parts[part::BLOCKED], truth[BLOCKED]);
                proptest::prop_assert_eq!(v.parts[part::TIMER], truth[BLOCKED_TIMER]);
                proptest::prop_assert_eq!(v.runnable, truth[RUNNABLE]);
                proptest::prop_assert_eq!(v.parts[part::UNEXPLAINED], truth[UNKNOWN]);
            }
        }
    }
}
