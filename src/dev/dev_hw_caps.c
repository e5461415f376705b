/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Capabilities of a hardware mlx5 device, queried, never assumed (spec
 * section 9): verbs device and port attributes, the GID table, DCI stream
 * limits (mlx5dv_query_device), atomic operations and their reply byte
 * order (the HCA's atomic capabilities through DEVX; without DEVX only what
 * verbs promises), the inline size a DCI is really given, and block
 * signature offload (mlx5dv_query_device sig_caps) with whether RC QPs may
 * be created for signature pipelining.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dev_hw.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

/* PRM QUERY_HCA_CAP (mlx5_ifc.h): opcode 0x100, op_mod = (cap type << 1) |
 * current; the capability follows a 16-byte output header. */
#define DEV_HW_CMD_QUERY_HCA_CAP 0x100
#define DEV_HW_CAP_ATOMIC        3
#define DEV_HW_CAP_OPMOD_CUR     1
#define DEV_HW_CAP_OUT_HDR       16
#define DEV_HW_CAP_SIZE          4096
/* atomic_caps fields: byte offsets within the capability (BE bit 0x40,
 * 0x90, 0xb0, 0xd0 of the PRM layout) */
#define DEV_HW_ATOMIC_MODE8B_BYTE 8  /* bits 7:6 */
#define DEV_HW_ATOMIC_OPS_OFF     18 /* BE16 */
#define DEV_HW_ATOMIC_SIZE_QP_OFF 22 /* BE16, bit n: 2^n bytes */
#define DEV_HW_ATOMIC_SIZE_DC_OFF 26 /* BE16 */
enum {
    DEV_HW_ATOMIC_OPS_CS        = 1 << 0,
    DEV_HW_ATOMIC_OPS_FA        = 1 << 1,
    DEV_HW_ATOMIC_OPS_MASKED_CS = 1 << 2,
    DEV_HW_ATOMIC_OPS_MASKED_FA = 1 << 3,
};

static uint16_t dev_hw_be16_at(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

/* Atomic capabilities through DEVX (what UCX reads too). 0 when known. */
/* The port's global traffic class as the kernel's mlx5 driver shows it
 * (/sys/class/infiniband/<dev>/tc/<port>/traffic_class: "Global
 * tclass=N", what rdma-core and UCX read); -1 when it says none. */
static int dev_hw_port_tclass(const strand_dev_t *dev, unsigned port)
{
    char          path[sizeof(dev->info.sysfs_path) + 32], buf[64];
    unsigned long tclass;
    size_t        n;
    FILE         *f;

    snprintf(path, sizeof(path), "%s/tc/%u/traffic_class", dev->info.sysfs_path,
             port);
    f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    n      = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    if ((sscanf(buf, "Global tclass=%lu", &tclass) != 1) || (tclass > 255)) {
        return -1;
    }
    return (int)tclass;
}

static int dev_hw_query_atomics_devx(dev_hw_t *h, strand_dev_caps_t *caps)
{
    uint8_t        in[16], out[DEV_HW_CAP_OUT_HDR + DEV_HW_CAP_SIZE];
    const uint8_t *cap = out + DEV_HW_CAP_OUT_HDR;
    uint16_t       ops, size_qp, size_dc;
    unsigned       mode8b;
    int            ret;

    memset(in, 0, sizeof(in));
    memset(out, 0, sizeof(out));
    in[0] = DEV_HW_CMD_QUERY_HCA_CAP >> 8;
    in[1] = DEV_HW_CMD_QUERY_HCA_CAP & 0xff;
    in[7] = (DEV_HW_CAP_ATOMIC << 1) | DEV_HW_CAP_OPMOD_CUR;
    ret   = mlx5dv_devx_general_cmd(h->ctx, in, sizeof(in), out, sizeof(out));
    if ((ret != 0) || (out[0] != 0)) {
        return -1;
    }
    mode8b  = (cap[DEV_HW_ATOMIC_MODE8B_BYTE] >> 6) & 3;
    ops     = dev_hw_be16_at(cap + DEV_HW_ATOMIC_OPS_OFF);
    size_qp = dev_hw_be16_at(cap + DEV_HW_ATOMIC_SIZE_QP_OFF);
    size_dc = dev_hw_be16_at(cap + DEV_HW_ATOMIC_SIZE_DC_OFF);

    caps->atomics = ((ops & (DEV_HW_ATOMIC_OPS_CS | DEV_HW_ATOMIC_OPS_FA)) ==
                     (DEV_HW_ATOMIC_OPS_CS | DEV_HW_ATOMIC_OPS_FA)) &&
                    (size_qp & size_dc & 8);
    /* masked atomics of both sizes on DC queues */
    caps->masked_atomics = caps->atomics &&
                           (ops & DEV_HW_ATOMIC_OPS_MASKED_CS) &&
                           (ops & DEV_HW_ATOMIC_OPS_MASKED_FA) &&
                           ((size_qp & size_dc & (4 | 8)) == (4 | 8));
    /* endianness mode 0: 8-byte replies in network order, 1: in host
     * order; 32-bit masked replies in network order in either mode (UCX's
     * ext_atomic_arg_sizes_be) */
    caps->atomic_reply_be64 = (mode8b == 0);
    caps->atomic_reply_be32 = 1;
    return 0;
}

/* The inline size a DCI gets: rdma-core sizes the WQE from the request and
 * refuses what does not fit the device's largest send descriptor; the
 * answer is in the capabilities it hands back. */
static uint32_t dev_hw_probe_max_inline(dev_hw_t *h, uint32_t max_sge)
{
    static const uint32_t      want[] = {828, 512, 256, 220, 128, 64, 0};
    struct ibv_qp_init_attr_ex init;
    struct mlx5dv_qp_init_attr dv;
    struct ibv_cq             *cq;
    struct ibv_qp             *qp;
    uint32_t                   got = 0;
    unsigned                   i;

    cq = ibv_create_cq(h->ctx, 1, NULL, NULL, 0);
    if (cq == NULL) {
        return 0;
    }
    for (i = 0; i < sizeof(want) / sizeof(want[0]); ++i) {
        memset(&init, 0, sizeof(init));
        init.qp_type             = IBV_QPT_DRIVER;
        init.send_cq             = cq;
        init.recv_cq             = cq;
        init.pd                  = h->pd;
        init.comp_mask           = IBV_QP_INIT_ATTR_PD;
        init.cap.max_send_wr     = 1;
        init.cap.max_send_sge    = max_sge;
        init.cap.max_inline_data = want[i];
        memset(&dv, 0, sizeof(dv));
        dv.comp_mask            = MLX5DV_QP_INIT_ATTR_MASK_DC;
        dv.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
        qp                      = mlx5dv_create_qp(h->ctx, &init, &dv);
        if (qp != NULL) {
            got = init.cap.max_inline_data;
            ibv_destroy_qp(qp);
            break;
        }
    }
    ibv_destroy_cq(cq);
    return got;
}

/* Signature pipelining (MLX5DV_QP_CREATE_SIG_PIPELINING): rdma-core refuses
 * the flag unless the kernel reported SQD->RTS support when the context was
 * opened (a provider-private flag no public call reads), and turns it on at
 * INIT with a DEVX INIT2INIT command (drain_sigerr). So: a DEVX context, a
 * device with block signature offload, and an RC QP rdma-core agrees to
 * create with the flag (destroyed at once; it never leaves RESET). */
static int
dev_hw_probe_sig_pipelining(dev_hw_t *h, const struct mlx5dv_sig_caps *sig)
{
    struct ibv_qp_init_attr_ex init;
    struct mlx5dv_qp_init_attr dv;
    struct ibv_cq             *cq;
    struct ibv_qp             *qp;

    if (!h->devx || (sig->block_prot == 0)) {
        return 0;
    }
    cq = ibv_create_cq(h->ctx, 1, NULL, NULL, 0);
    if (cq == NULL) {
        return 0;
    }
    memset(&init, 0, sizeof(init));
    init.qp_type          = IBV_QPT_RC;
    init.send_cq          = cq;
    init.recv_cq          = cq;
    init.pd               = h->pd;
    init.comp_mask        = IBV_QP_INIT_ATTR_PD;
    init.cap.max_send_wr  = 1;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_wr  = 1;
    init.cap.max_recv_sge = 1;
    memset(&dv, 0, sizeof(dv));
    dv.comp_mask    = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS;
    dv.create_flags = MLX5DV_QP_CREATE_SIG_PIPELINING;
    qp              = mlx5dv_create_qp(h->ctx, &init, &dv);
    if (qp != NULL) {
        ibv_destroy_qp(qp);
    }
    ibv_destroy_cq(cq);
    return qp != NULL;
}

static int dev_hw_query_gid_ex(void *ctx, uint8_t port, uint32_t index,
                               struct ibv_gid_entry *entry)
{
    return ibv_query_gid_ex(ctx, port, index, entry, 0);
}

int strand_dev_hw_query_caps(strand_dev_t *dev)
{
    dev_hw_t                 *h    = dev->priv;
    strand_dev_caps_t        *caps = &dev->caps;
    struct ibv_device_attr_ex attr;
    struct ibv_port_attr      pa;
    struct mlx5dv_context     dv;
    int                       ret;

    memset(&attr, 0, sizeof(attr));
    memset(&dv, 0, sizeof(dv));
    dv.comp_mask = MLX5DV_CONTEXT_MASK_DCI_STREAMS |
                   MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD;
    if ((ibv_query_device_ex(h->ctx, NULL, &attr) != 0) ||
        (mlx5dv_query_device(h->ctx, &dv) != 0) ||
        (ibv_query_port(h->ctx, DEV_HW_PORT, &pa) != 0)) {
        return errno ? errno : EIO;
    }
    if (pa.state != IBV_PORT_ACTIVE) {
        return ENETDOWN;
    }
    caps->max_qp_wr        = attr.orig_attr.max_qp_wr;
    caps->max_sge          = attr.orig_attr.max_sge;
    caps->max_mr_size_log2 = 63 -
                             __builtin_clzll(attr.orig_attr.max_mr_size | 1);
    caps->max_rd_atomic = attr.orig_attr.max_qp_rd_atom;
    caps->mtu           = 128u << pa.active_mtu;
    strand_dev_perf_from_port(&pa, &h->perf);
    caps->port_num   = DEV_HW_PORT;
    caps->link_layer = (pa.link_layer == IBV_LINK_LAYER_ETHERNET) ?
                               IBV_LINK_LAYER_ETHERNET :
                               IBV_LINK_LAYER_INFINIBAND;
    caps->lid = (caps->link_layer == IBV_LINK_LAYER_ETHERNET) ? 0 : pa.lid;
    ret       = strand_dev_pick_gid(h->ctx, dev_hw_query_gid_ex, DEV_HW_PORT,
                                    caps->link_layer, pa.gid_tbl_len,
                                    &caps->gid_index, &caps->gid);
    if (ret != 0) {
        return ret;
    }
    if (dv.comp_mask & MLX5DV_CONTEXT_MASK_DCI_STREAMS) {
        caps->dci_max_log_num_concurent =
                dv.dci_streams_caps.max_log_num_concurent;
        caps->dci_max_log_num_errored = dv.dci_streams_caps.max_log_num_errored;
    }
    /* block signature offload: what rdma-core's context holds (all zero on
     * a device without it, or a provider that does not answer the mask) */
    memset(&caps->sig_caps, 0, sizeof(caps->sig_caps));
    if (dv.comp_mask & MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD) {
        caps->sig_caps = dv.sig_caps;
    }
    caps->sig_pipelining  = dev_hw_probe_sig_pipelining(h, &caps->sig_caps);
    caps->tm_max_num_tags = attr.tm_caps.max_num_tags;
    caps->tm_max_ops      = attr.tm_caps.max_ops;
    caps->tm_max_rndv_hdr_size = attr.tm_caps.max_rndv_hdr_size;

    /* without DEVX: what verbs promises, no masked or 32-bit atomics.
     * mlx5_ib reports IBV_ATOMIC_HCA only where the HCA answers 8-byte
     * atomics in host order (endianness mode 1, which mlx5_core sets when
     * the HCA has it), IBV_ATOMIC_NONE otherwise: so a verbs atomic
     * replies in host order */
    caps->atomics           = attr.orig_attr.atomic_cap != IBV_ATOMIC_NONE;
    caps->masked_atomics    = 0;
    caps->atomic_reply_be64 = 0;
    caps->atomic_reply_be32 = 1;
    if (h->devx) {
        dev_hw_query_atomics_devx(h, caps);
    }
    caps->max_inline  = dev_hw_probe_max_inline(h, (caps->max_sge < 16) ?
                                                           caps->max_sge :
                                                           16);
    caps->devx        = h->devx;
    caps->port_tclass = dev_hw_port_tclass(dev, DEV_HW_PORT);
    return 0;
}
