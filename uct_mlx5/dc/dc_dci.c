/*
 * DCIs: creation, the SQ's slots of outstanding WQEs, send completions
 * (matched to their WQE by QP number and WQE counter, so that CQEs of
 * different streams may come in any order), the pool's state for VFS.
 * Leases are dc_policy.c's, errors dc_recovery.c's.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dc_dci.h"

#include <inttypes.h>
#include "dc_ep.h"
#include "dc_policy.h"
#include "dc_recovery.h"
#include "dc_integrity.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/datastruct/mpool.inl>
#include <ucs/datastruct/queue.h>
#include <ucs/arch/bitops.h>

#include <string.h>

/* room_pi (strand_dc_dci_fast_room): the last producer index at which a
 * WQE of the largest size fits, and at which the WQEs posted from now on
 * (a BB each at least) leave the count below tx_queue_len. */
static void strand_dc_dci_set_room(strand_dc_iface_t *iface,
                                   strand_dc_dci_t *dci)
{
    uint32_t bbs_pi  = dci->sq_tail + dci->sq.wqe_cnt -
                       iface->config.dci_max_bbs;
    uint32_t wqes_pi = dci->sq.cur_post +
                       (iface->config.tx_queue_len - dci->outstanding) - 1;

    dci->room_pi = ((int32_t)(wqes_pi - bbs_pi) < 0) ? wqes_pi : bbs_pi;
}

/* Whether s takes work: its held WQEs are posted again only then. */
static int strand_dc_stream_open(const strand_dc_dci_t *dci,
                                 const strand_dc_stream_t *s)
{
    return (dci->state == STRAND_DC_DCI_ACTIVE) &&
           (s->state == STRAND_DC_STREAM_OK);
}

void strand_dc_dci_set_state(strand_dc_iface_t *iface, strand_dc_dci_t *dci,
                             strand_dc_dci_state_t state)
{
    unsigned i;

    if (dci->state == state) {
        return;
    }
    for (i = 0; (state != STRAND_DC_DCI_ACTIVE) &&
                (i < iface->config.num_streams); ++i) {
        dci->streams[i].closures += strand_dc_stream_open(dci,
                                                          &dci->streams[i]);
    }
    dci->state = state;
    strand_dc_ep_tx_update_dci(iface, dci);
}

void strand_dc_stream_set_state(strand_dc_iface_t *iface,
                                strand_dc_dci_t *dci, strand_dc_stream_t *s,
                                strand_dc_stream_state_t state)
{
    if (s->state != state) {
        s->closures += (state != STRAND_DC_STREAM_OK) &&
                       strand_dc_stream_open(dci, s);
        s->state     = state;
        strand_dc_ep_tx_update_dci(iface, dci);
    }
}

void strand_dc_dci_geometry(strand_dc_iface_t *iface, strand_dc_dci_t *dci)
{
    strand_sq_init(&dci->sq, &dci->qp.dv, dci->qp.qpn,
                   (strand_mmio_mode_t)iface->md->mmio_mode);
    dci->op_delta     = (uintptr_t)dci->ops - (uintptr_t)dci->sq.buf;
    dci->sq_tail      = 0;
    dci->moderation   = iface->tx_moderation;
    dci->ce_countdown = dci->moderation;
    dci->outstanding  = 0;
    strand_dc_dci_set_room(iface, dci);
}

/* A queue of wqe_cnt BBs came: unsignaled WQEs of the largest size fill
 * at most a quarter of it. If that lowers the interface's moderation, the
 * countdown of each queue is what the WQEs it posted since its last CQE
 * leave of the new one (at least one more). */
static void strand_dc_dci_moderation_fit(strand_dc_iface_t *iface,
                                         uint32_t wqe_cnt)
{
    unsigned m = ucs_max(1, ucs_min(iface->tx_moderation,
                                    wqe_cnt /
                                    (4 * iface->config.dci_max_bbs)));
    strand_dc_dci_t *dci;
    unsigned i, unsignaled;

    if (m == iface->tx_moderation) {
        return;
    }
    for (i = 0; i < iface->dci_hwm; ++i) {
        dci = &iface->dcis[i];
        if (dci->qp.h == NULL) {
            continue;
        }
        unsignaled        = strand_dc_dci_unsignaled(dci);
        dci->moderation   = m;
        dci->ce_countdown = (unsignaled < m) ? m - unsignaled : 1;
    }
    iface->tx_moderation = m;
}

/* A slot of the pool: streams, no QP yet. */
ucs_status_t strand_dc_dci_slot_init(strand_dc_iface_t *iface,
                                     strand_dc_dci_t *dci, unsigned i)
{
    unsigned s;

    dci->index   = i;
    dci->home    = 0;
    ucs_list_head_init(&dci->waiters);
    dci->state   = STRAND_DC_DCI_FREE;
    dci->streams = ucs_calloc(iface->config.num_streams,
                              sizeof(*dci->streams), "strand_dc_streams");
    if (dci->streams == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    for (s = 0; s < iface->config.num_streams; ++s) {
        /* the stream ids are the DCI's channels 0 .. 2^log_concurent - 1,
         * as UCX numbers them: the hardware maps an id onto its channel
         * and refuses one outside the range (spec section 9). Without
         * streams the one slot writes 0, what a DCI without streams takes.
         * Whether an ep has a stream is its own state (ep->dci), never an
         * id. */
        dci->streams[s].id = (uint16_t)s;
        ucs_queue_head_init(&dci->streams[s].held);
    }
    return UCS_OK;
}

ucs_status_t strand_dc_dci_attach_qp(strand_dc_iface_t *iface,
                                     strand_dc_dci_t *dci)
{
    strand_dev_t *dev = iface->dev;
    khiter_t it;
    int ret;

    it = kh_put(strand_dc_qpn, &iface->dci_by_qpn, dci->qp.qpn, &ret);
    if (ret <= 0) {
        ucs_error("%s: send queue %u: QP number 0x%x is not unique",
                  dev->info.name, dci->index, dci->qp.qpn);
        return UCS_ERR_IO_ERROR;
    }
    kh_value(&iface->dci_by_qpn, it) = dci->index;
    strand_dc_dci_geometry(iface, dci);
    if (dci->sq.wqe_cnt < iface->config.dci_max_bbs) {
        ucs_error("%s: send queue of %u BBs is too small",
                  dev->info.name, dci->sq.wqe_cnt);
        return UCS_ERR_INVALID_PARAM;
    }
    strand_dc_dci_moderation_fit(iface, dci->sq.wqe_cnt);
    dci->ops      = ucs_calloc(dci->sq.wqe_cnt, sizeof(*dci->ops),
                               "strand_dc_ops");
    dci->op_delta = (uintptr_t)dci->ops - (uintptr_t)dci->sq.buf;
    return (dci->ops == NULL) ? UCS_ERR_NO_MEMORY : UCS_OK;
}

void strand_dc_dci_detach_qp(strand_dc_iface_t *iface, strand_dc_dci_t *dci)
{
    khiter_t it;

    if (dci->qp.h == NULL) {
        return;
    }
    it = kh_get(strand_dc_qpn, &iface->dci_by_qpn, dci->qp.qpn);
    if (it != kh_end(&iface->dci_by_qpn)) {
        kh_del(strand_dc_qpn, &iface->dci_by_qpn, it);
    }
    iface->dev->ops->destroy_qp(iface->dev, &dci->qp);
    dci->qp.h = NULL;
    ucs_free(dci->ops);
    dci->ops = NULL;
    ucs_free(dci->held_db);
    dci->held_db = NULL;
}

/* ------------------------------------------------ held doorbells */

ucs_status_t strand_dc_dci_hold(strand_dc_dci_t *dci)
{
    if (ucs_posix_memalign(&dci->held_db, 64,
                           STRAND_SQ_HOLD_SIZE(dci->sq.bf_size),
                           "strand_sq_held") != 0) {
        dci->held_db = NULL;
        return UCS_ERR_NO_MEMORY;
    }
    strand_sq_hold(&dci->sq, dci->held_db);
    dci->held_kick = dci->qp.kick;
    dci->qp.kick   = NULL;
    return UCS_OK;
}

/* The device hears of every WQE held (a connected QP executes them, one
 * in ERR flushes them). */
static void strand_dc_dci_unhold(strand_dc_dci_t *dci)
{
    if (dci->held_db == NULL) {
        return;
    }
    dci->qp.kick = dci->held_kick;
    if (strand_sq_release(&dci->sq, &dci->qp.dv)) {
        strand_dev_qp_kick(&dci->qp);
    }
    ucs_free(dci->held_db);
    dci->held_db = NULL;
}

void strand_dc_dci_held_abort(strand_dc_iface_t *iface, strand_dc_dci_t *dci)
{
    int err;

    if (dci->held_db == NULL) {
        return; /* released: its own errors tell */
    }
    if (dci->outstanding > 0) {
        /* nothing held ran: ERR flushes each, a CQE apiece */
        err = iface->dev->ops->qp_to_err(iface->dev, &dci->qp);
        if (err == 0) {
            strand_dc_dci_set_state(iface, dci, STRAND_DC_DCI_DRAINING);
        } else {
            ucs_error("%s: QP 0x%x whose doorbells were held: to ERR: %s",
                      iface->dev->info.name, dci->qp.qpn, strerror(err));
            strand_dc_dci_set_state(iface, dci, STRAND_DC_DCI_BROKEN);
        }
    }
    strand_dc_dci_unhold(dci);
}

static ucs_status_t strand_dc_dci_create(strand_dc_iface_t *iface,
                                         strand_dc_dci_t *dci, unsigned i)
{
    strand_dev_t *dev = iface->dev;
    ucs_status_t status;
    int err;

    status = strand_dc_dci_slot_init(iface, dci, i);
    if (status != UCS_OK) {
        return status;
    }
    err = dev->ops->create_dci(dev, &iface->dci_attr, &dci->qp);
    if (err != 0) {
        ucs_error("%s: failed to create DCI %u: %s", dev->info.name, i,
                  strerror(err));
        dci->qp.h = NULL;
        return UCS_ERR_IO_ERROR;
    }
    return strand_dc_dci_attach_qp(iface, dci);
}

ucs_status_t strand_dc_dci_pool_init(strand_dc_iface_t *iface)
{
    kh_init_inplace(strand_dc_qpn, &iface->dci_by_qpn);
    iface->dcis = ucs_calloc(iface->num_dci, sizeof(*iface->dcis),
                             "strand_dc_dcis");
    if (iface->dcis == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    /* the transport's queues at open (dc_strand: every DCI; rc_strand's
     * come with its endpoints) */
    return iface->tl->sq_open(iface);
}

/* dc_strand's send queues: the DCT that receives, every DCI of the pool
 * and the policy's free stack. */
ucs_status_t strand_dc_sq_open(strand_dc_iface_t *iface)
{
    ucs_status_t status;
    unsigned i;

    status = strand_dc_iface_dct_open(iface);
    if (status != UCS_OK) {
        return status;
    }
    iface->dci_stack = ucs_calloc(iface->num_dci, sizeof(*iface->dci_stack),
                                  "strand_dc_dci_stack");
    if (iface->dci_stack == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    for (i = 0; i < iface->num_dci; ++i) {
        iface->dci_hwm = i + 1; /* cleaned up, made or not */
        status = strand_dc_dci_create(iface, &iface->dcis[i], i);
        if (status != UCS_OK) {
            return status;
        }
    }
    return strand_dc_policy_init(iface);
}

void strand_dc_tmp_reg_release(strand_dc_iface_t *iface,
                               strand_dc_tmp_reg_t *reg)
{
    unsigned i;

    for (i = 0; i < reg->count; ++i) {
        uct_md_mem_dereg(&iface->md->super, reg->memh[i]);
    }
    ucs_free(reg);
}

static void strand_dc_op_release(strand_dc_iface_t *iface, strand_dc_op_t *op)
{
    if (op->type == STRAND_DC_OP_LIGHT) {
        return;
    }
    if (ucs_unlikely(op->tmp_reg != NULL)) {
        strand_dc_tmp_reg_release(iface, op->tmp_reg);
        op->tmp_reg = NULL;
    }
    if (op->desc != NULL) {
        ucs_mpool_put_inline(op->desc);
        op->desc = NULL;
    }
}

void strand_dc_dci_pool_cleanup(strand_dc_iface_t *iface)
{
    strand_dc_dci_t *dci;
    uint32_t bb;
    unsigned i;

    if (iface->dcis == NULL) {
        return;
    }
    for (i = 0; i < iface->dci_hwm; ++i) {
        dci = &iface->dcis[i];
        if (dci->ops != NULL) {
            /* descriptors of work still on the wire at close */
            for (bb = dci->sq_tail; bb != dci->sq.cur_post; ++bb) {
                strand_dc_op_release(iface,
                                     &dci->ops[bb & (dci->sq.wqe_cnt - 1)]);
            }
        }
        strand_dc_recovery_cleanup(iface, dci);
        if (dci->qp.h != NULL) {
            iface->dev->ops->destroy_qp(iface->dev, &dci->qp);
        }
        ucs_free(dci->ops);
        ucs_free(dci->streams);
    }
    strand_dc_policy_cleanup(iface);
    ucs_free(iface->dcis);
    ucs_free(iface->dci_stack);
    ucs_free(iface->failed);
    iface->failed     = NULL;
    iface->num_failed = iface->max_failed = 0;
    kh_destroy_inplace(strand_dc_qpn, &iface->dci_by_qpn);
    iface->dcis      = NULL;
    iface->dci_stack = NULL;
}

int strand_dc_dci_pool_busy(strand_dc_iface_t *iface)
{
    unsigned i;

    for (i = 0; i < iface->dci_hwm; ++i) {
        if (iface->dcis[i].outstanding > 0) {
            return 1;
        }
    }
    return 0;
}

unsigned strand_dc_dci_stream_outstanding(const strand_dc_dci_t *dci,
                                          unsigned stream)
{
    const strand_dc_op_t *op;
    unsigned count = 0;
    uint32_t bb;

    for (bb = dci->sq_tail; bb != dci->sq.cur_post; ++bb) {
        op     = &dci->ops[bb & (dci->sq.wqe_cnt - 1)];
        count += (op->state != STRAND_DC_OP_FREE) && (op->stream == stream);
    }
    return count;
}

strand_dc_op_t *strand_dc_dci_op(strand_dc_dci_t *dci, uint16_t wqe_idx)
{
    strand_dc_op_t *op = &dci->ops[wqe_idx & (dci->sq.wqe_cnt - 1)];

    return ((op->state == STRAND_DC_OP_POSTED) && (op->wqe_idx == wqe_idx)) ?
           op : NULL;
}

/* The SQ's free space grows only from its oldest WQE: retired slots after
 * a WQE still outstanding (another stream) wait for it. */
static void strand_dc_dci_advance_tail(strand_dc_iface_t *iface,
                                       strand_dc_dci_t *dci)
{
    strand_dc_op_t *op;

    while (dci->sq_tail != dci->sq.cur_post) {
        op = &dci->ops[dci->sq_tail & (dci->sq.wqe_cnt - 1)];
        if (op->state != STRAND_DC_OP_FREE) {
            break;
        }
        dci->sq_tail += op->bbs;
    }
    strand_dc_dci_set_room(iface, dci);
}

/* Room again: the eps waiting for it go back to the pending dispatch. */
static void strand_dc_dci_wake_waiters(strand_dc_iface_t *iface,
                                       strand_dc_dci_t *dci)
{
    strand_dc_ep_t *ep;

    if (ucs_likely(ucs_list_is_empty(&dci->waiters)) ||
        !strand_dc_dci_has_room(iface, dci)) {
        return;
    }
    while (!ucs_list_is_empty(&dci->waiters)) {
        ep = ucs_list_extract_head(&dci->waiters, strand_dc_ep_t, dci_wait);
        ucs_list_head_init(&ep->dci_wait);
        strand_dc_ep_schedule(iface, ep);
    }
}

void strand_dc_dci_held_go(strand_dc_iface_t *iface, strand_dc_dci_t *dci)
{
    strand_dc_dci_unhold(dci);
    strand_dc_dci_set_state(iface, dci, STRAND_DC_DCI_ACTIVE);
    strand_dc_dci_wake_waiters(iface, dci);
    if (dci->ep != NULL) {
        strand_dc_ep_schedule(iface, dci->ep);
    }
}

static void strand_dc_op_deliver(strand_dc_iface_t *iface, strand_dc_op_t *op)
{
    switch (op->type) {
    case STRAND_DC_OP_GET_BCOPY:
        op->u.unpack.cb(op->u.unpack.arg, op->desc->data,
                        op->u.unpack.length);
        break;
    case STRAND_DC_OP_FETCH32: {
        uint32_t v;
        memcpy(&v, op->desc->data, sizeof(v));
        *(uint32_t*)op->u.result = iface->config.atomic_reply_be32 ?
                                   be32toh(v) : v;
        break;
    }
    case STRAND_DC_OP_FETCH64: {
        uint64_t v;
        memcpy(&v, op->desc->data, sizeof(v));
        *(uint64_t*)op->u.result = iface->config.atomic_reply_be64 ?
                                   be64toh(v) : v;
        break;
    }
    default:
        break;
    }
}

void strand_dc_op_complete(strand_dc_iface_t *iface, strand_dc_dci_t *dci,
                           strand_dc_op_t *op, ucs_status_t status)
{
    uct_completion_t *comp      = NULL;
    uct_completion_t *last      = NULL;
    strand_dc_ep_t *ep          = op->ep;
    strand_integrity_req_t *get = NULL;

    if (op->type != STRAND_DC_OP_LIGHT) {
        comp = op->comp;
        if (ucs_unlikely(op->type == STRAND_DC_OP_CHECKED)) {
            get = strand_dc_integrity_op_done(iface, op, status);
        } else if (status == UCS_OK) {
            strand_dc_op_deliver(iface, op);
        }
        strand_dc_op_release(iface, op);
        op->comp = NULL;
    }
    if (op->state == STRAND_DC_OP_FLUSHED) {
        dci->flushed--;
    }
    op->state = STRAND_DC_OP_FREE;
    op->ep    = NULL;
    dci->outstanding--;
    strand_dc_dci_advance_tail(iface, dci);
    strand_dc_dci_wake_waiters(iface, dci);
    if (ep != NULL) {
        if ((--ep->outstanding == 0) && (ep->held == 0)) {
            last = strand_dc_ep_idle(iface, ep);
        }
        strand_dc_ep_schedule(iface, ep);
    } else {
        iface->tl->sq_idle(iface, dci);
    }
    if (ucs_unlikely(get != NULL)) {
        /* a piece of a checked GET: the next ones, this one again, or the
         * GET's end (its ep counts the GET until then) */
        strand_dc_integrity_kick(iface, get);
    }
    if (comp != NULL) {
        uct_invoke_completion(comp, status);
    }
    if (ucs_unlikely(last != NULL)) {
        uct_invoke_completion(last, UCS_OK);
    }
}

void strand_dc_dci_orphan(strand_dc_iface_t *iface, strand_dc_dci_t *dci,
                          strand_dc_ep_t *ep)
{
    uct_completion_t *comp;
    strand_dc_op_t *op;
    uint32_t bb;

    for (bb = dci->sq_tail; bb != dci->sq.cur_post; ++bb) {
        op = &dci->ops[bb & (dci->sq.wqe_cnt - 1)];
        /* flushed ones too: a DCI in error settles them later, and an ep
         * that failed (and was destroyed, as UCP does) is gone by then */
        if ((op->state == STRAND_DC_OP_FREE) || (op->ep != ep)) {
            continue;
        }
        op->ep = NULL;
        ep->outstanding--;
        if (op->type == STRAND_DC_OP_LIGHT) {
            continue;
        }
        if (op->type == STRAND_DC_OP_CHECKED) {
            strand_dc_integrity_orphan_op(iface, op);
            continue;
        }
        comp     = op->comp;
        op->comp = NULL;
        /* no unpacking or fetched value into the user's memory later */
        op->type = STRAND_DC_OP_PLAIN;
        if (comp != NULL) {
            uct_invoke_completion(comp, UCS_ERR_CANCELED);
        }
    }
}

int strand_dc_dci_reset(strand_dc_iface_t *iface, strand_dc_dci_t *dci)
{
    strand_dev_t *dev = iface->dev;
    int err;

    err = dev->ops->reset_dci(dev, &dci->qp, &iface->dci_attr);
    if (err != 0) {
        ucs_error("%s: failed to reset DCI %u (qpn 0x%x): %s; it is not "
                  "used again", dev->info.name, dci->index, dci->qp.qpn,
                  strerror(err));
        strand_dc_dci_set_state(iface, dci, STRAND_DC_DCI_BROKEN);
        return err;
    }
    strand_dc_dci_geometry(iface, dci);
    memset(dci->ops, 0, dci->sq.wqe_cnt * sizeof(*dci->ops));
    return 0;
}

void strand_dc_dci_log_wqe(strand_dc_dci_t *dci, uint16_t wqe_idx)
{
    struct mlx5_wqe_ctrl_seg *ctrl = strand_sq_bb(dci->sq.buf, dci->sq.wqe_cnt,
                                                  wqe_idx);
    const uint32_t *u;
    unsigned i, ds = strand_ctrl_ds(ctrl);

    for (i = 0; i < ds; ++i) {
        u = strand_sq_wrap((uint8_t*)ctrl + i * STRAND_WQE_DS, dci->sq.buf,
                           dci->sq.end);
        ucs_debug("  wqe[%u]: %08x %08x %08x %08x", i, be32toh(u[0]),
                  be32toh(u[1]), be32toh(u[2]), be32toh(u[3]));
    }
}

/* The WQEs before op that asked for no CQE completed (CQEs come in SQ
 * order, also across streams: an error or a flush CQE too comes only
 * after every WQE before its own is done). Those still posted succeeded:
 * the ones that failed or were flushed had CQEs of their own. */
static void strand_dc_dci_retire_before(strand_dc_iface_t *iface,
                                        strand_dc_dci_t *dci,
                                        const strand_dc_op_t *op)
{
    uint32_t bb  = dci->sq_tail;
    uint32_t end = bb + (uint16_t)(op->wqe_idx - (uint16_t)bb);
    strand_dc_op_t *prev;

    while (bb != end) {
        prev = &dci->ops[bb & (dci->sq.wqe_cnt - 1)];
        bb  += prev->bbs;
        if (prev->state == STRAND_DC_OP_POSTED) {
            strand_dc_op_complete(iface, dci, prev, UCS_OK);
        }
    }
}

/* One send CQE. A DCI or stream in error takes its CQEs to recovery. */
static void strand_dc_dci_cqe(strand_dc_iface_t *iface, strand_dc_dci_t *dci,
                              struct mlx5_cqe64 *cqe)
{
    uint16_t wqe_counter = strand_cqe_wqe_counter(cqe);
    strand_dc_op_t *op   = strand_dc_dci_op(dci, wqe_counter);

    if (ucs_unlikely(op == NULL)) {
        ucs_error("%s: CQE for WQE %u, which DCI %u has not outstanding",
                  iface->dev->info.name, wqe_counter, dci->index);
        return;
    }
    if ((uint16_t)dci->sq_tail != wqe_counter) {
        strand_dc_dci_retire_before(iface, dci, op);
    }
    if (ucs_unlikely((dci->state == STRAND_DC_DCI_DRAINING) ||
                     (dci->streams[op->stream].state !=
                      STRAND_DC_STREAM_OK))) {
        strand_dc_recovery_flush(iface, dci, op, cqe);
    } else if (ucs_unlikely(strand_cqe_is_error(cqe))) {
        strand_dc_recovery_error(iface, dci, op, cqe);
    } else {
        strand_dc_op_complete(iface, dci, op, UCS_OK);
    }
}

/* The CQEs of one send CQ, until `*budget` sends were completed (a CQE
 * completes every unsignaled WQE before it too); the CQEs consumed. */
static unsigned strand_dc_dci_tx_poll(strand_dc_iface_t *iface,
                                      strand_dc_tx_cq_t *tx, int *budget)
{
    strand_dev_cq_t *cq = &tx->cq;
    strand_dc_dci_t *dci;
    struct mlx5_cqe64 *cqe;
    unsigned count = 0;
    uint32_t before;
    uint32_t qpn;
    khiter_t it;

    /* The consumer index is written once per poll (and every
     * tx_ci_batch CQEs of a long one: completions post, and the CQ has
     * room for what can be outstanding plus one batch), and before a
     * CQE whose handling may reset its DCI (an error, a DCI draining). */
    while ((*budget > 0) &&
           ((cqe = strand_cqe_get(cq->dv.buf, cq->dv.cqe_cnt,
                                  iface->tx_cqe_shift, tx->ci)) != NULL)) {
        ++tx->ci;
        ++count;
        if (ucs_unlikely(strand_cqe_opcode(cqe) == MLX5_CQE_SIG_ERR)) {
            /* a checked GET had a bad block; its READ's own CQE follows */
            if (strand_integrity_sigerr(&iface->integrity, cqe) != 0) {
                ucs_warn("%s: signature error CQE for mkey 0x%x, which "
                         "lands no GET", iface->dev->info.name,
                         strand_sigerr_cqe_mkey(cqe));
            }
            continue;
        }
        qpn = strand_cqe_qpn(cqe);
        it = kh_get(strand_dc_qpn, &iface->dci_by_qpn, qpn);
        if (ucs_unlikely(it == kh_end(&iface->dci_by_qpn))) {
            strand_cq_update_ci(cq->dv.dbrec, tx->ci);
            /* no send queue's: the transport's own (rc_strand's QPs that
             * read rendezvous) */
            if ((iface->tl->tx_cqe_other == NULL) ||
                (iface->tl->tx_cqe_other(iface, cqe) != 0)) {
                ucs_error("%s: send CQE of unknown QP 0x%x",
                          iface->dev->info.name, qpn);
            }
            continue;
        }
        dci = &iface->dcis[kh_value(&iface->dci_by_qpn, it)];
        dci->cqes++;
        STRAND_DC_IFACE_STAT(iface, TX_CQE, 1);
        if (ucs_unlikely(strand_cqe_is_error(cqe))) {
            STRAND_DC_IFACE_STAT(iface, TX_CQE_ERROR, 1);
            strand_cq_update_ci(cq->dv.dbrec, tx->ci);
        } else if (ucs_unlikely((dci->state != STRAND_DC_DCI_ACTIVE) ||
                                ((count % iface->tx_ci_batch) == 0))) {
            strand_cq_update_ci(cq->dv.dbrec, tx->ci);
        }
        before = dci->outstanding;
        strand_dc_dci_cqe(iface, dci, cqe);
        /* (a completion callback may have posted again) */
        *budget -= ucs_max(1, (int)before - (int)dci->outstanding);
    }
    if (count > 0) {
        strand_cq_update_ci(cq->dv.dbrec, tx->ci);
    }
    return count;
}

unsigned strand_dc_dci_tx_progress(strand_dc_iface_t *iface)
{
    return strand_dc_dci_tx_poll_max(iface, iface->config.tx_max_poll);
}

unsigned strand_dc_dci_tx_poll_max(strand_dc_iface_t *iface, unsigned max)
{
    int budget = (int)ucs_min(max, INT_MAX);
    unsigned count, k, n;

    if (ucs_likely(iface->num_tx_cqs == 1)) {
        count = strand_dc_dci_tx_poll(iface, &iface->tx_cqs[0], &budget);
    } else {
        /* rc_strand's CQs of many endpoints: each in turn polled first,
         * so that the bound starves none */
        n = iface->num_tx_cqs;
        for (count = 0, k = 0; (k < n) && (budget > 0); ++k) {
            count += strand_dc_dci_tx_poll(iface,
                                           &iface->tx_cqs[(iface->tx_cq_next +
                                                           k) % n],
                                           &budget);
        }
        iface->tx_cq_next = (iface->tx_cq_next + 1) % n;
    }
    if (ucs_unlikely(iface->repost_pending)) {
        count += strand_dc_recovery_progress(iface);
    }
    if (ucs_unlikely(iface->num_failed > 0)) {
        /* failed outside completion handling (uct_ep_invalidate) */
        strand_dc_recovery_notify(iface);
    }
    return count;
}

ucs_status_t strand_dc_dci_signal_tail(strand_dc_iface_t *iface,
                                       strand_dc_dci_t *dci)
{
    strand_dc_slot_t slot;
    unsigned i;

    if ((strand_dc_dci_unsignaled(dci) == 0) ||
        (dci->outstanding == 0)) {
        return UCS_OK; /* a CQE is due for every WQE posted */
    }
    if ((dci->state != STRAND_DC_DCI_ACTIVE) ||
        !strand_dc_dci_has_room(iface, dci)) {
        return UCS_ERR_NO_RESOURCE;
    }
    /* on a healthy stream, else it would only come back flushed */
    for (i = 0; i < iface->config.num_streams; ++i) {
        if (dci->streams[i].state == STRAND_DC_STREAM_OK) {
            break;
        }
    }
    if (i == iface->config.num_streams) {
        return UCS_ERR_NO_RESOURCE;
    }
    strand_dc_dci_slot(dci, &slot);
    strand_sq_set_ctrl(&dci->sq, slot.ctrl, 0, MLX5_OPCODE_NOP, 1,
                       strand_dc_dci_ce(dci, 1), 0);
    strand_set_ctrl_stream(slot.ctrl, dci->streams[i].id);
    STRAND_DC_IFACE_STAT(iface, TX_TAIL_NOP, 1);
    strand_dc_dci_log_tx(dci, slot.ctrl, 0);
    /* nobody's: it only retires the WQEs before it */
    strand_dc_dci_claim_light(dci, &slot, 1, NULL,
                              strand_dc_op_light_kind(i, MLX5_OPCODE_NOP));
    strand_dc_dci_ring(dci, slot.ctrl, 1);
    return UCS_OK;
}

void strand_dc_dci_signal_tails(strand_dc_iface_t *iface)
{
    unsigned i;

    for (i = 0; i < iface->dci_hwm; ++i) {
        (void)strand_dc_dci_signal_tail(iface, &iface->dcis[i]);
    }
}

/* ---------------------------------------------------------------- VFS */

static const char *strand_dc_dci_state_str(uint8_t state)
{
    switch (state) {
    case STRAND_DC_DCI_FREE:     return "free";
    case STRAND_DC_DCI_ACTIVE:   return "active";
    case STRAND_DC_DCI_DRAINING: return "draining";
    default:                     return "broken";
    }
}

/* The invariants: the free stack (dcs) holds every index once and exactly
 * the FREE DCIs; a FREE DCI is idle and unleased; outstanding counts add
 * up over the streams and the slots. */
static int strand_dc_dci_pool_consistent(strand_dc_iface_t *iface)
{
    unsigned i, j, on_stack[STRAND_DC_MAX_DCI] = {0};
    uint32_t bb, posted, flushed, per_stream;
    uint8_t state;
    strand_dc_dci_t *dci;
    /* a free stack is dcs's (rc_strand's slots are no pool, and may be
     * more than a stack holds) */
    int dcs = (iface->dci_stack != NULL) &&
              (iface->tx_policy != STRAND_DC_TX_POLICY_STREAMS);

    for (i = 0; i < iface->dci_top; ++i) {
        if ((iface->dci_stack[i] >= iface->num_dci) ||
            on_stack[iface->dci_stack[i]]++) {
            return 0;
        }
    }
    for (i = 0; i < iface->dci_hwm; ++i) {
        dci = &iface->dcis[i];
        if (dcs && ((dci->state == STRAND_DC_DCI_FREE) != (on_stack[i] == 1))) {
            return 0;
        }
        if ((dci->state == STRAND_DC_DCI_FREE) &&
            ((dci->users > 0) || (dci->outstanding > 0))) {
            return 0;
        }
        for (posted = 0, flushed = 0, bb = dci->sq_tail; bb != dci->sq.cur_post;
             ++bb) {
            state    = dci->ops[bb & (dci->sq.wqe_cnt - 1)].state;
            posted  += (state != STRAND_DC_OP_FREE);
            flushed += (state == STRAND_DC_OP_FLUSHED);
        }
        for (per_stream = 0, j = 0; j < iface->config.num_streams; ++j) {
            per_stream += strand_dc_dci_stream_outstanding(dci, j);
        }
        if ((posted != dci->outstanding) || (per_stream != posted) ||
            (flushed != dci->flushed)) {
            return 0;
        }
    }
    return 1;
}

void strand_dc_dci_pool_show(strand_dc_iface_t *iface,
                             ucs_string_buffer_t *strb)
{
    strand_dc_dci_t *dci;
    unsigned i, j, outstanding;

    ucs_string_buffer_appendf(strb, "policy %s streams %u\n",
                              strand_dc_tx_policy_names[iface->tx_policy],
                              iface->config.num_streams);
    ucs_string_buffer_appendf(strb, "free");
    for (i = 0; i < iface->dci_top; ++i) {
        ucs_string_buffer_appendf(strb, " %u", iface->dci_stack[i]);
    }
    ucs_string_buffer_appendf(strb, "\n");
    for (i = 0; i < iface->dci_hwm; ++i) {
        dci = &iface->dcis[i];
        ucs_string_buffer_appendf(strb, "dci %u qpn 0x%x state %s "
                                  "outstanding %u users %u errored %u "
                                  "flushed %u resets %u cqes %" PRIu64
                                  " unsignaled %u\n", i, dci->qp.qpn,
                                  strand_dc_dci_state_str(dci->state),
                                  dci->outstanding, dci->users, dci->errored,
                                  dci->flushed, dci->resets, dci->cqes,
                                  (dci->qp.h != NULL) ?
                                  strand_dc_dci_unsignaled(dci) : 0);
        for (j = 0; j < iface->config.num_streams; ++j) {
            outstanding = strand_dc_dci_stream_outstanding(dci, j);
            if ((dci->streams[j].users == 0) && (outstanding == 0) &&
                (dci->streams[j].state == STRAND_DC_STREAM_OK) &&
                (dci->streams[j].resets == 0) &&
                (dci->streams[j].leases == 0) &&
                ucs_queue_is_empty(&dci->streams[j].held)) {
                continue;
            }
            ucs_string_buffer_appendf(strb, "  stream %u %s outstanding %u "
                                      "users %u held %zu resets %u "
                                      "leases %u dest 0x%" PRIx64 "%s\n",
                                      dci->streams[j].id,
                                      (dci->streams[j].state ==
                                       STRAND_DC_STREAM_OK) ? "ok" :
                                      "draining", outstanding,
                                      dci->streams[j].users,
                                      ucs_queue_length(&dci->streams[j].held),
                                      dci->streams[j].resets,
                                      dci->streams[j].leases,
                                      dci->streams[j].dest,
                                      dci->streams[j].mixed ? " mixed" : "");
        }
    }
    ucs_string_buffer_appendf(strb, "consistent %s\n",
                              strand_dc_dci_pool_consistent(iface) ?
                              "yes" : "no");
}
