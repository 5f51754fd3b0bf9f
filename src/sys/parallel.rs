//! Using the CPUs: work spread over threads, and SIMD for the hot step of
//! text import.

/// Bit k set when byte k of `block` is not an ASCII digit, 16 bytes at a
/// time with SSE2: less `'0'`, a digit is at most 9 (unsigned). The hot
/// step of fio log import.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn non_digit_bits_64(block: &[u8; 64]) -> u64 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_max_epu8, _mm_movemask_epi8, _mm_set_epi64x, _mm_set1_epi8,
        _mm_sub_epi8,
    };
    let half = |bytes: &[u8]| i64::from_le_bytes(bytes.try_into().expect("8 bytes"));
    let mut bits = 0u64;
    for (k, lane) in block.chunks_exact(16).enumerate() {
        let (low, high) = (half(&lane[..8]), half(&lane[8..]));
        // SAFETY: SSE2 is part of the x86-64 baseline, enabled on every
        // x86_64 target, and these intrinsics take values, not pointers: they
        // cannot touch memory.
        let digits = unsafe {
            let t = _mm_sub_epi8(_mm_set_epi64x(high, low), _mm_set1_epi8(b'0' as i8));
            let nine = _mm_set1_epi8(9);
            _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(t, nine), nine))
        };
        bits |= u64::from(!(digits as u16)) << (16 * k);
    }
    bits
}

/// `f` of each item, in order, spread over the CPUs this process may use
/// (one thread for one item or CPU). Each thread takes the next item not yet
/// taken, so items of uneven cost do not leave a CPU idle at the end.
pub fn map_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let at = next.fetch_add(1, Relaxed);
            let Some(item) = items.get(at) else {
                return done;
            };
            done.push((at, f(item)));
        }
    };
    let parts: Vec<Vec<(usize, R)>> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut parts = vec![work()];
        // A panic in `f` is a bug; it carries on in the caller.
        parts.extend(
            helpers
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))),
        );
        parts
    });
    let mut slots: Vec<Option<R>> = std::iter::repeat_with(|| None).take(items.len()).collect();
    for (at, result) in parts.into_iter().flatten() {
        slots[at] = Some(result);
    }
    slots.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn map_parallel_keeps_the_items_order_whatever_each_costs() {
        let items: Vec<u64> = (0..1_000).collect();
        // Uneven work: every tenth item is a hundred times the others.
        let mapped = super::map_parallel(&items, |&i| {
            let rounds = if i % 10 == 0 { 10_000 } else { 100 };
            (0..rounds).fold(i, |v, k| std::hint::black_box(v ^ k))
                ^ (0..rounds).fold(0, |v, k| v ^ k)
        });
        assert_eq!(mapped, items);
        assert!(super::map_parallel(&[] as &[u64], |&i| i).is_empty());
        assert_eq!(super::map_parallel(&[7u64], |&i| i * 2), [14]);
    }
}
