/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_strand's connection manager (rc_cm.h): requests, answers and
 * disconnects over a companion dc_strand interface, the responder QPs it
 * makes for its peers, and the state of each endpoint's connection.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "rc_cm.h"
#include "rc_rndv.h"
#include "rc_qp.h"
#include "rc_retire.h"
#include "uct_mlx5/common/port_addr.h"
#include "uct_mlx5/common/txq.h"
#include "uct_mlx5/common/ep.h"
#include "uct_mlx5/common/recovery.h"
#include "uct_mlx5/common/ep_fail.h"
#include "uct_mlx5/common/ep_ops.h"
#include "uct_mlx5/common/event.h"
#include "uct_mlx5/common/iface_class.h"

#include <ucs/async/async.h>
#include <ucs/sys/event_set.h>
#include <uct/base/uct_worker.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/datastruct/khash.h>
#include <ucs/sys/string.h>

#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define STRAND_RC_CM_AM_ID 0 /* the companion interface is ours alone */

/* The companion interface: a dc_strand interface the manager opens as any
 * UCT user would (uct_iface_open), for few, small messages. */
#define STRAND_RC_CM_TL_NAME       "dc_strand"
#define STRAND_RC_CM_CONFIG_PREFIX "DC_STRAND_"
#define STRAND_RC_CM_TX_QUEUE      32
#define STRAND_RC_CM_RX_QUEUE      128
#define STRAND_RC_CM_SEG_SIZE      256

typedef enum strand_rc_cm_msg_type {
    STRAND_RC_CM_REQ  = 1,
    STRAND_RC_CM_REP  = 2,
    STRAND_RC_CM_DISC = 3
} strand_rc_cm_msg_type_t;

/* Every message: what follows the 8-byte AM header (the connection id). A
 * REQ names its sender: its manager's interface address and its device
 * address (the key of a peer, as flow control keys its requesters). */
typedef struct strand_rc_cm_msg {
    uint8_t          type;   /* strand_rc_cm_msg_type_t */
    int8_t           status; /* REP: UCS_OK or why not */
    uint16_t         reserved;
    uint32_t         qpn;       /* REQ: requester's QP; REP, DISC: the
                                   responder QP */
    strand_fc_peer_t from;      /* REQ, DISC: the sender */
    uint64_t         rts_table; /* REQ: where its rendezvous requests
                                   can be read again (tag matching; */
    uint32_t         rts_rkey;  /* 0: none, rc/rc_rndv.h) */
} UCS_S_PACKED strand_rc_cm_msg_t;

/* A peer manager, and the endpoint of ours that talks to it. */
typedef struct strand_rc_cm_peer {
    strand_fc_peer_t key;
    uct_ep_h         ep;
} strand_rc_cm_peer_t;

typedef enum strand_rc_conn_state {
    STRAND_RC_CONN_REQUESTED, /* REQ sent (or waiting to go) */
    STRAND_RC_CONN_CONNECTED,
    STRAND_RC_CONN_FAILED /* refused, or its peer is gone: its ep
                             failed */
} strand_rc_conn_state_t;

/* An endpoint's connection (strand_rc_ep(ep)->conn). One whose ep was destroyed before
 * the answer stays until the answer comes, to be disconnected. */
typedef struct strand_rc_conn {
    uint64_t             id;
    strand_ep_t         *ep;         /* NULL: destroyed */
    strand_rc_cm_peer_t *peer;       /* NULL: the peer failed */
    strand_port_addr_t   dev_addr;   /* the peer's */
    uint32_t             remote_qpn; /* the responder QP, once REP */
    uint8_t              state;      /* strand_rc_conn_state_t */
} strand_rc_conn_t;

/* A QP of ours answering a peer's endpoint. */
typedef struct strand_rc_responder {
    strand_dev_qp_t      qp;
    uint64_t             conn_id;
    strand_fc_peer_t     requester;
    strand_rc_rndv_qp_t *rndv; /* the rendezvous it reads (tag
                                  matching), NULL: none */
} strand_rc_responder_t;

/* A message waiting for room on a manager endpoint. */
typedef struct strand_rc_cm_outgoing {
    uct_pending_req_t  super;
    strand_rc_cm_t    *cm;
    uct_ep_h           ep;
    uint64_t           conn_id;
    strand_rc_cm_msg_t msg;
} strand_rc_cm_outgoing_t;

KHASH_INIT(strand_rc_cm_peers, strand_fc_peer_t, strand_rc_cm_peer_t *, 1,
           strand_fc_peer_hash, strand_fc_peer_equal)
KHASH_MAP_INIT_INT64(strand_rc_cm_conns, strand_rc_conn_t *)
KHASH_MAP_INIT_INT(strand_rc_cm_responders, strand_rc_responder_t *)

/* News for the worker's own thread: an answer to one of its requests, a
 * peer's disconnect, or the failure of a manager endpoint (each changes
 * endpoints or rendezvous of the user's, which only the thread that
 * progresses the interface may touch: their completions run user code). */
typedef enum strand_rc_cm_news_kind {
    STRAND_RC_CM_NEWS_REP,
    STRAND_RC_CM_NEWS_DISC,
    STRAND_RC_CM_NEWS_FAILURE
} strand_rc_cm_news_kind_t;

typedef struct strand_rc_cm_news {
    uint8_t            kind; /* strand_rc_cm_news_kind_t */
    uint64_t           conn_id;
    strand_rc_cm_msg_t msg; /* REP, DISC */
    uct_ep_h           ep;  /* failure: the manager endpoint */
    ucs_status_t       status;
} strand_rc_cm_news_t;

struct strand_rc_cm {
    strand_iface_t                  *iface;             /* rc_strand */
    uct_iface_h                      dc;                /* the companion */
    size_t                           dc_iface_addr_len; /* its addresses */
    size_t                           dc_dev_addr_len;
    strand_fc_peer_t                 self; /* our key, as peers see it */
    uint64_t                         next_id;
    khash_t(strand_rc_cm_peers)      peers;
    khash_t(strand_rc_cm_conns)      conns;      /* by id */
    khash_t(strand_rc_cm_responders) responders; /* by QP number */
    /* the worker's async context: its thread answers requests (rc_cm.h);
     * the manager is touched under its lock */
    ucs_async_context_t *async;
    int                  async_fd; /* registered; -1: none */
    strand_rc_cm_news_t *news;
    unsigned             num_news, max_news;
    ucs_spinlock_t       news_lock; /* news, armed: the async
                                       thread adds, the worker's
                                       arm looks without the
                                       async context (whose
                                       events would otherwise
                                       be left to a worker
                                       about to sleep) */
    /* rc_strand's event fd: its completion channel and news_fd, so that
     * news found by the async thread wakes a worker sleeping in it */
    ucs_sys_event_set_t *wait_set;
    int                  news_fd; /* an eventfd */
    int                  armed;   /* news_fd to be signalled:
                                     the worker may sleep */
};

/* ------------------------------------------------------------ addresses */

/* A manager as its peers know it: its companion's interface address, then
 * its device address (the key of a peer, as flow control keys its
 * requesters) */
static strand_fc_peer_t strand_rc_cm_key(const strand_rc_cm_t    *cm,
                                         const uct_device_addr_t *dev_addr,
                                         const uct_iface_addr_t  *iface_addr)
{
    strand_fc_peer_t key;

    memset(&key, 0, sizeof(key));
    memcpy(key.bytes, iface_addr, cm->dc_iface_addr_len);
    memcpy(key.bytes + cm->dc_iface_addr_len, dev_addr, cm->dc_dev_addr_len);
    return key;
}

static const uct_iface_addr_t *
strand_rc_cm_key_iface(const strand_fc_peer_t *key)
{
    return (const uct_iface_addr_t *)key->bytes;
}

static const uct_device_addr_t *
strand_rc_cm_key_device(const strand_rc_cm_t *cm, const strand_fc_peer_t *key)
{
    return (const uct_device_addr_t *)(key->bytes + cm->dc_iface_addr_len);
}

/* the peer manager of key, for messages: its interface address in hex */
static const char *strand_rc_cm_key_str(const strand_rc_cm_t   *cm,
                                        const strand_fc_peer_t *key, char *buf,
                                        size_t max)
{
    size_t i, n = 0;

    for (i = 0; (i < cm->dc_iface_addr_len) && (n + 3 <= max); ++i) {
        n += snprintf(buf + n, max - n, "%02x", key->bytes[i]);
    }
    return buf;
}

size_t strand_rc_cm_iface_addr_len(strand_rc_cm_t *cm)
{
    return cm->dc_iface_addr_len;
}

ucs_status_t strand_rc_cm_iface_addr(strand_rc_cm_t *cm, uct_iface_addr_t *addr)
{
    /* the companion's */
    return uct_iface_get_address(cm->dc, addr);
}

int strand_rc_cm_is_reachable(strand_rc_cm_t          *cm,
                              const uct_device_addr_t *dev_addr,
                              const uct_iface_addr_t  *iface_addr)
{
    return uct_iface_is_reachable(cm->dc, dev_addr, iface_addr);
}

int strand_rc_cm_is_connected(strand_rc_cm_t *cm, const strand_ep_t *ep,
                              const uct_device_addr_t *dev_addr,
                              const uct_iface_addr_t  *iface_addr)
{
    const strand_rc_conn_t *conn = strand_rc_ep((strand_ep_t *)ep)->conn;
    strand_fc_peer_t        key  = strand_rc_cm_key(cm, dev_addr, iface_addr);

    return (conn != NULL) && (conn->peer != NULL) &&
           strand_fc_peer_equal(conn->peer->key, key);
}

/* ------------------------------------------------------------- sending */

static ucs_status_t strand_rc_cm_send_now(uct_ep_h ep, uint64_t conn_id,
                                          const strand_rc_cm_msg_t *msg)
{
    return uct_ep_am_short(ep, STRAND_RC_CM_AM_ID, conn_id, msg, sizeof(*msg));
}

static ucs_status_t strand_rc_cm_outgoing_progress(uct_pending_req_t *self)
{
    strand_rc_cm_outgoing_t *out = ucs_derived_of(self,
                                                  strand_rc_cm_outgoing_t);
    ucs_status_t             status;

    status = strand_rc_cm_send_now(out->ep, out->conn_id, &out->msg);
    if (status != UCS_ERR_NO_RESOURCE) {
        /* sent, or the peer failed (its error handler tells) */
        ucs_free(out);
        return UCS_OK;
    }
    return status;
}

/* A message to the peer of ep; when there is no room, it waits in ep's
 * pending queue (after any earlier one: they keep their order). */
static ucs_status_t strand_rc_cm_send(strand_rc_cm_t *cm, uct_ep_h ep,
                                      uint64_t                  conn_id,
                                      const strand_rc_cm_msg_t *msg)
{
    strand_rc_cm_outgoing_t *out;
    ucs_status_t             status;

    for (;;) {
        status = strand_rc_cm_send_now(ep, conn_id, msg);
        if (status != UCS_ERR_NO_RESOURCE) {
            return status;
        }
        out = ucs_malloc(sizeof(*out), "strand_rc_cm_outgoing");
        if (out == NULL) {
            return UCS_ERR_NO_MEMORY;
        }
        out->super.func = strand_rc_cm_outgoing_progress;
        out->cm         = cm;
        out->ep         = ep;
        out->conn_id    = conn_id;
        out->msg        = *msg;
        status          = uct_ep_pending_add(ep, &out->super, 0);
        if (status == UCS_OK) {
            return UCS_OK;
        }
        ucs_free(out); /* UCS_ERR_BUSY: room again, send */
    }
}

static void strand_rc_cm_outgoing_purge(uct_pending_req_t *self, void *arg)
{
    ucs_free(ucs_derived_of(self, strand_rc_cm_outgoing_t));
}

/* ---------------------------------------------------------------- peers */

/* The manager endpoint to a peer's manager, made the first time; the
 * status of the DC endpoint's creation when it cannot be (an address
 * nobody owns is unreachable, not a shortage of resources). */
static ucs_status_t strand_rc_cm_peer_get(strand_rc_cm_t         *cm,
                                          const strand_fc_peer_t *key,
                                          strand_rc_cm_peer_t   **peer_p)
{
    strand_rc_cm_peer_t *peer;
    uct_ep_params_t      params;
    ucs_status_t         status;
    khiter_t             it;
    int                  ret;

    it = kh_get(strand_rc_cm_peers, &cm->peers, *key);
    if (it != kh_end(&cm->peers)) {
        *peer_p = kh_value(&cm->peers, it);
        return UCS_OK;
    }
    peer = ucs_calloc(1, sizeof(*peer), "strand_rc_cm_peer");
    if (peer == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    peer->key         = *key;
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = cm->dc;
    params.dev_addr   = strand_rc_cm_key_device(cm, key);
    params.iface_addr = strand_rc_cm_key_iface(key);
    status            = uct_ep_create(&params, &peer->ep);
    if (status != UCS_OK) {
        ucs_free(peer);
        return status;
    }
    it = kh_put(strand_rc_cm_peers, &cm->peers, *key, &ret);
    if (ret < 0) {
        uct_ep_destroy(peer->ep);
        ucs_free(peer);
        return UCS_ERR_NO_MEMORY;
    }
    kh_value(&cm->peers, it) = peer;
    *peer_p                  = peer;
    return UCS_OK;
}

static void strand_rc_cm_peer_destroy(strand_rc_cm_peer_t *peer)
{
    uct_ep_pending_purge(peer->ep, strand_rc_cm_outgoing_purge, NULL);
    uct_ep_destroy(peer->ep);
    ucs_free(peer);
}

/* A responder QP that never took a message goes at once. */
static void
strand_rc_responder_destroy(strand_rc_cm_t *cm, strand_rc_responder_t *r)
{
    if (strand_rc_iface(cm->iface)->rndv != NULL) {
        strand_rc_rndv_qp_remove(strand_rc_iface(cm->iface)->rndv, r->rndv);
    }
    cm->iface->dev->ops->destroy_qp(cm->iface->dev, &r->qp);
    ucs_free(r);
}

/* A responder QP whose requester went: through ERR, so that a receive WQE
 * a message of it had started comes back to the SRQ (rc_retire.h). Its
 * rendezvous fail first (their reads flush). The worker's thread. */
static void
strand_rc_responder_retire(strand_rc_cm_t *cm, strand_rc_responder_t *r)
{
    strand_rc_iface_t *iface = strand_rc_iface(cm->iface);

    if (iface->rndv != NULL) {
        strand_rc_rndv_qp_remove(iface->rndv, r->rndv);
    }
    strand_rc_retire(iface, &r->qp);
    ucs_free(r);
}

/* A manager endpoint of ours failed: its peer is gone. The connections
 * that still wait for its answer fail; the responder QPs we keep for its
 * endpoints go. */
static void strand_rc_cm_peer_failed_now(strand_rc_cm_t *cm, uct_ep_h ep,
                                         ucs_status_t status)
{
    strand_rc_cm_peer_t   *peer = NULL;
    strand_rc_responder_t *r;
    strand_rc_conn_t      *conn;
    char                   detail[STRAND_FAILED_DETAIL], who[64];
    khiter_t               it;

    kh_foreach_value(&cm->peers, peer, {
        if (peer->ep == ep) {
            break;
        }
        peer = NULL;
    })
        ;
    if (peer == NULL) {
        return;
    }
    snprintf(detail, sizeof(detail),
             "rc_strand connection request to "
             "manager %s failed: %s",
             strand_rc_cm_key_str(cm, &peer->key, who, sizeof(who)),
             ucs_status_string(status));
    for (it = kh_begin(&cm->conns); it != kh_end(&cm->conns); ++it) {
        if (!kh_exist(&cm->conns, it)) {
            continue;
        }
        conn = kh_value(&cm->conns, it);
        if (conn->peer != peer) {
            continue;
        }
        conn->peer = NULL;
        if (conn->ep == NULL) {
            kh_del(strand_rc_cm_conns, &cm->conns, it);
            ucs_free(conn);
        } else if (conn->state == STRAND_RC_CONN_REQUESTED) {
            conn->state = STRAND_RC_CONN_FAILED;
            strand_ep_fail(cm->iface, conn->ep, status, detail);
            strand_rc_qp_abort(cm->iface, conn->ep);
        }
    }
    for (it = kh_begin(&cm->responders); it != kh_end(&cm->responders); ++it) {
        if (!kh_exist(&cm->responders, it)) {
            continue;
        }
        r = kh_value(&cm->responders, it);
        if (strand_fc_peer_equal(r->requester, peer->key)) {
            kh_del(strand_rc_cm_responders, &cm->responders, it);
            strand_rc_responder_retire(cm, r);
        }
    }
    it = kh_get(strand_rc_cm_peers, &cm->peers, peer->key);
    kh_del(strand_rc_cm_peers, &cm->peers, it);
    strand_rc_cm_peer_destroy(peer);
}

/* A worker that sleeps in rc_strand's event fd (UCP's has it in its own
 * set) wakes: the interface has no asynchronous event callback to call
 * (UCT_IFACE_FLAG_EVENT_ASYNC_CB), its event fd tells of news. The news
 * lock held. */
static void strand_rc_cm_wake_locked(strand_rc_cm_t *cm)
{
    uint64_t one = 1;

    if (!cm->armed) {
        return; /* as a CQ: no event unless asked for one */
    }
    cm->armed = 0;
    if (write(cm->news_fd, &one, sizeof(one)) < 0) {
        /* EAGAIN: the counter is readable already */
    }
}

static void strand_rc_cm_wake(strand_rc_cm_t *cm)
{
    ucs_spin_lock(&cm->news_lock);
    strand_rc_cm_wake_locked(cm);
    ucs_spin_unlock(&cm->news_lock);
}

/* News for the worker's thread. Found by the async thread, the worker is
 * woken for it (UCP may sleep in its event fd). */
static void
strand_rc_cm_news_add(strand_rc_cm_t *cm, const strand_rc_cm_news_t *n)
{
    strand_rc_cm_news_t *q;
    unsigned             max;

    ucs_spin_lock(&cm->news_lock);
    if (cm->num_news == cm->max_news) {
        max = ucs_max(16, cm->max_news * 2);
        q   = ucs_realloc(cm->news, max * sizeof(*q), "strand_rc_cm_news");
        if (q == NULL) {
            ucs_spin_unlock(&cm->news_lock);
            ucs_error("%s: rc_strand: no memory for connection news",
                      cm->iface->dev->info.name);
            return;
        }
        cm->news     = q;
        cm->max_news = max;
    }
    cm->news[cm->num_news++] = *n;
    if (ucs_async_is_from_async(cm->async)) {
        strand_rc_cm_wake_locked(cm);
    }
    ucs_spin_unlock(&cm->news_lock);
}

/* A manager endpoint failed (from the manager interface's progress, which
 * may be the async thread's): the worker's thread fails what hangs on it. */
static ucs_status_t
strand_rc_cm_peer_failed(void *arg, uct_ep_h ep, ucs_status_t status)
{
    strand_rc_cm_news_t n = {.kind   = STRAND_RC_CM_NEWS_FAILURE,
                             .ep     = ep,
                             .status = status};

    strand_rc_cm_news_add(arg, &n);
    return UCS_OK;
}

/* ------------------------------------------------------------ responder */

static void strand_rc_dest(const strand_port_addr_t *dev_addr, uint32_t qpn,
                           strand_dev_rc_dest_t *dest)
{
    memset(dest, 0, sizeof(*dest));
    dest->qpn = qpn;
    if (dev_addr->flags & STRAND_PORT_ADDR_FLAG_ETH) {
        memcpy(dest->gid.raw, dev_addr->gid, sizeof(dest->gid.raw));
    } else {
        dest->lid = dev_addr->ib.lid;
    }
}

/* A QP answering the requester's, connected to it. */
static ucs_status_t
strand_rc_cm_responder_make(strand_rc_cm_t *cm, uint64_t conn_id,
                            const strand_rc_cm_msg_t *req, uint32_t *qpn_p)
{
    strand_iface_t        *iface = cm->iface;
    strand_dev_t          *dev   = iface->dev;
    strand_rc_responder_t *r;
    strand_dev_rc_attr_t   attr;
    strand_dev_rc_dest_t   dest;
    ucs_status_t           status;
    khiter_t               it;
    int                    err, ret;

    r = ucs_calloc(1, sizeof(*r), "strand_rc_responder");
    if (r == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    r->conn_id   = conn_id;
    r->requester = req->from;
    strand_rc_qp_attr(iface, &attr);
    if (strand_rc_iface(iface)->rndv != NULL) {
        strand_rc_rndv_qp_attr(strand_rc_iface(iface)->rndv, &attr);
    }
    err = strand_dev_create_rc(dev, &attr, &r->qp);
    if (err != 0) {
        ucs_error("%s: rc_strand: no QP for a peer's endpoint: %s",
                  dev->info.name, strerror(err));
        ucs_free(r);
        return UCS_ERR_NO_RESOURCE;
    }
    strand_rc_dest((const strand_port_addr_t *)
                           strand_rc_cm_key_device(cm, &r->requester),
                   req->qpn, &dest);
    err = strand_dev_connect_rc(dev, &r->qp, &attr, &dest);
    if (err != 0) {
        ucs_error("%s: rc_strand: failed to connect QP 0x%x to QP 0x%x: %s",
                  dev->info.name, r->qp.qpn, req->qpn, strerror(err));
        strand_rc_responder_destroy(cm, r);
        return UCS_ERR_IO_ERROR;
    }
    if (strand_rc_iface(iface)->rndv != NULL) {
        status = strand_rc_rndv_qp_add(strand_rc_iface(iface)->rndv, &r->qp,
                                       req->rts_table, req->rts_rkey, &r->rndv);
        if (status != UCS_OK) {
            strand_rc_responder_destroy(cm, r);
            return status;
        }
    }
    it = kh_put(strand_rc_cm_responders, &cm->responders, r->qp.qpn, &ret);
    if (ret < 0) {
        strand_rc_responder_destroy(cm, r);
        return UCS_ERR_NO_MEMORY;
    }
    kh_value(&cm->responders, it) = r;
    *qpn_p                        = r->qp.qpn;
    return UCS_OK;
}

static void strand_rc_cm_handle_req(strand_rc_cm_t *cm, uint64_t conn_id,
                                    const strand_rc_cm_msg_t *req)
{
    strand_rc_cm_msg_t   rep = {.type = STRAND_RC_CM_REP};
    strand_rc_cm_peer_t *peer;
    ucs_status_t         status;
    uint32_t             qpn = 0;
    char                 who[64];

    if (strand_rc_cm_peer_get(cm, &req->from, &peer) != UCS_OK) {
        ucs_error("%s: rc_strand: cannot answer the connection request of "
                  "manager %s",
                  cm->iface->dev->info.name,
                  strand_rc_cm_key_str(cm, &req->from, who, sizeof(who)));
        return; /* the requester's ep waits until checked or destroyed */
    }
    status     = strand_rc_cm_responder_make(cm, conn_id, req, &qpn);
    rep.qpn    = (status == UCS_OK) ? qpn : 0;
    rep.status = (int8_t)status;
    rep.from   = cm->self;
    ucs_debug("%s: rc_strand: connection %" PRIx64 " from QP 0x%x: %s QP "
              "0x%x",
              cm->iface->dev->info.name, conn_id, req->qpn,
              ucs_status_string(status), rep.qpn);
    strand_rc_cm_send(cm, peer->ep, conn_id, &rep);
}

static void strand_rc_cm_handle_disc(strand_rc_cm_t *cm, uint64_t conn_id,
                                     const strand_rc_cm_msg_t *disc)
{
    khiter_t it = kh_get(strand_rc_cm_responders, &cm->responders, disc->qpn);
    strand_rc_responder_t *r;

    if (it == kh_end(&cm->responders)) {
        return;
    }
    r = kh_value(&cm->responders, it);
    /* the same connection, not a later one on a reused QP number */
    if ((r->conn_id != conn_id) ||
        !strand_fc_peer_equal(r->requester, disc->from)) {
        return;
    }
    kh_del(strand_rc_cm_responders, &cm->responders, it);
    strand_rc_responder_retire(cm, r);
}

/* ------------------------------------------------------------ requester */

static void
strand_rc_cm_disconnect(strand_rc_cm_t *cm, const strand_rc_conn_t *conn)
{
    strand_rc_cm_msg_t disc = {.type = STRAND_RC_CM_DISC,
                               .qpn  = conn->remote_qpn,
                               .from = cm->self};

    if (conn->peer != NULL) {
        strand_rc_cm_send(cm, conn->peer->ep, conn->id, &disc);
    }
}

/* The requester's QP to the responder's: the ep may post. */
static ucs_status_t
strand_rc_cm_connect_qp(strand_rc_cm_t *cm, strand_rc_conn_t *conn)
{
    strand_iface_t      *iface = cm->iface;
    strand_ep_t         *ep    = conn->ep;
    strand_txq_t        *txq   = &iface->txqs[ep->txq];
    strand_dev_t        *dev   = iface->dev;
    strand_dev_rc_attr_t attr;
    strand_dev_rc_dest_t dest;
    unsigned             av_size;
    char                 peer[96];
    int                  err;

    strand_rc_dest(&conn->dev_addr, conn->remote_qpn, &dest);
    strand_rc_qp_attr(iface, &attr);
    err = strand_dev_connect_rc(dev, &txq->qp, &attr, &dest);
    if (err != 0) {
        ucs_error("%s: rc_strand: failed to connect QP 0x%x to QP 0x%x: %s",
                  dev->info.name, txq->qp.qpn, conn->remote_qpn, strerror(err));
        return UCS_ERR_IO_ERROR;
    }
    /* the path as a DC address vector names it: for the messages and to
     * tell peers apart (RC WQEs carry none) */
    if (strand_port_addr_make_av(iface, &conn->dev_addr, conn->remote_qpn,
                                 &ep->av, &av_size) == UCS_OK) {
        ep->dest_key = strand_av_peer_key(&ep->av);
    }
    /* one peer QP: a peer-wide error is this ep's alone */
    ep->dest = ep->dest_key ^ ((uint64_t)conn->remote_qpn << 24);
    ucs_debug("%s: rc_strand ep %p: QP 0x%x connected to %s", dev->info.name,
              ep, txq->qp.qpn, strand_av_str(&ep->av, peer, sizeof(peer)));
    strand_rc_qp_connected(iface, ep);
    return UCS_OK;
}

static void strand_rc_cm_handle_rep(strand_rc_cm_t *cm, uint64_t conn_id,
                                    const strand_rc_cm_msg_t *rep)
{
    khiter_t          it = kh_get(strand_rc_cm_conns, &cm->conns, conn_id);
    strand_rc_conn_t *conn;
    ucs_status_t      status;
    char              detail[STRAND_FAILED_DETAIL], who[64];

    if (it == kh_end(&cm->conns)) {
        return;
    }
    conn = kh_value(&cm->conns, it);
    if (conn->state != STRAND_RC_CONN_REQUESTED) {
        /* failed meanwhile (its ep was told): a QP the peer made for it
         * anyway goes */
        if ((conn->state == STRAND_RC_CONN_FAILED) && (rep->status == UCS_OK)) {
            conn->remote_qpn = rep->qpn;
            strand_rc_cm_disconnect(cm, conn);
        }
        return;
    }
    conn->remote_qpn = rep->qpn;
    if (conn->ep == NULL) {
        /* destroyed while asking: the peer's QP goes too */
        if (rep->status == UCS_OK) {
            strand_rc_cm_disconnect(cm, conn);
        }
        kh_del(strand_rc_cm_conns, &cm->conns, it);
        ucs_free(conn);
        return;
    }
    status = (ucs_status_t)rep->status;
    if ((status == UCS_OK) && (conn->ep->flags & STRAND_EP_FLAG_FAILED)) {
        /* failed or cancelled (flush with UCT_FLUSH_FLAG_CANCEL) while it
         * asked: its QP went to ERR, the peer's goes too */
        conn->state = STRAND_RC_CONN_FAILED;
        strand_rc_cm_disconnect(cm, conn);
        return;
    }
    if (status == UCS_OK) {
        status = strand_rc_cm_connect_qp(cm, conn);
        if (status != UCS_OK) {
            strand_rc_cm_disconnect(cm, conn);
        }
    }
    if (status != UCS_OK) {
        snprintf(detail, sizeof(detail),
                 "rc_strand connection refused by "
                 "manager %s: %s",
                 conn->peer ? strand_rc_cm_key_str(cm, &conn->peer->key, who,
                                                   sizeof(who)) :
                              "(gone)",
                 ucs_status_string(status));
        conn->state = STRAND_RC_CONN_FAILED;
        strand_ep_fail(cm->iface, conn->ep, status, detail);
        strand_rc_qp_abort(cm->iface, conn->ep);
        return;
    }
    conn->state = STRAND_RC_CONN_CONNECTED;
}

ucs_status_t strand_rc_cm_connect(strand_rc_cm_t *cm, strand_ep_t *ep,
                                  const uct_device_addr_t *dev_addr,
                                  const uct_iface_addr_t  *iface_addr)
{
    strand_rc_cm_msg_t req = {.type = STRAND_RC_CM_REQ};
    strand_fc_peer_t   key;
    strand_rc_conn_t  *conn;
    ucs_status_t       status;
    unsigned           av_size;
    uint64_t           rts_table;
    uint32_t           rts_rkey;
    khiter_t           it;
    int                ret;

    strand_rc_rndv_table(strand_rc_iface(cm->iface)->rndv, &rts_table,
                         &rts_rkey);
    req.rts_table = rts_table;
    req.rts_rkey  = rts_rkey;
    conn          = ucs_calloc(1, sizeof(*conn), "strand_rc_conn");
    if (conn == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    key    = strand_rc_cm_key(cm, dev_addr, iface_addr);
    status = strand_rc_cm_peer_get(cm, &key, &conn->peer);
    if (status != UCS_OK) {
        ucs_free(conn);
        return status;
    }
    conn->id    = cm->next_id++;
    conn->ep    = ep;
    conn->state = STRAND_RC_CONN_REQUESTED;
    memcpy(&conn->dev_addr, dev_addr, cm->dc_dev_addr_len);
    it = kh_put(strand_rc_cm_conns, &cm->conns, conn->id, &ret);
    if (ret < 0) {
        ucs_free(conn);
        return UCS_ERR_NO_MEMORY;
    }
    kh_value(&cm->conns, it) = conn;
    strand_rc_ep(ep)->conn   = conn;
    /* until connected, messages name the peer by its port alone */
    if (strand_port_addr_make_av(cm->iface, &conn->dev_addr, 0, &ep->av,
                                 &av_size) == UCS_OK) {
        ep->dest_key = strand_av_peer_key(&ep->av);
    }

    req.qpn  = cm->iface->txqs[ep->txq].qp.qpn;
    req.from = cm->self;
    status   = strand_rc_cm_send(cm, conn->peer->ep, conn->id, &req);
    if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
        kh_del(strand_rc_cm_conns, &cm->conns, it);
        strand_rc_ep(ep)->conn = NULL;
        ucs_free(conn);
        return status;
    }
    return UCS_OK;
}

void strand_rc_cm_forget(strand_rc_cm_t *cm, strand_ep_t *ep)
{
    strand_rc_conn_t *conn = strand_rc_ep(ep)->conn;
    khiter_t          it;

    if (conn == NULL) {
        return;
    }
    strand_rc_ep(ep)->conn = NULL;
    conn->ep               = NULL;
    if ((conn->state == STRAND_RC_CONN_REQUESTED) && (conn->peer != NULL)) {
        return; /* the answer disconnects it */
    }
    /* connected: the peer drops its responder; failed: nothing to undo */
    if (conn->state == STRAND_RC_CONN_CONNECTED) {
        strand_rc_cm_disconnect(cm, conn);
    }
    it = kh_get(strand_rc_cm_conns, &cm->conns, conn->id);
    if (it != kh_end(&cm->conns)) {
        kh_del(strand_rc_cm_conns, &cm->conns, it);
    }
    ucs_free(conn);
}

ucs_status_t
strand_rc_cm_check(strand_rc_cm_t *cm, strand_ep_t *ep, uct_completion_t *comp)
{
    strand_rc_conn_t *conn = strand_rc_ep(ep)->conn;

    if ((conn != NULL) && (conn->state == STRAND_RC_CONN_REQUESTED)) {
        /* no QP to probe yet: the path of its request is */
        return (conn->peer != NULL) ? uct_ep_check(conn->peer->ep, 0, comp) :
                                      UCS_OK;
    }
    return strand_ep_check(&ep->super.super, 0, comp);
}

/* ------------------------------------------------------------- messages */

static void strand_rc_cm_handle_rep(strand_rc_cm_t *cm, uint64_t conn_id,
                                    const strand_rc_cm_msg_t *rep);
static void strand_rc_cm_handle_disc(strand_rc_cm_t *cm, uint64_t conn_id,
                                     const strand_rc_cm_msg_t *disc);
static void strand_rc_cm_peer_failed_now(strand_rc_cm_t *cm, uct_ep_h ep,
                                         ucs_status_t status);

/* The news in order (the async context held); answers only: the others
 * stay, in order. A handler may add news (a failure while connecting):
 * they are taken in too. Returns how many were. */
static unsigned strand_rc_cm_news_run(strand_rc_cm_t *cm, int answers_only)
{
    unsigned            i = 0, kept = 0, done = 0;
    strand_rc_cm_news_t n;

    for (;;) {
        ucs_spin_lock(&cm->news_lock);
        if (i >= cm->num_news) {
            cm->num_news = kept;
            ucs_spin_unlock(&cm->news_lock);
            return done;
        }
        n = cm->news[i++];
        if (answers_only && (n.kind != STRAND_RC_CM_NEWS_REP)) {
            cm->news[kept++] = n;
            ucs_spin_unlock(&cm->news_lock);
            continue;
        }
        ucs_spin_unlock(&cm->news_lock);
        switch (n.kind) {
        case STRAND_RC_CM_NEWS_REP:
            strand_rc_cm_handle_rep(cm, n.conn_id, &n.msg);
            break;
        case STRAND_RC_CM_NEWS_DISC:
            strand_rc_cm_handle_disc(cm, n.conn_id, &n.msg);
            break;
        default:
            strand_rc_cm_peer_failed_now(cm, n.ep, n.status);
            break;
        }
        ++done;
    }
}

/* The answers the async thread left to the worker, in order (the async
 * context held; the post lock too, or the worker's thread). */
void strand_rc_cm_answers_run(strand_rc_cm_t *cm)
{
    __atomic_store_n(&strand_rc_iface(cm->iface)->rep_waiting, 0,
                     __ATOMIC_RELAXED);
    strand_rc_cm_news_run(cm, 1);
}

void strand_rc_cm_answers_take(strand_rc_cm_t *cm)
{
    UCS_ASYNC_BLOCK(cm->async);
    strand_rc_cm_answers_run(cm);
    UCS_ASYNC_UNBLOCK(cm->async);
}

/* An answer connects an ep of the user's and rings the doorbells it held:
 * at once, so that what it posted goes without this side's progress
 * (rc_locked.h). The worker's thread takes it in itself; the async thread
 * when the worker does not post now, else it leaves it to the worker, who
 * takes it in when it lets go of the post lock. */
static void strand_rc_cm_take_rep(strand_rc_cm_t *cm, uint64_t conn_id,
                                  const strand_rc_cm_msg_t *rep)
{
    strand_rc_iface_t  *iface = strand_rc_iface(cm->iface);
    strand_rc_cm_news_t n     = {.kind    = STRAND_RC_CM_NEWS_REP,
                                 .conn_id = conn_id,
                                 .msg     = *rep};

    if (!ucs_async_is_from_async(cm->async)) {
        strand_rc_cm_handle_rep(cm, conn_id, rep);
        return;
    }
    if (ucs_recursive_spin_trylock(&iface->post_lock)) {
        strand_rc_cm_handle_rep(cm, conn_id, rep);
        ucs_recursive_spin_unlock(&iface->post_lock);
        strand_rc_cm_wake(cm); /* its pending requests may go */
        return;
    }
    strand_rc_cm_news_add(cm, &n);
    __atomic_store_n(&iface->rep_waiting, 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (ucs_recursive_spin_trylock(&iface->post_lock)) {
        /* the worker let go meanwhile, perhaps before it could see it */
        strand_rc_cm_answers_run(cm);
        ucs_recursive_spin_unlock(&iface->post_lock);
    }
}

static ucs_status_t
strand_rc_cm_am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    strand_rc_cm_t    *cm = arg;
    strand_rc_cm_msg_t msg;
    uint64_t           conn_id;

    if (length != sizeof(conn_id) + sizeof(msg)) {
        ucs_debug("%s: rc_strand: dropped a connection message of %zu "
                  "bytes",
                  cm->iface->dev->info.name, length);
        return UCS_OK;
    }
    memcpy(&conn_id, data, sizeof(conn_id));
    memcpy(&msg, UCS_PTR_BYTE_OFFSET(data, sizeof(conn_id)), sizeof(msg));
    switch (msg.type) {
    case STRAND_RC_CM_REQ:
        strand_rc_cm_handle_req(cm, conn_id, &msg);
        break;
    case STRAND_RC_CM_REP:
        strand_rc_cm_take_rep(cm, conn_id, &msg);
        break;
    case STRAND_RC_CM_DISC: {
        /* it fails rendezvous it reads, whose completions run user code:
         * the worker's thread does */
        strand_rc_cm_news_t n = {.kind    = STRAND_RC_CM_NEWS_DISC,
                                 .conn_id = conn_id,
                                 .msg     = msg};
        strand_rc_cm_news_add(cm, &n);
        break;
    }
    default:
        ucs_debug("%s: rc_strand: dropped a connection message of type %u",
                  cm->iface->dev->info.name, msg.type);
        break;
    }
    return UCS_OK;
}

void strand_rc_cm_show(strand_rc_cm_t *cm, ucs_string_buffer_t *strb)
{
    unsigned          count[3] = {0, 0, 0};
    strand_rc_conn_t *conn;

    kh_foreach_value(&cm->conns, conn, { ++count[conn->state]; })
        ;
    ucs_string_buffer_appendf(strb,
                              "connecting %u connected %u failed %u "
                              "responders %u peers %u\n",
                              count[STRAND_RC_CONN_REQUESTED],
                              count[STRAND_RC_CONN_CONNECTED],
                              count[STRAND_RC_CONN_FAILED],
                              kh_size(&cm->responders), kh_size(&cm->peers));
}

unsigned strand_rc_cm_progress(strand_rc_cm_t *cm)
{
    unsigned count = uct_iface_progress(cm->dc);

    return count + strand_rc_cm_news_run(cm, 0);
}

/* The manager interface's events, in the async thread (the async context
 * locked): requests are answered whether or not the worker progresses (a
 * peer's one-sided work needs its QP answered by this side); the rest is
 * news for the worker's thread. */
static void
strand_rc_cm_async_cb(int id, ucs_event_set_types_t events, void *arg)
{
    strand_rc_cm_t *cm = arg;

    do {
        uct_iface_progress(cm->dc);
    } while (
            uct_iface_event_arm(cm->dc, UCT_EVENT_SEND_COMP | UCT_EVENT_RECV) ==
            UCS_ERR_BUSY);
}

/* Whether the async thread may drive the manager: a thread (a signal
 * handler must not make QPs), and the application did not tell rdma-core
 * that one thread uses the device (MLX5_SINGLE_THREADED: then requests
 * are answered from the worker's progress only). */
static int strand_rc_cm_async_ok(ucs_async_context_t *async)
{
    const char *single = getenv("MLX5_SINGLE_THREADED");

    return ((async->mode == UCS_ASYNC_MODE_THREAD_SPINLOCK) ||
            (async->mode == UCS_ASYNC_MODE_THREAD_MUTEX)) &&
           !((single != NULL) && !strcmp(single, "1"));
}

/* rc_strand's event fd: an epoll set of its completion channel and the
 * eventfd the async thread signals news on. */
static ucs_status_t strand_rc_cm_wait_init(strand_rc_cm_t *cm)
{
    ucs_status_t status;

    cm->news_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (cm->news_fd < 0) {
        ucs_error("rc_strand: eventfd() failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    status = ucs_event_set_create(&cm->wait_set);
    if (status != UCS_OK) {
        return status;
    }
    status = ucs_event_set_add(cm->wait_set, cm->iface->chan->fd,
                               UCS_EVENT_SET_EVREAD, NULL);
    if (status != UCS_OK) {
        return status;
    }
    return ucs_event_set_add(cm->wait_set, cm->news_fd, UCS_EVENT_SET_EVREAD,
                             NULL);
}

static void strand_rc_cm_wait_cleanup(strand_rc_cm_t *cm)
{
    if (cm->wait_set != NULL) {
        ucs_event_set_cleanup(cm->wait_set);
        cm->wait_set = NULL;
    }
    if (cm->news_fd >= 0) {
        close(cm->news_fd);
        cm->news_fd = -1;
    }
}

/* The async thread watches the manager's channel (rc_cm.h). */
static ucs_status_t strand_rc_cm_async_init(strand_rc_cm_t *cm)
{
    uct_iface_h  dc = cm->dc;
    ucs_status_t status;
    int          fd;

    status = uct_iface_event_fd_get(dc, &fd);
    if (status != UCS_OK) {
        return status;
    }
    if (!strand_rc_cm_async_ok(cm->async)) {
        ucs_debug("%s: rc_strand: connection requests are answered from "
                  "progress only",
                  cm->iface->dev->info.name);
        /* then they wake a worker sleeping in rc_strand's event fd */
        return ucs_event_set_add(cm->wait_set, fd, UCS_EVENT_SET_EVREAD, NULL);
    }
    status = ucs_async_set_event_handler(cm->async->mode, fd,
                                         UCS_EVENT_SET_EVREAD,
                                         strand_rc_cm_async_cb, cm, cm->async);
    if (status != UCS_OK) {
        return status;
    }
    cm->async_fd = fd;
    UCS_ASYNC_BLOCK(cm->async);
    while (strand_iface_event_arm(dc, UCT_EVENT_SEND_COMP | UCT_EVENT_RECV) ==
           UCS_ERR_BUSY) {
        strand_iface_progress(dc);
    }
    UCS_ASYNC_UNBLOCK(cm->async);
    return UCS_OK;
}

ucs_async_context_t *strand_rc_cm_async(strand_rc_cm_t *cm)
{
    return cm->async;
}

int strand_rc_cm_async_connects(strand_rc_cm_t *cm)
{
    return cm->async_fd >= 0;
}

ucs_status_t strand_rc_cm_event_fd(strand_rc_cm_t *cm, int *fd_p)
{
    return ucs_event_set_fd_get(cm->wait_set, fd_p);
}

ucs_status_t strand_rc_cm_event_arm(strand_rc_cm_t *cm, unsigned events)
{
    uint64_t     count;
    ucs_status_t status;

    /* without the async context: its thread's turn is never missed
     * because the worker is about to sleep (UCX's dispatch only tries it
     * and leaves the event to the worker's progress) */
    ucs_spin_lock(&cm->news_lock);
    if (read(cm->news_fd, &count, sizeof(count)) < 0) {
        /* EAGAIN: no news signalled */
    }
    if ((cm->num_news > 0) || !ucs_mpmc_queue_is_empty(&cm->async->missed)) {
        /* news, or a message the async thread could not take in (the
         * worker held the async context): the worker's progress does
         * (ucs_async_check_miss) */
        status = UCS_ERR_BUSY;
    } else if (cm->async_fd < 0) {
        /* no async thread: the worker's sleep must see requests too */
        status = uct_iface_event_arm(cm->dc,
                                     UCT_EVENT_SEND_COMP | UCT_EVENT_RECV);
    } else {
        status = UCS_OK;
    }
    cm->armed = (status == UCS_OK);
    ucs_spin_unlock(&cm->news_lock);
    return status;
}

/* ------------------------------------------------------- open and close */

/* The companion's configuration: dc_strand's as the environment gives it,
 * with rc_strand's timeouts and retries, small queues, no flow control
 * (requests are few; receiver-not-ready retries cover a burst), no tag
 * matching or integrity (both sides' companions must agree on what a
 * message starts with, whatever UCX_DC_STRAND_* says). */
/* an ULUNITS option's value as its string ("auto" or the number) */
static void strand_config_ulunits_str(unsigned long v, char *buf, size_t max)
{
    if (v == UCS_ULUNITS_AUTO) {
        snprintf(buf, max, "auto");
    } else {
        snprintf(buf, max, "%lu", v);
    }
}

static ucs_status_t strand_rc_cm_config(uct_md_h                     md,
                                        const strand_iface_config_t *rc,
                                        uct_iface_config_t         **config_p)
{
    char        timeout[32], retry[16], rnr_timeout[32], rnr_retry[16], inl[16];
    char        tclass[16], sl[16];
    const char *set[][2] = {{"NUM_DCI", "4"},
                            {"TX_POLICY", "dcs"},
                            {"TX_QUEUE_LEN", "32"},
                            {"TX_CQ_MODERATION", "1"},
                            {"RX_QUEUE_LEN", "128"},
                            {"RX_MAX_POLL", "16"},
                            {"TX_MAX_POLL", "16"},
                            {"SEG_SIZE", "256"},
                            {"TX_CQ_LEN", "0"},
                            {"RX_CQ_LEN", "0"},
                            {"TX_MAX_BUFS", "-1"},
                            {"TX_BUFS_GROW", "32"},
                            {"RX_MAX_BUFS", "-1"},
                            {"RX_BUFS_GROW", "128"},
                            {"FC_ENABLE", "n"},
                            {"RX_INLINE", "n"},
                            {"TM_ENABLE", "n"},
                            {"INTEGRITY", "off"},
                            {"TIMEOUT", timeout},
                            {"RETRY_COUNT", retry},
                            {"RNR_TIMEOUT", rnr_timeout},
                            {"RNR_RETRY_COUNT", rnr_retry},
                            {"MAX_INLINE", inl},
                            /* its packets travel as rc_strand's */
                            {"TRAFFIC_CLASS", tclass},
                            {"SL", sl}};
    uct_iface_config_t *config;
    ucs_status_t        status;
    unsigned            i;

    snprintf(timeout, sizeof(timeout), "%.17gs", rc->common.timeout);
    snprintf(retry, sizeof(retry), "%u", rc->common.retry_count);
    snprintf(rnr_timeout, sizeof(rnr_timeout), "%.17gs",
             rc->common.rnr_timeout);
    snprintf(rnr_retry, sizeof(rnr_retry), "%u", rc->common.rnr_retry_count);
    snprintf(inl, sizeof(inl), "%zu",
             ucs_min(rc->common.max_inline, (size_t)128));
    strand_config_ulunits_str(rc->common.traffic_class, tclass, sizeof(tclass));
    strand_config_ulunits_str(rc->common.sl, sl, sizeof(sl));
    status = uct_md_iface_config_read(md, STRAND_RC_CM_TL_NAME, NULL, NULL,
                                      &config);
    if (status != UCS_OK) {
        return status;
    }
    for (i = 0; i < ucs_static_array_size(set); ++i) {
        status = strand_config_modify(config, STRAND_RC_CM_CONFIG_PREFIX,
                                      set[i][0], set[i][1]);
        if (status != UCS_OK) {
            ucs_error("rc_strand: the connection manager's %s=%s: %s",
                      set[i][0], set[i][1], ucs_status_string(status));
            uct_config_release(config);
            return status;
        }
    }
    *config_p = config;
    return UCS_OK;
}

/* The companion interface, opened as uct_iface_open opens any, on
 * rc_strand's device. */
static ucs_status_t
strand_rc_cm_companion_open(strand_rc_cm_t *cm, uct_worker_h worker,
                            const uct_iface_params_t    *params,
                            const strand_iface_config_t *rc_config)
{
    uct_md_h            md = &cm->iface->md->super;
    uct_iface_params_t  cm_params;
    uct_iface_config_t *config;
    ucs_status_t        status;

    status = strand_rc_cm_config(md, rc_config, &config);
    if (status != UCS_OK) {
        return status;
    }
    cm_params = (uct_iface_params_t){
            .field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                          UCT_IFACE_PARAM_FIELD_DEVICE |
                          UCT_IFACE_PARAM_FIELD_RX_HEADROOM |
                          UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                          UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                          UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS |
                          UCT_IFACE_PARAM_FIELD_FEATURES,
            .open_mode       = UCT_IFACE_OPEN_MODE_DEVICE,
            .mode.device     = params->mode.device,
            .err_handler     = strand_rc_cm_peer_failed,
            .err_handler_arg = cm,
            .features        = UCT_IFACE_FEATURE_AM};
    /* on rc_strand's device, but a dc_strand interface */
    cm_params.mode.device.tl_name = STRAND_RC_CM_TL_NAME;
    status = uct_iface_open(md, worker, &cm_params, config, &cm->dc);
    uct_config_release(config);
    return status;
}

/* The companion's addresses: their lengths, and the manager's own key. */
static ucs_status_t strand_rc_cm_companion_addr(strand_rc_cm_t *cm)
{
    uint8_t dev_addr[STRAND_FC_PEER_LEN], iface_addr[STRAND_FC_PEER_LEN];
    uct_iface_attr_t attr;
    ucs_status_t     status;

    status = uct_iface_query(cm->dc, &attr);
    if (status != UCS_OK) {
        return status;
    }
    if (attr.iface_addr_len + attr.device_addr_len > STRAND_FC_PEER_LEN) {
        ucs_error("%s: rc_strand: the connection manager's addresses (%zu "
                  "bytes) do not fit its messages",
                  cm->iface->dev->info.name,
                  attr.iface_addr_len + attr.device_addr_len);
        return UCS_ERR_UNSUPPORTED;
    }
    cm->dc_iface_addr_len = attr.iface_addr_len;
    cm->dc_dev_addr_len   = attr.device_addr_len;
    status                = uct_iface_get_device_address(cm->dc,
                                                         (uct_device_addr_t *)dev_addr);
    if (status == UCS_OK) {
        status = uct_iface_get_address(cm->dc, (uct_iface_addr_t *)iface_addr);
    }
    if (status == UCS_OK) {
        cm->self = strand_rc_cm_key(cm, (const uct_device_addr_t *)dev_addr,
                                    (const uct_iface_addr_t *)iface_addr);
    }
    return status;
}

ucs_status_t strand_rc_cm_open(strand_iface_t *iface, uct_worker_h worker,
                               const uct_iface_params_t    *params,
                               const uct_iface_config_t    *tl_config,
                               const strand_iface_config_t *rc_config,
                               strand_rc_cm_t             **cm_p)
{
    strand_rc_cm_t *cm;
    ucs_status_t    status;

    cm = ucs_calloc(1, sizeof(*cm), "strand_rc_cm");
    if (cm == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    cm->iface    = iface;
    cm->next_id  = 1;
    cm->async    = ucs_derived_of(worker, uct_priv_worker_t)->async;
    cm->async_fd = -1;
    cm->news_fd  = -1;
    status       = ucs_spinlock_init(&cm->news_lock, 0);
    if (status != UCS_OK) {
        ucs_free(cm);
        return status;
    }
    kh_init_inplace(strand_rc_cm_peers, &cm->peers);
    kh_init_inplace(strand_rc_cm_conns, &cm->conns);
    kh_init_inplace(strand_rc_cm_responders, &cm->responders);

    status = strand_rc_cm_companion_open(cm, worker, params, rc_config);
    if (status != UCS_OK) {
        goto err;
    }
    status = strand_rc_cm_companion_addr(cm);
    if (status == UCS_OK) {
        status = uct_iface_set_am_handler(cm->dc, STRAND_RC_CM_AM_ID,
                                          strand_rc_cm_am_cb, cm, 0);
    }
    if (status == UCS_OK) {
        status = strand_rc_cm_wait_init(cm);
    }
    if (status == UCS_OK) {
        status = strand_rc_cm_async_init(cm);
    }
    if (status != UCS_OK) {
        goto err_close;
    }
    *cm_p = cm;
    return UCS_OK;

err_close:
    strand_rc_cm_wait_cleanup(cm);
    uct_iface_close(cm->dc);
err:
    kh_destroy_inplace(strand_rc_cm_peers, &cm->peers);
    kh_destroy_inplace(strand_rc_cm_conns, &cm->conns);
    kh_destroy_inplace(strand_rc_cm_responders, &cm->responders);
    ucs_free(cm);
    return status;
}

void strand_rc_cm_stop(strand_rc_cm_t *cm)
{
    if ((cm != NULL) && (cm->async_fd >= 0)) {
        /* waits for a handler that runs */
        ucs_async_remove_handler(cm->async_fd, 1);
        cm->async_fd = -1;
    }
}

void strand_rc_cm_close(strand_rc_cm_t *cm)
{
    strand_rc_responder_t *r;
    strand_rc_cm_peer_t   *peer;
    strand_rc_conn_t      *conn;

    if (cm == NULL) {
        return;
    }
    strand_rc_cm_stop(cm);
    kh_foreach_value(&cm->conns, conn, {
        if (conn->ep != NULL) {
            strand_rc_ep(conn->ep)->conn = NULL;
        }
        ucs_free(conn);
    })
        ;
    kh_foreach_value(&cm->responders, r,
                     { strand_rc_responder_destroy(cm, r); })
        ;
    kh_foreach_value(&cm->peers, peer, { strand_rc_cm_peer_destroy(peer); })
        ;
    kh_destroy_inplace(strand_rc_cm_peers, &cm->peers);
    kh_destroy_inplace(strand_rc_cm_conns, &cm->conns);
    kh_destroy_inplace(strand_rc_cm_responders, &cm->responders);
    strand_rc_cm_wait_cleanup(cm);
    uct_iface_close(cm->dc);
    ucs_free(cm->news);
    ucs_spinlock_destroy(&cm->news_lock);
    ucs_free(cm);
}
