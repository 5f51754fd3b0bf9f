/* blame.h - per-operation blame (--kernel blame), included by cauda.bpf.c.
 *
 * For each probe thread, cumulative counters of where its time went, in a
 * memory-mapped array (BPF_F_MMAPABLE) the thread reads itself with plain
 * loads at an operation's start and end: no system call, nothing per
 * event sent to user space. The thread writes its operation's intended
 * start into `window` first; time before it is not counted.
 *
 * The thread's own time is split by its state (running, runnable,
 * blocked; blocked time that a timer ended apart), and what happened on
 * its CPU meanwhile is taken out of that state's time into its cause:
 * hard-IRQ handlers (by IRQ), softirqs (by kind), the CPU's exit from an
 * idle state when the operation was due, and the hypervisor's steal clock.
 * Its own block requests' queue and device time split its blocked time in
 * user space. While it waits on a run queue, the tasks that hold its CPU
 * are written into a small ring (the culprits).
 *
 * A thread's CPU for per-CPU causes: the CPU it waits on when runnable,
 * else the CPU it last ran on (a sleeping pinned thread's own CPU). Two
 * blamed threads sharing a CPU: the latest one there gets that CPU's
 * interrupts.
 */
#ifndef CAUDA_BLAME_H
#define CAUDA_BLAME_H

#define BLAME_THREADS 256
#define BLAME_CPUS 1024
#define HOLDERS 8
#define IRQ_SLOTS 4
#define SOFTIRQS 10
#define SUSPECTS 3
#define TRAIL 8

/* A thread's state, as counted (the index into time[] and stolen[]). */
enum thread_state {
	STATE_UNKNOWN,
	STATE_RUNNING,
	STATE_RUNNABLE,
	STATE_BLOCKED,
	/* Blocked time that ended with a wake-up from a timer's callback. */
	STATE_BLOCKED_TIMER,
	/* time[] and stolen[] hold eight, so an index masked with 7 is in bounds. */
	STATE_SLOTS = 8,
};

/* A task that held a waiting thread's CPU. */
struct holder {
	__u64 seq;    /* 1, 2, ... in the order written (0: never written) */
	__u64 ns;     /* time it held the CPU inside the window */
	__u64 window; /* the window it was counted in */
	__u32 pid;
	__u32 pad;
	char comm[16];
};

/* The end of one of a thread's spans in a state (its trail). */
struct span_end {
	__u64 at;    /* the span ended then, and the next began */
	__u32 state; /* as counted (STATE_UNKNOWN: in no state, a switch went untraced) */
	__u32 pad;
};

/* One probe thread's counters, shared with user space (the layout is
 * src/host/trace/blame.rs's `Counters`). */
struct cauda_blame {
	__u64 window;      /* user space: the operation's intended start */
	__u64 seq;         /* bumped before and after every update */
	__u64 since;       /* entered `state` then */
	__u64 steal_since; /* its CPU's steal clock then */
	__u32 state;
	__u32 prev_state;
	__u32 cpu;
	__u32 idle_state; /* 1 + the idle state of the last idle exit counted */
	__u64 time[STATE_SLOTS];
	__u64 stolen[STATE_SLOTS]; /* of each state's time, what the causes took */
	__u64 irq_ns;
	__u64 irq_slot_ns[IRQ_SLOTS];
	__u32 irq[IRQ_SLOTS]; /* 1 + the IRQ numbers of the first four seen */
	__u64 softirq_ns[SOFTIRQS];
	__u64 idle_exit_ns;
	__u64 steal_ns;
	__u64 block_queue_ns;
	__u64 block_device_ns;
	__u64 requests;
	__u64 faults;
	__u64 holder_seq;
	/* Wake-ups of the thread while it was on a CPU although no switch to
	 * it was traced (it happens after a long halt of a vCPU): the time
	 * since its last traced change is not counted in any state. */
	__u64 missed;
	/* 1 + the pid of the task it last switched out to; and the first
	 * such tasks found at an untraced switch back to it, with how many of
	 * the untraced switches came after switching to each (the task the
	 * CPU ran while the kernel traced nothing). */
	__u32 left_to;
	__u32 suspect[SUSPECTS];
	__u64 suspect_missed[SUSPECTS];
	struct holder holders[HOLDERS];
	/* The ends of its last TRAIL spans (trail_n written in all): the
	 * spans inside a backlogged operation's window that ended before
	 * the window opened. */
	__u64 trail_n;
	struct span_end trail[TRAIL];
};

/* What each CPU is doing, for the per-CPU causes. */
struct cpu_blame {
	__u32 owner;  /* 1 + the slot of the blamed thread that last ran here */
	__u32 waiter; /* 1 + the slot of the blamed thread runnable here */
	__u64 curr_since;
	__u64 idle_since; /* 0: not idle */
	__u64 awake;      /* the first event after idle_since */
	__u64 irq_since;
	__u64 softirq_since;
	__u64 nested; /* hard-IRQ time inside the current softirq */
	/* What interrupts and softirqs here took from the waiting thread
	 * since it was woken or the CPU last switched: when the CPU then
	 * switches to it, that time was neither the idle exit nor the time
	 * of the task that held the CPU. */
	__u64 taken;
	__u32 idle_state;
	__u32 in_timer;
};

/* The layout src/host/trace/blame.rs's `Counters` reads. */
_Static_assert(__builtin_offsetof(struct cauda_blame, holders) == 416, "Counters.holders");
_Static_assert(__builtin_offsetof(struct cauda_blame, trail_n) == 800, "Counters.trail_n");
_Static_assert(sizeof(struct cauda_blame) == 936, "BLAME_COUNTER_BYTES");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, BLAME_THREADS);
	__type(key, __u32);
	__type(value, struct cauda_blame);
} blame SEC(".maps");

/* Thread id -> slot in `blame`, filled by user space before the run
 * (table.h; nothing is removed during a run, so a free place ends a
 * search). */
#define TID_BITS 10
struct tid_slot {
	__u32 tid;
	__u32 slot; /* 1 + the slot in `blame` */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << TID_BITS);
	__type(key, __u32);
	__type(value, struct tid_slot);
} blame_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BLAME_CPUS);
	__type(key, __u32);
	__type(value, struct cpu_blame);
} blame_cpus SEC(".maps");

/* 1 + the slot of thread `tid` in `blame`; 0 for a thread not blamed. */
static __always_inline __u32 slot_of(__u32 tid)
{
	__u32 at = spread(tid, TID_BITS), place;
	struct tid_slot *e;

	if (!tid)
		return 0;
	for (int i = 0; i < TABLE_PROBES; i++) {
		place = (at + i) & ((1 << TID_BITS) - 1);
		e = bpf_map_lookup_elem(&blame_slots, &place);
		if (!e || !e->tid)
			return 0;
		if (e->tid == tid)
			return e->slot;
	}
	return 0;
}

static __always_inline struct cauda_blame *in_slot(__u32 slot)
{
	__u32 at = slot - 1;

	return slot ? bpf_map_lookup_elem(&blame, &at) : NULL;
}

static __always_inline struct cauda_blame *blamed(__u32 tid)
{
	return in_slot(slot_of(tid));
}

static __always_inline struct cpu_blame *cpu_state(__u32 cpu)
{
	return bpf_map_lookup_elem(&blame_cpus, &cpu);
}

/* The blamed thread that this CPU's work delays, if any. */
static __always_inline struct cauda_blame *victim(struct cpu_blame *c, __u32 cpu)
{
	struct cauda_blame *b = in_slot(c->waiter ? c->waiter : c->owner);

	return b && b->cpu == cpu ? b : NULL;
}

/* The counters' sequence, bumped before and after every update (odd while
 * one is under way; user space copies until it reads one even value on
 * both sides of its copy). A fetching add: the kernel's memory model makes
 * it fully ordered on every architecture, where a plain atomic add orders
 * nothing on arm64, so the update's stores cannot pass it. */
static __always_inline void bump(struct cauda_blame *b)
{
	__u64 was = __sync_fetch_and_add(&b->seq, 1);

	barrier_var(was);
}

static __always_inline __u64 in_window(__u64 from, __u64 to, __u64 window)
{
	if (from < window)
		from = window;
	return to > from ? to - from : 0;
}

/* Where what interrupts and softirqs take from a waiting thread starts to
 * count against the task holding its CPU (`cpu_blame.taken`): its time in
 * its state, inside its window, as the holder's is counted. */
static __always_inline __u64 waited_from(struct cauda_blame *b)
{
	return b->since > b->window ? b->since : b->window;
}

/* The steal clock of the CPU whose run queue `t` is on, ns: as the run
 * queue's clock last took it (at every switch and wake-up, just before
 * the tracepoints), or, without that field, as the tick last took it. */
static __always_inline __u64 steal_clock(struct task_struct *t)
{
	struct rq *rq = t->se.cfs_rq->rq;

	if (!rq)
		return 0;
	if (bpf_core_field_exists(rq->prev_steal_time_rq))
		return rq->prev_steal_time_rq;
	return rq->prev_steal_time;
}

/* [from, to) inside the window was taken from the thread by a cause:
 * out of the state it was in then (the current one after `since`, the
 * previous one before). Returns the time taken. */
static __always_inline __u64 take(struct cauda_blame *b, __u64 from, __u64 to)
{
	__u64 lo = from < b->window ? b->window : from;
	__u64 split = lo < b->since ? b->since : lo;
	__u64 now_part, before;

	if (to <= lo)
		return 0;
	now_part = to > split ? to - split : 0;
	before = (to - lo) - now_part;
	__sync_fetch_and_add(&b->stolen[b->state & 7], now_part);
	__sync_fetch_and_add(&b->stolen[b->prev_state & 7], before);
	return to - lo;
}

/* The span the thread was in `state` ended at `at`. */
static __always_inline void trail_push(struct cauda_blame *b, __u32 state, __u64 at)
{
	__u64 n = b->trail_n;
	struct span_end *e = &b->trail[n & (TRAIL - 1)];

	e->at = at;
	e->state = state;
	b->trail_n = n + 1;
}

/* The thread enters `state` at `now`: its time in the state it leaves is
 * counted (inside the window), with the steal clock's advance meanwhile. */
static __always_inline void enter(struct cauda_blame *b, struct task_struct *t, __u32 state,
				  __u64 now, bool by_timer)
{
	__u64 steal = steal_clock(t), spent, stolen, whole;
	__u32 left = b->state;

	bump(b);
	if (left != STATE_UNKNOWN && left <= STATE_BLOCKED_TIMER && b->since) {
		if (left == STATE_BLOCKED && by_timer)
			left = STATE_BLOCKED_TIMER;
		spent = in_window(b->since, now, b->window);
		__sync_fetch_and_add(&b->time[left & 7], spent);
		if (spent && b->steal_since && steal > b->steal_since) {
			stolen = steal - b->steal_since;
			whole = now - b->since;
			if (spent < whole)
				stolen = stolen * spent / whole;
			if (stolen > spent)
				stolen = spent;
			__sync_fetch_and_add(&b->steal_ns, stolen);
			__sync_fetch_and_add(&b->stolen[left & 7], stolen);
		}
		trail_push(b, left, now);
	} else if (b->since != now) {
		/* (A repair at `now` already ended the span in no state.) */
		trail_push(b, STATE_UNKNOWN, now);
	}
	b->prev_state = b->state == STATE_UNKNOWN ? state : b->state;
	b->state = state;
	b->since = now;
	b->steal_since = steal;
	bump(b);
}

/* The thread runs though no switch to it was traced (it happens after a
 * long halt of a vCPU): from `now` it is counted again as running, and
 * the time since its last traced change is in no state (unexplained). */
static __always_inline void repair(struct cauda_blame *b, struct task_struct *t, __u64 now)
{
	bump(b);
	__sync_fetch_and_add(&b->missed, 1);
	for (int i = 0; i < SUSPECTS && b->left_to; i++) {
		if (!b->suspect[i])
			b->suspect[i] = b->left_to;
		if (b->suspect[i] == b->left_to) {
			__sync_fetch_and_add(&b->suspect_missed[i], 1);
			break;
		}
	}
	trail_push(b, STATE_UNKNOWN, now);
	b->prev_state = STATE_RUNNING;
	b->state = STATE_RUNNING;
	b->since = now;
	b->steal_since = steal_clock(t);
	bump(b);
}

/* Whether a blamed thread has ever run on this CPU or been woken onto it
 * (once watched, a CPU stays so): a CPU no probe thread uses (another
 * process's, a server's) needs no clock read at its idle transitions,
 * interrupts and softirqs. */
static __always_inline bool watched(struct cpu_blame *c)
{
	return c && (c->owner || c->waiter);
}

static __always_inline void mark_awake(struct cpu_blame *c, __u64 now)
{
	if (c->idle_since && !c->awake)
		c->awake = now;
}

/* An interrupt or softirq begins on a watched CPU: its start (the CPU's
 * first event since it went idle, if it did), or 0 on a CPU not watched. */
static __always_inline __u64 handler_entry(struct cpu_blame *c)
{
	__u64 now;

	if (!watched(c))
		return 0;
	now = bpf_ktime_get_ns();
	mark_awake(c, now);
	return now;
}

/* A task that is not a blamed thread held `c`'s CPU until `now`, while a
 * blamed thread waited there: one more culprit in its ring, with the time
 * it held the CPU less the interrupts and softirqs meanwhile (the idle
 * task is no culprit: that wait is the CPU's idle exit). */
static __always_inline void held(struct cpu_blame *c, __u32 cpu, struct task_struct *prev,
				 __u64 now)
{
	struct cauda_blame *b = in_slot(c->waiter);
	struct holder *h;
	__u64 from, ns, seq;

	if (!b || b->state != STATE_RUNNABLE || b->cpu != cpu)
		return;
	from = c->curr_since > b->since ? c->curr_since : b->since;
	ns = in_window(from, now, b->window);
	/* The interrupts and softirqs that ran meanwhile (ksoftirqd's too)
	 * are counted as theirs, not as the task's. */
	ns = ns > c->taken ? ns - c->taken : 0;
	if (!ns)
		return;
	bump(b);
	/* Woken onto an idle CPU: until the idle task switches to it, the
	 * CPU is still leaving its idle state. */
	if (prev->pid == 0) {
		__sync_fetch_and_add(&b->idle_exit_ns, take(b, now - ns, now));
		b->idle_state = c->idle_state + 1;
		bump(b);
		return;
	}
	seq = b->holder_seq + 1;
	h = &b->holders[seq & (HOLDERS - 1)];
	h->seq = seq;
	h->ns = ns;
	h->window = b->window;
	h->pid = prev->pid;
	bpf_probe_read_kernel_str(h->comm, sizeof(h->comm), prev->comm);
	b->holder_seq = seq;
	bump(b);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(blame_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 cpu = bpf_get_smp_processor_id();
	/* The idle task (0) is never a probe thread: slot_of(0) is 0. */
	__u32 prev_slot = slot_of(prev->pid), next_slot = slot_of(next->pid);
	struct cpu_blame *c = cpu_state(cpu);
	__u64 now;
	struct cauda_blame *b;

	/* Neither task blamed and no blamed thread waiting here: nothing to
	 * count (when one starts to wait, its own wake-up time bounds the
	 * culprit's, so the start of the task now running is not needed). */
	if (!c || (!prev_slot && !next_slot && !c->waiter))
		return 0;
	now = bpf_ktime_get_ns();
	b = in_slot(prev_slot);
	if (b) {
		bool waits = preempt || prev_state == TASK_RUNNING;

		/* Switched out, so it ran: a switch to it went untraced. */
		if (b->state != STATE_RUNNING && b->state != STATE_UNKNOWN)
			repair(b, prev, now);
		enter(b, prev, waits ? STATE_RUNNABLE : STATE_BLOCKED, now, false);
		b->left_to = next->pid + 1;
		if (waits)
			c->waiter = prev_slot;
	} else if (c->waiter) {
		held(c, cpu, prev, now);
	}
	b = in_slot(next_slot);
	if (b) {
		enter(b, next, STATE_RUNNING, now, false);
		b->cpu = cpu;
		c->owner = next_slot;
		if (c->waiter == next_slot)
			c->waiter = 0;
	}
	c->curr_since = now;
	c->taken = 0;
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(blame_wakeup, struct task_struct *p)
{
	__u32 slot = slot_of(p->pid), cpu;
	struct cpu_blame *c, *target;
	struct cauda_blame *b = in_slot(slot);

	if (!b)
		return 0;
	/* Woken on a CPU (before it slept): still running, nothing changes. */
	if (p->on_cpu && b->state == STATE_RUNNING)
		return 0;
	if (p->on_cpu) {
		repair(b, p, bpf_ktime_get_ns());
		return 0;
	}
	/* Woken while waiting for its CPU: still waiting. */
	if (b->state != STATE_BLOCKED && b->state != STATE_UNKNOWN)
		return 0;
	c = cpu_state(bpf_get_smp_processor_id());
	cpu = p->thread_info.cpu;
	enter(b, p, STATE_RUNNABLE, bpf_ktime_get_ns(), c && c->in_timer);
	b->cpu = cpu;
	target = cpu_state(cpu);
	if (target) {
		target->waiter = slot;
		target->taken = 0;
	}
	return 0;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(blame_irq_entry, int irq, struct irqaction *action)
{
	struct cpu_blame *c = cpu_state(bpf_get_smp_processor_id());
	__u64 now = handler_entry(c);

	if (now)
		c->irq_since = now;
	return 0;
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(blame_irq_exit, int irq, struct irqaction *action, int ret)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct cpu_blame *c = cpu_state(cpu);
	__u64 now, ns;
	struct cauda_blame *b;

	if (!c || !c->irq_since)
		return 0;
	now = bpf_ktime_get_ns();
	b = victim(c, cpu);
	if (b) {
		bump(b);
		ns = take(b, c->irq_since, now);
		c->taken += in_window(c->irq_since, now, waited_from(b));
		if (ns) {
			__sync_fetch_and_add(&b->irq_ns, ns);
			for (int i = 0; i < IRQ_SLOTS; i++) {
				if (b->irq[i] == (__u32)irq + 1) {
					__sync_fetch_and_add(&b->irq_slot_ns[i], ns);
					break;
				}
				if (!b->irq[i]) {
					b->irq[i] = (__u32)irq + 1;
					__sync_fetch_and_add(&b->irq_slot_ns[i], ns);
					break;
				}
			}
			if (c->softirq_since)
				c->nested += ns;
		}
		bump(b);
	}
	c->irq_since = 0;
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(blame_softirq_entry, unsigned int vec)
{
	struct cpu_blame *c = cpu_state(bpf_get_smp_processor_id());
	__u64 now = handler_entry(c);

	if (now) {
		c->softirq_since = now;
		c->nested = 0;
	}
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(blame_softirq_exit, unsigned int vec)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct cpu_blame *c = cpu_state(cpu);
	__u64 now, ns;
	struct cauda_blame *b;

	if (!c || !c->softirq_since)
		return 0;
	now = bpf_ktime_get_ns();
	b = victim(c, cpu);
	if (b && vec < SOFTIRQS) {
		bump(b);
		/* Hard IRQs inside it are counted as theirs. */
		ns = take(b, c->softirq_since + c->nested, now);
		c->taken += in_window(c->softirq_since + c->nested, now, waited_from(b));
		__sync_fetch_and_add(&b->softirq_ns[vec], ns);
		bump(b);
	}
	c->softirq_since = 0;
	return 0;
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(blame_hrtimer_entry, void *timer, void *now_arg)
{
	struct cpu_blame *c = cpu_state(bpf_get_smp_processor_id());

	if (c) {
		/* The clock only when it is the CPU's first event after idle. */
		if (c->idle_since && !c->awake)
			c->awake = bpf_ktime_get_ns();
		c->in_timer = 1;
	}
	return 0;
}

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(blame_hrtimer_exit, void *timer)
{
	struct cpu_blame *c = cpu_state(bpf_get_smp_processor_id());

	if (c)
		c->in_timer = 0;
	return 0;
}

SEC("tp_btf/cpu_idle")
int BPF_PROG(blame_cpu_idle, unsigned int state, unsigned int cpu_id)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct cpu_blame *c = cpu_state(cpu);
	__u64 now, awake, ns;
	struct cauda_blame *b;

	if (!watched(c))
		return 0;
	now = bpf_ktime_get_ns();
	if (state != (unsigned int)-1) {
		c->idle_since = now;
		c->idle_state = state;
		c->awake = 0;
		return 0;
	}
	if (!c->idle_since)
		return 0;
	awake = c->awake ? c->awake : now;
	b = victim(c, cpu);
	/* Due while the CPU was idle: the time until it woke. */
	if (b && b->window > c->idle_since && awake > b->window) {
		bump(b);
		ns = take(b, b->window, awake);
		__sync_fetch_and_add(&b->idle_exit_ns, ns);
		b->idle_state = c->idle_state + 1;
		bump(b);
	}
	c->idle_since = 0;
	return 0;
}

static __always_inline void faulted(void)
{
	struct cauda_blame *b = blamed((__u32)bpf_get_current_pid_tgid());

	if (b && bpf_ktime_get_ns() >= b->window)
		__sync_fetch_and_add(&b->faults, 1);
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(blame_fault_user, unsigned long address, struct pt_regs *regs, unsigned long error)
{
	faulted();
	return 0;
}

SEC("tp_btf/page_fault_kernel")
int BPF_PROG(blame_fault_kernel, unsigned long address, struct pt_regs *regs,
	     unsigned long error)
{
	faulted();
	return 0;
}

/* A completed block request of a blamed thread: its queue and device time
 * inside the thread's window. */
static __always_inline void blame_request(__u32 tid, __u64 start, __u64 issue, __u64 now)
{
	struct cauda_blame *b = blamed(tid);
	__u64 queue, device;

	if (!b)
		return;
	queue = start ? in_window(start, issue, b->window) : 0;
	device = in_window(issue, now, b->window);
	if (!queue && !device)
		return;
	bump(b);
	__sync_fetch_and_add(&b->block_queue_ns, queue);
	__sync_fetch_and_add(&b->block_device_ns, device);
	__sync_fetch_and_add(&b->requests, 1);
	bump(b);
}

#endif
