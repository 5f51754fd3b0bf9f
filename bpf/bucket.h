/* bucket.h - cauda's histogram bucket index, in plain C for the BPF side.
 *
 * The same index as cauda's user-space histograms (src/record/histogram.rs,
 * `bucket_index`): HdrHistogram at 3 significant digits from 1 ns, i.e.
 * 10 bits of sub-bucket, b = log2(v | 2047) - 10 and
 * index = ((b + 1) << 10) + (v >> b) - 1024; 33,792 buckets cover 1 ns to
 * one hour, and a value past the hour is clamped into the top bucket.
 *
 * clang before 19 cannot lower a count of leading zeros for BPF, so log2 is
 * a branch-free binary search. Plain C (no BPF headers), so that a test
 * compiles this very file with the host's cc and compares it with the Rust
 * index value by value (tests/kernel_bucket.rs).
 */
#ifndef CAUDA_BUCKET_H
#define CAUDA_BUCKET_H

/* One hour in nanoseconds: cauda's highest trackable value. */
#define CAUDA_HIGHEST_NS 3600000000000ULL
/* bucket_index(CAUDA_HIGHEST_NS) + 1 */
#define CAUDA_BUCKETS 33792

/* floor(log2(v)) for v > 0, without branches or clz. */
static inline __attribute__((always_inline)) unsigned int cauda_log2(unsigned long long v)
{
	unsigned int r, shift;

	r = (v > 0xFFFFFFFFULL) << 5;
	v >>= r;
	shift = (v > 0xFFFF) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xFF) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xF) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (unsigned int)(v >> 1);
	return r;
}

/* The counts index of a value, as cauda's histograms compute it. */
static inline __attribute__((always_inline)) unsigned int cauda_bucket(unsigned long long v)
{
	unsigned int b;

	if (v > CAUDA_HIGHEST_NS)
		v = CAUDA_HIGHEST_NS;
	b = cauda_log2(v | 2047) - 10;
	return ((b + 1) << 10) + (unsigned int)(v >> b) - 1024;
}

#endif
