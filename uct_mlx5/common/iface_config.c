/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The options both transports have, with their help (iface_config.h).
 * Where the transports differ, the text says how.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "iface_config.h"
#include "uct_mlx5/strand_sig.h"
#include "uct_mlx5/ucx_compat.h"

#define STRAND_CONFIG_FIELD(_field) \
    ucs_offsetof(strand_iface_common_config_t, _field)

ucs_config_field_t strand_iface_common_config_table[] = {
        {"TX_QUEUE_LEN", "128",
         "Send queue depth, in work requests, of each send queue: a DCI of "
         "dc_strand, an endpoint's QP of rc_strand (8 .. device limit).",
         STRAND_CONFIG_FIELD(tx_queue_len), UCS_CONFIG_TYPE_UINT},

        {"TX_CQ_MODERATION", "32",
         "Send WQEs posted without asking for a completion (CQE) at most, "
         "before one that asks (1 .. inf; 1 = every WQE gets a CQE). Fewer "
         "CQEs make posting and completing cheaper; a CQE completes every WQE "
         "before it. WQEs whose completion has work to do (a callback, a "
         "buffer to release, data to unpack) always ask. At most a quarter of "
         "the send queue takes effect.",
         STRAND_CONFIG_FIELD(tx_cq_moderation), UCS_CONFIG_TYPE_UINT},

        {"RX_QUEUE_LEN", "4095",
         "Receive buffers posted on the interface's shared receive queue "
         "(1 .. 32767).",
         STRAND_CONFIG_FIELD(rx_queue_len), UCS_CONFIG_TYPE_UINT},

        {"RX_MAX_POLL", "16",
         "Receive completions handled by one progress call at most (1 .. inf), "
         "as UCX_IB_RX_MAX_POLL: UCP relies on a bound for fair progress "
         "across its interfaces and for probing.",
         STRAND_CONFIG_FIELD(rx_max_poll), UCS_CONFIG_TYPE_ULUNITS},

        STRAND_IFACE_MPOOL_CONFIG_FIELDS(
                "TX_", -1, 128, "send", STRAND_CONFIG_FIELD(tx_mp),
                " Bounce buffers of bcopy sends and fetched "
                "atomics."),

        STRAND_IFACE_MPOOL_CONFIG_FIELDS(
                "RX_", -1, 256, "receive", STRAND_CONFIG_FIELD(rx_mp),
                " Those a receive handler keeps stay out of "
                "the receive queue until released."),

        {"TX_MAX_POLL", "16",
         "Sends completed by one progress call at most (1 .. inf), as "
         "UCX_IB_TX_MAX_POLL, but counted in sends, not CQEs (one CQE "
         "completes "
         "up to TX_CQ_MODERATION of them): polling stops at the CQE that "
         "reaches it, so 128 endpoints that wait for room are woken evenly.",
         STRAND_CONFIG_FIELD(tx_max_poll), UCS_CONFIG_TYPE_ULUNITS},

        {"SEG_SIZE", "8256",
         "Size of a receive buffer and of a bounce buffer for bcopy "
         "operations: "
         "the largest active message (with its 1-byte id) and the largest "
         "bcopy PUT/GET (64 .. 1M).",
         STRAND_CONFIG_FIELD(seg_size), UCS_CONFIG_TYPE_MEMUNITS},

        {"TIMEOUT", "1.0s",
         "Transport timeout: how long a send queue waits for an acknowledgment "
         "before retransmitting (rounded up to 4.096us * 2^n, at most ~2.4 "
         "hours).",
         STRAND_CONFIG_FIELD(timeout), UCS_CONFIG_TYPE_TIME},

        {"RETRY_COUNT", "7",
         "Retransmissions after a transport timeout before the operation fails "
         "with an endpoint timeout (0 .. 7).",
         STRAND_CONFIG_FIELD(retry_count), UCS_CONFIG_TYPE_UINT},

        {"RNR_TIMEOUT", "1ms",
         "Receiver-not-ready delay the interface asks senders to wait when it "
         "has no receive buffer (rounded up to the InfiniBand RNR timer table, "
         "0.01ms .. 491.52ms).",
         STRAND_CONFIG_FIELD(rnr_timeout), UCS_CONFIG_TYPE_TIME},

        {"RNR_RETRY_COUNT", "7",
         "Retries after a receiver-not-ready NAK before the operation fails "
         "(0 .. 7; 7 means retry forever).",
         STRAND_CONFIG_FIELD(rnr_retry_count), UCS_CONFIG_TYPE_UINT},

        {"TRAFFIC_CLASS", "auto",
         "Traffic class of the GRH every packet carries on RoCE (and global "
         "InfiniBand paths): on RoCE v2 the DSCP << 2 | ECN. auto: the port's "
         "configured global class (sysfs tc/<port>/traffic_class) if any, else "
         "106 (DSCP 26 with ECN, the class lossless RoCE fabrics run PFC on) "
         "on RoCE and 0 on InfiniBand, as UCX's UCX_IB_TRAFFIC_CLASS. 0 .. "
         "255.",
         STRAND_CONFIG_FIELD(traffic_class), UCS_CONFIG_TYPE_ULUNITS},

        {"SL", "auto",
         "Service level of every packet: the SL of the address vectors and of "
         "the QPs' paths on InfiniBand (0 .. 15), the priority on RoCE "
         "(0 .. 7). auto: 0.",
         STRAND_CONFIG_FIELD(sl), UCS_CONFIG_TYPE_ULUNITS},

        {"RX_INLINE", "y",
         "Let the device deliver small messages (up to 64 bytes: active "
         "messages, and with tag matching eager messages and rendezvous "
         "requests, also those matched to a posted tag) inside the receive "
         "completion (scatter-to-CQE) instead of the receive buffer; an active "
         "message then goes to its handler from there, without "
         "UCT_CB_PARAM_FLAG_DESC (am_alignment applies to descriptors only). "
         "The "
         "receive CQ then has 128-byte CQEs, as UCX's own RX_INLINE=64. n: the "
         "data always goes to the buffer (and the receive CQ's CQEs are "
         "rdma-core's default size). A rendezvous request matched to a tag "
         "whose buffer is being written by an earlier message's rendezvous "
         "(UCP posting one buffer for several receives) is only safe with y, "
         "on a NIC as here.",
         STRAND_CONFIG_FIELD(rx_inline), UCS_CONFIG_TYPE_BOOL},

        {"MAX_INLINE", "186",
         "Largest data written inline in a WQE: active message short "
         "(including "
         "the 1-byte AM id and the 8-byte header) and PUT short "
         "(16 .. device limit).",
         STRAND_CONFIG_FIELD(max_inline), UCS_CONFIG_TYPE_MEMUNITS},

        {"TX_CQ_LEN", "0",
         "Entries of each send completion queue. 0: the send queues it serves "
         "times TX_QUEUE_LEN, + 64 (a CQE may come for every send, and the CQ "
         "is told what was consumed once per poll, so it must hold that many): "
         "dc_strand has one CQ for its NUM_DCI DCIs; rc_strand one for each "
         "min(MAX_EPS, 256) endpoints, made with the first of them, which also "
         "holds the rendezvous reads with tag matching.",
         STRAND_CONFIG_FIELD(tx_cq_len), UCS_CONFIG_TYPE_UINT},

        {"RX_CQ_LEN", "0",
         "Entries of the receive completion queue; 0 = RX_QUEUE_LEN + 1 "
         "(must be at least that).",
         STRAND_CONFIG_FIELD(rx_cq_len), UCS_CONFIG_TYPE_UINT},

        {"TM_ENABLE", "n",
         "Hardware tag matching: the device matches tagged messages against "
         "the receives posted with uct_iface_tag_recv_zcopy and puts eager "
         "data "
         "straight into their buffers; a rendezvous is read by the receiver "
         "(dc_strand: the device's RDMA READ and FIN; rc_strand: the "
         "transport's READ on the QP it arrived on, then a FIN fenced behind "
         "it, both checked with INTEGRITY). y: on, or the interface fails to "
         "open where the device has no tag matching; try: on where the device "
         "has it; n: off. An interface opened without the unexpected-message "
         "callbacks (uct_iface_params_t eager_cb and rndv_cb) drops, counts "
         "and logs tagged messages that match no receive. Every message then "
         "carries a 16-byte tag-matching header, and both sides must agree "
         "(an interface with it does not reach one without it).",
         STRAND_CONFIG_FIELD(tm_enable), UCS_CONFIG_TYPE_TERNARY},

        {"TM_LIST_SIZE", "1024",
         "Tag matching: receives posted to the device at a time (1 .. the "
         "device's tag list, which caps it); more get UCS_ERR_EXCEEDS_LIMIT "
         "and "
         "UCP keeps them in its own matching.",
         STRAND_CONFIG_FIELD(tm_list_size), UCS_CONFIG_TYPE_UINT},

        {"TM_RNDV_OPS", "1024",
         "Tag matching: hardware rendezvous sends waiting for the receiver's "
         "FIN "
         "at a time (1 .. 65536); more get UCS_ERR_NO_RESOURCE.",
         STRAND_CONFIG_FIELD(tm_rndv_ops), UCS_CONFIG_TYPE_UINT},

        {"INTEGRITY", "off",
         "Integrity-checked zero-copy GETs (the data of rendezvous):\n"
         " off    - no checks\n"
         " crc32c - the sender's device adds a CRC32C to every 512-byte block "
         "it reads out of registered memory, the receiver's device checks and "
         "strips it; a bad block makes the transport read the data again "
         "(INTEGRITY_RETRIES times at most per piece, then the GET and its "
         "endpoint fail with UCS_ERR_IO_ERROR)\n"
         " t10dif - the same with a T10-DIF guard (CRC16) per block\n"
         "Both sides need it (a key of a peer without it is read unchecked, "
         "and "
         "counted). The memory domain reads this option when it opens, to pack "
         "the signing key with every remote key (32 bytes instead of 8). Needs "
         "a device with block signature offload (docs/integrity.md).",
         STRAND_CONFIG_FIELD(integrity),
         UCS_CONFIG_TYPE_ENUM(strand_integrity_kind_names)},

        {"INTEGRITY_RETRIES", "8",
         "Reads again of a piece of a GET that had a bad block (from its first "
         "bad block on), before the GET fails, and its endpoint with it.",
         STRAND_CONFIG_FIELD(integrity_retries), UCS_CONFIG_TYPE_UINT},

        {"INTEGRITY_READ_SIZE", "8k",
         "A checked GET is read in pieces of this many bytes (whole 512-byte "
         "blocks), each checked and read again on its own: the larger, the "
         "fewer READs; the smaller, the less a bad block costs.",
         STRAND_CONFIG_FIELD(integrity_read_size), UCS_CONFIG_TYPE_MEMUNITS},

        {NULL}};
