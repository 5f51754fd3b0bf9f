/* table.h - open-addressing tables over BPF arrays, for the lookups made on
 * every scheduler switch and every block request.
 *
 * A hash map's lookup is a call and a hash, and an LRU hash's update takes
 * a lock and a list node: about 300 ns per block request here. An array's
 * lookup is inlined by the verifier into an address computation, so a key
 * is found by trying TABLE_PROBES consecutive places from a multiplicative
 * hash of it. Keys are never 0 (0 marks a free place).
 *
 * src/host/trace/sys.rs's `spread` is the same function: user space fills
 * the thread table with it.
 */
#ifndef CAUDA_TABLE_H
#define CAUDA_TABLE_H

#define TABLE_PROBES 8
#define GOLDEN 0x9E3779B97F4A7C15ULL

/* The first place tried for `key` in a table of 2^bits places. */
static __always_inline __u32 spread(__u64 key, __u32 bits)
{
	return (__u32)((key * GOLDEN) >> (64 - bits));
}

/* A pointer as a number to hash: its distance from `base`, a pointer
 * that does not move (the verifier refuses arithmetic on one pointer, but
 * gives a privileged loader, which cauda needs anyway, the difference of
 * two as a number). */
static __always_inline __u64 address_of(const void *p, const void *base)
{
	__u64 key = (__u64)p - (__u64)base;

	asm volatile("" : "+r"(key));
	return key;
}

#endif
