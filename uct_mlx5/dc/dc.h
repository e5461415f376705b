/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_strand: the DC transport of the strand component (its types; the
 * interface's class and tables are dc_iface.h's).
 *
 * One interface = one DCT on the shared interface's SRQ (receive side) and
 * a pool of DCIs (send side), which are its send queues. An endpoint takes
 * a DCI from the pool while it has outstanding work (the TX policy,
 * dc_policy.h), so an error on a DCI belongs to the endpoints that used it:
 * they fail, the DCI (or its stream) is reset and goes back to the pool,
 * every other endpoint keeps going.
 */
#ifndef STRAND_DC_H_
#define STRAND_DC_H_

#include "uct_mlx5/common/iface.h"

#define STRAND_DC_TL_NAME       "dc_strand"
#define STRAND_DC_CONFIG_PREFIX "DC_STRAND_"
#define STRAND_DC_ACCESS_KEY    0x1ee7a330ull /* DC access key (as UCX) */
#define STRAND_DC_MAX_DCI       128
#define STRAND_DC_CONNECT_LATENCY \
    60e-9 /* DC connect packet (as
             UCX's dc_mlx5) */
/* the device's rendezvous with DC: its RVH and RAVH after the TMH */
#define STRAND_DC_RNDV_HDR_LEN (STRAND_RVH_SIZE + STRAND_RAVH_SIZE)

/* How endpoints share the DCIs (UCX_DC_STRAND_TX_POLICY). */
typedef enum strand_dc_tx_policy {
    STRAND_DC_TX_POLICY_DCS,       /* a DCI per active ep, held until idle */
    STRAND_DC_TX_POLICY_DCS_QUOTA, /* ... but given back after QUOTA posts
                                      while another ep waits for one */
    STRAND_DC_TX_POLICY_STREAMS,   /* DCIs shared, a stream per ep or peer */
    STRAND_DC_TX_POLICY_AUTO,      /* streams where the device has them */
    STRAND_DC_TX_POLICY_LAST
} strand_dc_tx_policy_t;

/* Which eps share a stream (UCX_DC_STRAND_STREAM_MAP). */
typedef enum strand_dc_stream_map {
    STRAND_DC_STREAM_MAP_EP,   /* a stream per ep: most isolation */
    STRAND_DC_STREAM_MAP_PEER, /* a stream per peer NIC */
    STRAND_DC_STREAM_MAP_LAST
} strand_dc_stream_map_t;

/* UCX_DC_STRAND_*: the shared options, and those of the DCIs' policy */
typedef struct strand_dc_iface_config {
    strand_iface_config_t super;
    int                   tx_policy;
    unsigned              quota;
    unsigned              dci_streams;
    unsigned              errored_streams;
    int                   stream_map;
} strand_dc_iface_config_t;

/* dc_strand's part of a DCI stream (beside the shared strand_lane_t):
 * which destinations use it, for the stream map and the placement */
typedef struct strand_dc_lane {
    uint64_t peer;  /* per-peer mapping: the peer's key */
    uint64_t dest;  /* its first user's destination */
    uint8_t  mixed; /* users of more than one destination */
} strand_dc_lane_t;

/* dc_strand's part of a DCI (beside the shared send queue of its index) */
typedef struct strand_dc_dci {
    uint64_t          home;       /* streams: the destination of the first
                                     ep that leased it empty (kept while
                                     it is empty) */
    strand_dc_lane_t *lanes;      /* config.num_lanes of them */
    uint32_t          lease_wqes; /* the DCI's wqes when its ep took it
                                     (dcs_quota: its posts since) */
} strand_dc_dci_t;

/* dc_strand's endpoint: the shared one, and the peer's DCT */
typedef struct strand_dc_ep {
    strand_ep_t super;
    uint32_t    dct_num; /* the DCT its WQEs name */
} strand_dc_ep_t;

typedef struct strand_dc_iface {
    strand_iface_t    super;
    strand_dev_qp_t   dct;
    uint8_t           have_dct;
    uint8_t           tx_policy; /* strand_dc_tx_policy_t, resolved */
    uint8_t           no_devx;   /* auto left streams out: no DEVX
                                    to reset one */
    strand_dc_dci_t  *dcis;      /* by send queue index */
    strand_dc_lane_t *dci_lanes; /* their lanes, in one array */
    uint16_t         *dci_stack; /* free DCIs (dcs, dcs_quota) */
    unsigned          dci_top;
    unsigned          next_dci; /* streams: where leases start */
    struct {
        uint8_t  log_concurent; /* DCI creation attributes */
        uint8_t  log_errored;
        int      stream_per_peer;
        unsigned quota; /* posts per DCI while others
                           wait (UINT_MAX: none) */
    } config;
} strand_dc_iface_t;

/* the DC interface of a shared one (dc_strand's tl ops get the shared) */
#define strand_dc_iface(_iface) ucs_derived_of(_iface, strand_dc_iface_t)

/* dc_strand's part of a send queue, and of one of its lanes */
#define strand_dc_dci(_iface, _txq) \
    (&strand_dc_iface(_iface)->dcis[(_txq)->index])
#define strand_dc_lane(_iface, _txq, _lane) \
    (&strand_dc_dci(_iface, _txq)->lanes[_lane])

#endif
