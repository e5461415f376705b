/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory barriers of the mlx5 data path (the roles rdma-core calls
 * udma_to_device_barrier / udma_from_device_barrier / mmio_wc_start /
 * mmio_flush_writes). x86 keeps stores in order and loads in order, so the
 * first two are compiler barriers there; write-combining memory (the
 * BlueFlame register) still needs sfence. Elsewhere C11 fences.
 */
#ifndef STRAND_MLX5_BARRIER_H_
#define STRAND_MLX5_BARRIER_H_

#if defined(__x86_64__) || defined(__i386__)
/* WQE / doorbell-record stores before later stores the device may see */
#define strand_wmb()      __asm__ __volatile__("" ::: "memory")
/* ownership check before reading the rest of a CQE */
#define strand_rmb()      __asm__ __volatile__("" ::: "memory")
/* order normal stores before / flush stores to write-combining memory */
#define strand_wc_wmb()   __asm__ __volatile__("sfence" ::: "memory")
#elif defined(__aarch64__)
#define strand_wmb()      __asm__ __volatile__("dmb oshst" ::: "memory")
#define strand_rmb()      __asm__ __volatile__("dmb oshld" ::: "memory")
#define strand_wc_wmb()   __asm__ __volatile__("dsb st" ::: "memory")
#else
#define strand_wmb()      __atomic_thread_fence(__ATOMIC_RELEASE)
#define strand_rmb()      __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define strand_wc_wmb()   __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

#endif
