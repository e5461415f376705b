/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A tag-matching SRQ's state, shared by its two halves: the list and the
 * matching of arriving messages (sim_tm.c, a part of the responder's and
 * the requester's work) and the device's own queues with the rendezvous
 * reads they carry (sim_tm_dci.c, run by the engine and the SRQ's life
 * cycle).
 */
#ifndef SIM_SIM_TM_H_
#define SIM_SIM_TM_H_

#include "sim.h"

#define SIM_TM_NONE     UINT32_MAX
#define SIM_TM_DCI_WQES 256
/* the device's DCI: 4.096us * 2^14 = 67 ms per try, 7 retries */
#define SIM_TM_DCI_TIMEOUT 14
#define SIM_TM_DCI_RETRY   7

typedef struct sim_tm_slot {
    bool     valid; /* in the list, may match */
    uint64_t tag, mask;
    uint64_t addr;
    uint32_t len, lkey;
    uint32_t prev, next; /* append order */
} sim_tm_slot_t;

/* A matched rendezvous: read from the sender, then FIN. */
typedef struct sim_tm_rndv {
    uint32_t slot;
    uint16_t lid;
    uint32_t dctn;
    uint64_t key;
    uint64_t va;
    uint32_t rkey, len;
    uint32_t app_ctx; /* network order, as in the TMH */
    uint64_t tag;     /* network order */
    bool     read_done;
} sim_tm_rndv_t;

typedef struct sim_tm {
    smlx5_srq_t   *srq;
    smlx5_qp_t    *cmd_qp;
    smlx5_qp_t    *dci;    /* rendezvous READ / FIN */
    smlx5_cq_t    *dci_cq; /* never written: the device takes them */
    smlx5_td_t    *dci_td; /* its register: the device's own */
    sim_tm_slot_t *slots;
    uint32_t       num_slots;
    uint32_t       append_ptr;
    uint32_t       head, tail; /* valid entries, append order */
    uint16_t       hw_unexp;   /* unexpected messages delivered */
    uint16_t       sw_cnt;     /* the count software last reported */
    /* rendezvous: waiting to be posted (ring), and per DCI WQE (by BB) */
    sim_tm_rndv_t *pending;
    uint32_t       pend_head, pend_tail, pend_size;
    sim_tm_rndv_t *by_bb;
    bool           work; /* counted in ctx->tm_work */
} sim_tm_t;

/* Whether the SRQ has rendezvous work waiting (counted in ctx->tm_work,
 * which the engine looks at) */
void sim_tm_work(sim_tm_t *tm, bool on);

#endif
