/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory barriers of the mlx5 data path, one per role, from UCX's
 * ucs/arch/cpu.h; each orders what rdma-core's providers/mlx5 orders at the
 * same place (util/udma_barrier.h: udma_to_device_barrier,
 * udma_from_device_barrier, mmio_flush_writes).
 *
 * UCX has two families: cpu fences order memory between CPUs, bus fences
 * between a CPU and devices. On x86 (TSO) stores reach coherent memory in
 * order and loads are not reordered with loads, so for DMA-coherent memory
 * rdma-core, and UCX's cpu fences, use a compiler barrier there; a bus
 * fence is sfence / lfence, which only write-combining memory needs.
 * Elsewhere the cpu fences are too weak for a device (Arm: inner-shareable
 * dmb; POWER: lwsync) and the bus fences are what rdma-core uses (Arm:
 * outer-shareable dmb; POWER: sync).
 */
#ifndef STRAND_MLX5_BARRIER_H_
#define STRAND_MLX5_BARRIER_H_

#include <ucs/arch/cpu.h>

#if defined(__x86_64__)
/* Stores the device will read (a WQE, an SRQ WQE's next pointer) before
 * the doorbell record that tells it of them. */
#define strand_dma_wmb() ucs_memory_cpu_store_fence()
/* A CQE's ownership byte before the rest of it (the device wrote the rest
 * first). */
#define strand_dma_rmb() ucs_memory_cpu_load_fence()
#else
#define strand_dma_wmb() ucs_memory_bus_store_fence()
#define strand_dma_rmb() ucs_memory_bus_load_fence()
#endif

/* Stores to coherent memory (a doorbell record) before a store to the
 * UAR page (the BlueFlame or doorbell register: write-combining or device
 * memory), and that store pushed out of the write-combining buffer before
 * the next: x86 sfence, Arm dmb oshst, POWER sync. UCX puts it between its
 * record and its register, rdma-core its mmio_wc_start and
 * mmio_flush_writes around the register write. */
#define strand_mmio_wmb() ucs_memory_bus_store_fence()

#endif
