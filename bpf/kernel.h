/* kernel.h - the few kernel types and constants cauda.bpf.c reads.
 *
 * Only the fields used, marked preserve_access_index: libbpf-style CO-RE
 * relocations find each field in the running kernel's BTF by name, so the
 * object needs no vmlinux.h of one kernel build.
 */
#ifndef CAUDA_KERNEL_H
#define CAUDA_KERNEL_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
#define true 1
#define false 0

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_LRU_HASH = 9,
};
#define BPF_ANY 0
#define BPF_F_MMAPABLE (1U << 10)

/* include/linux/blk_types.h: the operation is the low 8 bits of cmd_flags. */
#define REQ_OP_MASK 0xff
#define REQ_OP_READ 0
#define REQ_OP_WRITE 1
/* include/linux/sched.h */
#define TASK_RUNNING 0

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)
struct gendisk {
	int major;
	int first_minor;
};
struct block_device {
	__u32 bd_dev;
};
struct request_queue {
	struct gendisk *disk;
};
struct request {
	struct request_queue *q;
	unsigned int cmd_flags;
	struct block_device *part;
};
struct thread_info {
	__u32 cpu;
};
struct rq {
	__u64 prev_steal_time;
	__u64 prev_steal_time_rq;
};
struct cfs_rq {
	struct rq *rq;
};
struct sched_entity {
	struct cfs_rq *cfs_rq;
};
struct task_struct {
	struct thread_info thread_info;
	int on_cpu;
	int pid;
	int tgid;
	char comm[16];
	struct sched_entity se;
};
struct irqaction {
	const char *name;
};
struct pt_regs;
#pragma clang attribute pop

#endif
