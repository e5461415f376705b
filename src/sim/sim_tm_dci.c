/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device's own queues of a tag-matching SRQ: created and destroyed
 * with it (its list-operation QP, and a DCI with a CQ and a register of
 * its own), and the engine's stage that posts the rendezvous READs and
 * FINs the matching queued on that DCI (sim_tm_engine). It sits above the
 * requester and the QP state machine, which it drives as an application
 * would; the matching below it only queues work (sim_tm_work).
 */
#include "sim.h"
#include "sim_tm.h"

#include "mlx5/tm.h"
#include "mlx5/wqe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The address vector of the sender's DCT (from the LID the request came
 * from: on Ethernet its GID and MAC, as the device's own GID table makes
 * them). */
static unsigned
sim_tm_av(smlx5_context_t *ctx, const sim_tm_rndv_t *r, struct mlx5_wqe_av *av)
{
    memset(av, 0, sizeof(*av));
    av->key.dc_key = htobe64(r->key);
    if (!sim_av_for_lid(ctx, r->lid, av)) {
        av->dqp_dct = htobe32(r->dctn & 0xffffff);
        return 1;
    }
    av->dqp_dct = htobe32(MLX5_EXTENDED_UD_AV | (r->dctn & 0xffffff));
    return 3;
}

/* Post one WQE (READ into the tag's buffer, or the FIN) on the device's
 * DCI. */
static void sim_tm_rndv_post(sim_tm_t *tm, const sim_tm_rndv_t *r, bool fin)
{
    smlx5_qp_t               *dci = tm->dci;
    const sim_tm_slot_t      *s   = &tm->slots[r->slot];
    struct mlx5_wqe_ctrl_seg *ctrl;
    struct ibv_tmh            tmh;
    struct ibv_sge            sge;
    unsigned                  ds;
    void                     *seg;

    ctrl = strand_sq_ctrl(&dci->sq);
    ds   = 1 + sim_tm_av(dci->ctx, r, (struct mlx5_wqe_av *)(ctrl + 1));
    seg  = strand_sq_seg_next(&dci->sq, ctrl + 1, (ds - 1) * STRAND_WQE_DS);
    if (!fin) {
        strand_set_raddr_seg(seg, r->va, r->rkey);
        seg = strand_sq_seg_next(&dci->sq, seg, STRAND_WQE_DS);
        strand_set_data_seg(seg, s->addr, r->len, s->lkey);
        ds += 2;
    } else {
        memset(&tmh, 0, sizeof(tmh));
        tmh.opcode  = IBV_TMH_FIN;
        tmh.app_ctx = r->app_ctx;
        tmh.tag     = r->tag;
        sge.addr    = (uintptr_t)&tmh;
        sge.length  = sizeof(tmh);
        ds += strand_set_inline_seg(seg, &sge, 1, dci->sq.buf, dci->sq.end,
                                    NULL);
    }
    strand_sq_set_ctrl(&dci->sq, ctrl, 0,
                       fin ? MLX5_OPCODE_SEND : MLX5_OPCODE_RDMA_READ, ds,
                       MLX5_WQE_CTRL_CQ_UPDATE, 0);
    tm->by_bb[dci->sq.cur_post & (dci->sq.wqe_cnt - 1)]           = *r;
    tm->by_bb[dci->sq.cur_post & (dci->sq.wqe_cnt - 1)].read_done = fin;
    strand_sq_advance(&dci->sq, strand_ds_to_bbs(ds));
    strand_sq_ring(&dci->sq, ctrl, strand_ds_to_bbs(ds));
    sim_qp_told(dci); /* the device's own queue: no doorbell needed */
}

static bool sim_tm_dci_room(const sim_tm_t *tm)
{
    const smlx5_qp_t *dci = tm->dci;

    /* a WQE is at most 2 BBs (ctrl, full AV, raddr, data) */
    return (dci->sq.cur_post - dci->sq_completed) + 2 <= dci->sq.wqe_cnt;
}

/* Back to RTS once every WQE of the failed DCI came back. */
static int sim_tm_dci_recover(sim_tm_t *tm)
{
    smlx5_qp_t        *dci = tm->dci;
    struct ibv_qp_attr a;
    int                ret;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RESET;
    ret        = smlx5_modify_qp(dci, &a, IBV_QP_STATE);
    if (ret == 0) {
        ret = sim_tm_dci_to_rts(dci);
    }
    return ret;
}

/* Rendezvous work that waits: post what the DCI has room for. Called from
 * the engine (never from inside the DCI's own completion processing). */
static void sim_tm_rndv_run(sim_tm_t *tm)
{
    smlx5_qp_t *dci = tm->dci;

    if (dci->state == IBV_QPS_ERR) {
        if (dci->sq_completed != dci->sq_fetched) {
            return; /* flushes still to come */
        }
        if (sim_tm_dci_recover(tm) != 0) {
            return;
        }
    }
    while ((tm->pend_head != tm->pend_tail) && sim_tm_dci_room(tm)) {
        sim_tm_rndv_t *r = &tm->pending[tm->pend_head++ % tm->pend_size];
        sim_tm_rndv_post(tm, r, r->read_done);
    }
    sim_req_process(dci);
    if (tm->pend_head == tm->pend_tail) {
        sim_tm_work(tm, false);
    }
}

void sim_tm_engine(smlx5_context_t *ctx)
{
    unsigned i;

    for (i = 1; (i < SIM_MAX_SRQS) && (ctx->tm_work > 0); ++i) {
        if ((ctx->srqs[i] != NULL) && (ctx->srqs[i]->tm != NULL) &&
            ctx->srqs[i]->tm->work) {
            sim_tm_rndv_run(ctx->srqs[i]->tm);
        }
    }
}

/* ---------------------------------------------------- life cycle */

int sim_tm_dci_to_rts(smlx5_qp_t *dci)
{
    struct ibv_qp_attr a;
    int                ret;

    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.port_num = SMLX5_PORT_NUM;
    ret        = smlx5_modify_qp(dci, &a,
                                 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT);
    if (ret != 0) {
        return ret;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    /* the port's MTU: a READ response per MTU, as the user's DCIs get */
    a.path_mtu          = (dci->ctx->cfg.mtu >= 4096) ? IBV_MTU_4096 :
                          (dci->ctx->cfg.mtu >= 2048) ? IBV_MTU_2048 :
                          (dci->ctx->cfg.mtu >= 1024) ? IBV_MTU_1024 :
                          (dci->ctx->cfg.mtu >= 512)  ? IBV_MTU_512 :
                                                        IBV_MTU_256;
    a.ah_attr.port_num  = SMLX5_PORT_NUM;
    a.ah_attr.is_global = sim_port_is_eth(dci->ctx);
    ret = smlx5_modify_qp(dci, &a, IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_AV);
    if (ret != 0) {
        return ret;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state      = IBV_QPS_RTS;
    a.timeout       = SIM_TM_DCI_TIMEOUT;
    a.retry_cnt     = SIM_TM_DCI_RETRY;
    a.rnr_retry     = 7;
    a.max_rd_atomic = 16;
    return smlx5_modify_qp(dci, &a,
                           IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
                                   IBV_QP_SQ_PSN);
}

int sim_tm_create(smlx5_srq_t *srq, uint32_t max_ops, smlx5_td_t *td)
{
    smlx5_qp_init_attr_t init;
    sim_tm_t            *tm;
    uint32_t             i;

    tm = calloc(1, sizeof(*tm));
    if (tm == NULL) {
        return ENOMEM;
    }
    tm->srq       = srq;
    tm->num_slots = srq->max_num_tags + 1;
    tm->slots     = calloc(tm->num_slots, sizeof(*tm->slots));
    tm->pend_size = 2 * tm->num_slots;
    tm->pending   = calloc(tm->pend_size, sizeof(*tm->pending));
    tm->head = tm->tail = SIM_TM_NONE;
    if ((tm->slots == NULL) || (tm->pending == NULL)) {
        goto err;
    }
    for (i = 0; i < tm->num_slots; ++i) {
        tm->slots[i].prev = tm->slots[i].next = SIM_TM_NONE;
    }

    /* the command QP: a send queue of list operations, in RTS */
    memset(&init, 0, sizeof(init));
    init.type             = SMLX5_QPT_RC;
    init.send_cq          = srq->tm_cq;
    init.recv_cq          = srq->tm_cq;
    init.cap.max_send_wr  = max_ops;
    init.cap.max_send_sge = 1;
    init.td               = td; /* the data path rings it */
    tm->cmd_qp            = smlx5_create_qp(srq->pd, &init);
    if (tm->cmd_qp == NULL) {
        goto err;
    }
    tm->cmd_qp->state  = IBV_QPS_RTS;
    tm->cmd_qp->tm_cmd = tm;

    /* the DCI rendezvous READs and FINs go out on */
    tm->dci_cq = smlx5_create_cq(srq->ctx, SIM_TM_DCI_WQES * 2, NULL);
    if (tm->dci_cq == NULL) {
        goto err;
    }
    /* the device's own: on a NIC no doorbell at all; here one rung by
     * whichever thread runs the engine, on a register of its own */
    tm->dci_td = smlx5_alloc_td(srq->ctx);
    if (tm->dci_td == NULL) {
        goto err;
    }
    memset(&init, 0, sizeof(init));
    init.type                = SMLX5_QPT_DCI;
    init.send_cq             = tm->dci_cq;
    init.cap.max_send_wr     = SIM_TM_DCI_WQES;
    init.cap.max_send_sge    = 1;
    init.cap.max_inline_data = 64;
    init.td                  = tm->dci_td;
    tm->dci                  = smlx5_create_qp(srq->pd, &init);
    if ((tm->dci == NULL) || (sim_tm_dci_to_rts(tm->dci) != 0)) {
        goto err;
    }
    tm->by_bb = calloc(tm->dci->sq_wqe_cnt, sizeof(*tm->by_bb));
    if (tm->by_bb == NULL) {
        goto err;
    }
    tm->dci->tm_rndv = tm;
    srq->tm          = tm;
    return 0;

err:
    srq->tm = tm;
    sim_tm_destroy(srq);
    return ENOMEM;
}

void sim_tm_destroy(smlx5_srq_t *srq)
{
    sim_tm_t *tm = srq->tm;

    if (tm == NULL) {
        return;
    }
    sim_tm_work(tm, false);
    if (tm->dci != NULL) {
        tm->dci->tm_rndv = NULL;
        smlx5_destroy_qp(tm->dci);
    }
    if (tm->dci_cq != NULL) {
        smlx5_destroy_cq(tm->dci_cq);
    }
    if (tm->dci_td != NULL) {
        smlx5_dealloc_td(tm->dci_td);
    }
    if (tm->cmd_qp != NULL) {
        tm->cmd_qp->tm_cmd = NULL;
        smlx5_destroy_qp(tm->cmd_qp);
    }
    free(tm->slots);
    free(tm->pending);
    free(tm->by_bb);
    free(tm);
    srq->tm = NULL;
}

smlx5_qp_t *smlx5_srq_cmd_qp(smlx5_srq_t *srq)
{
    return (srq->tm != NULL) ? srq->tm->cmd_qp : NULL;
}
