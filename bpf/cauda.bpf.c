// SPDX-License-Identifier: MIT OR GPL-2.0
/* cauda.bpf.c - kernel-side latency series for cauda: the block layer's
 * queue, device and total time of each request, and the run-queue delay
 * (woken -> running) of threads, counted into histograms with cauda's own
 * bucket layout (bucket.h) and cut into the run's intervals by completion
 * time on CLOCK_MONOTONIC, the recorder's clock. Nothing per event goes to
 * user space: cauda's observer thread reads a finished interval's slot
 * through a shared mapping at the next boundary and clears it.
 *
 * Events as in libbpf-tools' biolatency and runqlat (keyed by the request
 * pointer, not by device and sector): block_io_start -> block_rq_issue is
 * the OS queue, block_rq_issue -> block_rq_complete the device;
 * sched_wakeup, sched_wakeup_new and a preempted prev in sched_switch ->
 * next in sched_switch is the run-queue wait. Attached as BTF tracepoints
 * (tp_btf), which need neither kprobes nor tracefs; fields are read with
 * CO-RE against the running kernel's BTF.
 *
 * Built by bpf/build.sh; the object is committed and embedded in cauda.
 */
#include "kernel.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "bucket.h"
#include "table.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Four interval slots: a slot is read one boundary after its interval
 * ends, and written again three intervals later. */
#define SLOTS 4

/* The series, in the order src/host/kernel.rs names them. */
enum series {
	BLOCK_QUEUE_READ,
	BLOCK_QUEUE_WRITE,
	BLOCK_DEVICE_READ,
	BLOCK_DEVICE_WRITE,
	BLOCK_TOTAL_READ,
	BLOCK_TOTAL_WRITE,
	RUNQ_OWN,
	RUNQ_HOST,
	SERIES,
};

/* Events not counted, and why (read at the end of a run). */
enum dropped {
	DROPPED_REQUEST_MAP_FULL,
	DROPPED_WAKE_MAP_FULL,
	DROPPED_OTHER_OP,
	/* A request started again (requests are reused) while its previous
	 * use was still waiting for a completion the programs never saw. */
	DROPPED_COMPLETION_UNSEEN,
	DROPPED_KINDS,
};

/* Written by user space: what to count and when. */
struct cauda_config {
	__u64 run_start_ns; /* 0: not armed yet, nothing is recorded */
	__u64 interval_ns;
	__u64 end_ns;       /* 0: still running; events from then on are not recorded */
	__u32 tgid;         /* block requests submitted by this process only (0: any) */
	__u32 dev;          /* requests of this device only (kernel dev_t; 0: any) */
	__u32 blame;        /* 1: --kernel blame, requests' times go to their threads too */
	__u32 block;        /* 1: --kernel block, requests' times are recorded in its series */
};

/* Exact statistics of one series in one interval slot. */
struct cauda_stats {
	__u64 count;
	__u64 sum;
	__u64 min; /* ~0 when empty (user space resets it so) */
	__u64 max;
	__u64 clamped;
};

/* A request in flight (table.h: the request's address is the key). */
struct req_times {
	__u64 rq;    /* the request's address; 0: a free place */
	__u64 start; /* block_io_start, 0 when not seen */
	__u64 issue; /* block_rq_issue, 0 until issued */
	__u32 tid;   /* the thread that started it, 0 when not seen */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cauda_config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, SLOTS * SERIES * CAUDA_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, SLOTS * SERIES);
	__type(key, __u32);
	__type(value, struct cauda_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DROPPED_KINDS);
	__type(key, __u32);
	__type(value, __u64);
} dropped SEC(".maps");

/* In-flight requests (table.h). A request merged into another never
 * completes: its place is taken back when its address starts again (a
 * request is reused) or, for a request of a pool not used since, when it
 * is older than STALE_NS and its place is needed. */
#define REQUEST_BITS 14
#define STALE_NS (60ULL * 1000 * 1000 * 1000)
/* Shared with user space, which counts the places still taken at the end
 * of a run with plain loads. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1 << REQUEST_BITS);
	__type(key, __u32);
	__type(value, struct req_times);
} requests SEC(".maps");

/* Threads waiting on a run queue since the time stored. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, __u64);
} wakes SEC(".maps");

/* The probe's own threads (filled by user space): the runq series. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} own SEC(".maps");

static __always_inline struct cauda_config *settings(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&config, &zero);
}

static __always_inline void count_dropped(__u32 why)
{
	__u64 *n = bpf_map_lookup_elem(&dropped, &why);

	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline void lower_to(__u64 *at, __u64 value)
{
	__u64 old = *at;

	for (int i = 0; i < 16 && value < old; i++) {
		__u64 seen = __sync_val_compare_and_swap(at, old, value);

		if (seen == old)
			break;
		old = seen;
	}
}

static __always_inline void raise_to(__u64 *at, __u64 value)
{
	__u64 old = *at;

	for (int i = 0; i < 16 && value > old; i++) {
		__u64 seen = __sync_val_compare_and_swap(at, old, value);

		if (seen == old)
			break;
		old = seen;
	}
}

/* Counts `value` (ns) in `series` for the interval `now` falls in. */
static __always_inline void record(const struct cauda_config *cfg, __u32 series, __u64 now,
				   __u64 value)
{
	__u64 start = cfg->run_start_ns, interval = cfg->interval_ns;
	__u32 at, key;
	struct cauda_stats *st;
	__u64 *bucket;

	if (!start || now < start || !interval)
		return;
	if (cfg->end_ns && now >= cfg->end_ns)
		return;
	at = (__u32)(((now - start) / interval) & (SLOTS - 1)) * SERIES + series;
	key = at * CAUDA_BUCKETS + cauda_bucket(value);
	st = bpf_map_lookup_elem(&stats, &at);
	bucket = bpf_map_lookup_elem(&hist, &key);
	if (!st || !bucket)
		return;
	__sync_fetch_and_add(bucket, 1);
	__sync_fetch_and_add(&st->count, 1);
	__sync_fetch_and_add(&st->sum, value);
	if (value > CAUDA_HIGHEST_NS)
		__sync_fetch_and_add(&st->clamped, 1);
	lower_to(&st->min, value);
	raise_to(&st->max, value);
}

#include "blame.h"

/* The request at address `rq`, if the table has it. */
static __always_inline struct req_times *request_of(__u64 rq)
{
	__u32 at = spread(rq, REQUEST_BITS), place;
	struct req_times *t;

	for (int i = 0; i < TABLE_PROBES; i++) {
		place = (at + i) & ((1 << REQUEST_BITS) - 1);
		t = bpf_map_lookup_elem(&requests, &place);
		if (t && t->rq == rq)
			return t;
	}
	return NULL;
}

/* Frees a request's place (its stamps first: a place taken and not yet
 * stamped is never taken as stale). */
static __always_inline void release(struct req_times *t)
{
	t->start = 0;
	t->issue = 0;
	t->rq = 0;
}

/* A place for request `rq` (not in the table): a free one, or one whose
 * request is older than STALE_NS (counted as a completion unseen). */
static __always_inline struct req_times *claim(__u64 rq, __u64 now)
{
	__u32 at = spread(rq, REQUEST_BITS), place;
	struct req_times *t;
	__u64 held, since;

	for (int i = 0; i < TABLE_PROBES; i++) {
		place = (at + i) & ((1 << REQUEST_BITS) - 1);
		t = bpf_map_lookup_elem(&requests, &place);
		if (!t)
			continue;
		held = t->rq;
		since = t->start ? t->start : t->issue;
		/* Taken but not yet stamped (since 0), or recent: in use. */
		if (held && (!since || now - since < STALE_NS))
			continue;
		if (__sync_val_compare_and_swap(&t->rq, held, rq) != held)
			continue;
		if (held)
			count_dropped(DROPPED_COMPLETION_UNSEEN);
		return t;
	}
	count_dropped(DROPPED_REQUEST_MAP_FULL);
	return NULL;
}

/* The request's partition (or, without one, its disk) is `dev`. */
static __always_inline bool on_device(struct request *rq, __u32 dev)
{
	struct block_device *part = rq->part;
	struct gendisk *disk = rq->q->disk;

	if (part && part->bd_dev == dev)
		return true;
	return disk && (((__u32)disk->major << 20) | (__u32)disk->first_minor) == dev;
}

SEC("tp_btf/block_io_start")
int BPF_PROG(block_io_start, struct request *rq)
{
	struct cauda_config *cfg = settings();
	__u64 key, now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid();
	struct req_times *t;

	if (!cfg)
		return 0;
	key = address_of(rq, cfg);
	t = request_of(key);
	/* An entry left by an earlier use of this request (its completion
	 * unseen) is counted so, and must not make this one count as ours. */
	if (t) {
		count_dropped(DROPPED_COMPLETION_UNSEEN);
		release(t);
	}
	if ((cfg->tgid && (id >> 32) != cfg->tgid) || (cfg->dev && !on_device(rq, cfg->dev)))
		return 0;
	t = claim(key, now);
	if (!t)
		return 0;
	t->start = now;
	t->issue = 0;
	t->tid = (__u32)id;
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(block_rq_issue, struct request *rq)
{
	struct cauda_config *cfg = settings();
	__u64 key, now = bpf_ktime_get_ns();
	struct req_times *t;

	if (!cfg)
		return 0;
	key = address_of(rq, cfg);
	t = request_of(key);
	if (t) {
		t->issue = now;
		return 0;
	}
	/* Not seen starting: with a process to attribute to, not ours. */
	if (cfg->tgid)
		return 0;
	if (cfg->dev && !on_device(rq, cfg->dev))
		return 0;
	t = claim(key, now);
	if (!t)
		return 0;
	t->start = 0;
	t->issue = now;
	t->tid = 0;
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(block_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	struct cauda_config *cfg = settings();
	__u64 now = bpf_ktime_get_ns(), start, issue;
	struct req_times *t;
	__u32 op, write, tid;

	if (!cfg)
		return 0;
	t = request_of(address_of(rq, cfg));
	if (!t)
		return 0;
	start = t->start;
	issue = t->issue;
	tid = t->tid;
	release(t);
	if (cfg->blame && issue && issue <= now && start <= issue)
		blame_request(tid, start, issue, now);
	/* Blame alone (its requests' times only): no series to record. */
	if (!cfg->block)
		return 0;
	op = rq->cmd_flags & REQ_OP_MASK;
	/* Stamps out of order would wrap: such a request (never seen) is
	 * counted with the other operations, not in a series. */
	if (issue > now || (start && start > issue)) {
		count_dropped(DROPPED_OTHER_OP);
	} else if (issue && op <= REQ_OP_WRITE) {
		write = op == REQ_OP_WRITE;
		record(cfg, BLOCK_DEVICE_READ + write, now, now - issue);
		if (start) {
			record(cfg, BLOCK_QUEUE_READ + write, now, issue - start);
			record(cfg, BLOCK_TOTAL_READ + write, now, now - start);
		}
	} else if (issue) {
		count_dropped(DROPPED_OTHER_OP);
	}
	return 0;
}

static __always_inline void enqueued(struct task_struct *p)
{
	__u32 tid = p->pid;
	__u64 now = bpf_ktime_get_ns();

	if (!tid)
		return;
	if (bpf_map_update_elem(&wakes, &tid, &now, BPF_ANY))
		count_dropped(DROPPED_WAKE_MAP_FULL);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup, struct task_struct *p)
{
	enqueued(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new, struct task_struct *p)
{
	enqueued(p);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct cauda_config *cfg;
	__u32 tid = next->pid;
	__u64 now, *since;

	/* Preempted (also while about to sleep: a preempted task stays on
	 * the run queue whatever its state) or yielding: waiting from now. */
	if (preempt || prev_state == TASK_RUNNING)
		enqueued(prev);
	if (!tid)
		return 0;
	since = bpf_map_lookup_elem(&wakes, &tid);
	cfg = settings();
	if (!since || !cfg)
		return 0;
	now = bpf_ktime_get_ns();
	if (now > *since) {
		record(cfg, RUNQ_HOST, now, now - *since);
		if (bpf_map_lookup_elem(&own, &tid))
			record(cfg, RUNQ_OWN, now, now - *since);
	}
	bpf_map_delete_elem(&wakes, &tid);
	return 0;
}
