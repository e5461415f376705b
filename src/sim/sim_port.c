/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The port's identity: its GIDs and MAC, and the address vectors that
 * name other ports (where a WQE's AV sends it, its SL and traffic class).
 * Read by the requester and the QP state machine; it asks nothing of them.
 */
#include "sim.h"
#include "sim_net.h"

#include <string.h>

/*
 * What the port shows the fabric. The fabric's identity lives in the GIDs
 * (a transport never needs STRAND_SIM_FABRIC): h = the identity the
 * segment got when it was made (random, sim_fabric_identity; never its
 * name, which two fabrics can share). InfiniBand: one GID, subnet prefix
 * fe80::/16 + 48 bits of h, interface id a GUID that encodes the LID. Ethernet (RoCE): a MAC
 * derived from the (internal) LID, its EUI-64 as interface id, and four
 * GIDs: link-local and a per-fabric ULA /64, each as RoCE v1 and v2.
 */
#define SIM_IB_SUBNET_LINK_LOCAL 0xfe80000000000000ull
#define SIM_IB_GUID_BASE         0x0002c90300000000ull /* | LID */
#define SIM_ROCE_ULA_BASE        0xfd00000000000000ull /* | 56 bits of the id */
#define SIM_ROCE_IID_BASE        0x000000fffe000000ull /* EUI-64 of MAC */

bool sim_port_is_eth(const smlx5_context_t *ctx)
{
    return ctx->cfg.link_layer == IBV_LINK_LAYER_ETHERNET;
}

/* Locally administered, unicast: 02:00:00:00:<LID>. */
static void sim_lid_mac(uint16_t lid, uint8_t mac[6])
{
    mac[0] = 0x02;
    mac[1] = mac[2] = mac[3] = 0;
    mac[4]                   = lid >> 8;
    mac[5]                   = lid & 0xff;
}

/* The /64 prefixes a GID of this fabric can carry, and the interface id
 * of a LID, for the port's link layer. */
static uint64_t sim_ib_subnet_prefix(const smlx5_context_t *ctx)
{
    return SIM_IB_SUBNET_LINK_LOCAL | (ctx->fabric_id & 0x0000ffffffffffffull);
}

static uint64_t sim_roce_ula_prefix(const smlx5_context_t *ctx)
{
    return SIM_ROCE_ULA_BASE | (ctx->fabric_id & 0x00ffffffffffffffull);
}

/* A port's interface id: its GUID on InfiniBand; on Ethernet the EUI-64
 * of its MAC, or across hosts its host's IPv4 address, ff:fe and its LID
 * (a GID names the host the packet goes to, as a RoCE GID does) */
static uint64_t sim_lid_iid(const smlx5_context_t *ctx, uint16_t lid)
{
    if (!sim_port_is_eth(ctx)) {
        return SIM_IB_GUID_BASE | lid;
    }
    if (ctx->net == NULL) {
        return SIM_ROCE_IID_BASE | lid;
    }
    return ((uint64_t)ntohl(
                    sim_net_host_addr(ctx->net, sim_fabric_lid_host(lid)))
            << 32) |
           0xfffe0000ull | lid;
}

static void sim_gid_add(smlx5_context_t *ctx, uint64_t prefix, uint64_t iid,
                        enum ibv_gid_type type)
{
    union ibv_gid *gid = &ctx->gids[ctx->num_gids];

    gid->global.subnet_prefix       = htobe64(prefix);
    gid->global.interface_id        = htobe64(iid);
    ctx->gid_types[ctx->num_gids++] = type;
}

void sim_port_identity_init(smlx5_context_t *ctx)
{
    uint64_t iid;

    ctx->fabric_id = sim_fabric_identity(ctx->fabric);
    ctx->num_gids  = 0;
    iid            = sim_lid_iid(ctx, ctx->lid);
    if (!sim_port_is_eth(ctx)) {
        sim_gid_add(ctx, sim_ib_subnet_prefix(ctx), iid, IBV_GID_TYPE_IB);
        return;
    }
    sim_lid_mac(ctx->lid, ctx->mac);
    sim_gid_add(ctx, SIM_IB_SUBNET_LINK_LOCAL, iid, IBV_GID_TYPE_ROCE_V1);
    sim_gid_add(ctx, SIM_IB_SUBNET_LINK_LOCAL, iid, IBV_GID_TYPE_ROCE_V2);
    sim_gid_add(ctx, sim_roce_ula_prefix(ctx), iid, IBV_GID_TYPE_ROCE_V1);
    sim_gid_add(ctx, sim_roce_ula_prefix(ctx), iid, IBV_GID_TYPE_ROCE_V2);
}

/* The fabric LID a GID of this fabric names, or 0 (the data path: a
 * packet to a port that is gone is lost on the wire, as on IB). */
uint16_t sim_gid_lid(const smlx5_context_t *ctx, const uint8_t raw[16])
{
    union ibv_gid gid;
    uint64_t      prefix, iid;
    bool          ours;

    memcpy(gid.raw, raw, sizeof(gid.raw));
    prefix = be64toh(gid.global.subnet_prefix);
    iid    = be64toh(gid.global.interface_id);
    ours   = sim_port_is_eth(ctx) ? ((prefix == SIM_IB_SUBNET_LINK_LOCAL) ||
                                   (prefix == sim_roce_ula_prefix(ctx))) :
                                    (prefix == sim_ib_subnet_prefix(ctx));
    if (!ours || (iid != sim_lid_iid(ctx, (uint16_t)iid))) {
        return 0;
    }
    return (uint16_t)iid;
}

/* The same for address resolution (create_av, RC modify): the port must
 * exist and its process be alive, as a neighbour lookup would find. */
uint16_t sim_gid_to_lid(const smlx5_context_t *ctx, const uint8_t raw[16])
{
    uint16_t lid = sim_gid_lid(ctx, raw);

    if ((ctx->net != NULL) && (lid != 0) && sim_net_is_remote(ctx->net, lid)) {
        /* another host's: known to be one of the fabric's, not whether
         * its process lives (a neighbour table would not know either) */
        return sim_net_reachable(ctx->net, lid) ? lid : 0;
    }
    return ((lid != 0) && sim_fabric_lid_alive(ctx->fabric, lid)) ? lid : 0;
}

uint16_t sim_av_route(const smlx5_context_t *ctx, const struct mlx5_wqe_av *av)
{
    uint16_t lid;

    if (!sim_port_is_eth(ctx)) {
        return be16toh(av->rlid);
    }
    if (!(be32toh(av->dqp_dct) & MLX5_EXTENDED_UD_AV)) {
        return 0; /* a base AV has no GRH: nowhere to go on RoCE */
    }
    lid = sim_gid_lid(ctx, av->rgid);
    return sim_lid_has_mac(lid, av->rmac) ? lid : 0;
}

void sim_av_qos(const smlx5_context_t *ctx, const struct mlx5_wqe_av *av,
                uint8_t *sl, uint8_t *tclass)
{
    bool grh = sim_port_is_eth(ctx) ?
                       !!(be32toh(av->dqp_dct) & MLX5_EXTENDED_UD_AV) :
                       ((be32toh(av->dqp_dct) & MLX5_EXTENDED_UD_AV) &&
                        (be32toh(av->grh_gid_fl) & (1u << 30)));

    /* as mlx5_create_ah lays them out: the SL in bits 3:0 on InfiniBand,
     * bits 3:1 on Ethernet (the priority) */
    *sl     = sim_port_is_eth(ctx) ? ((av->stat_rate_sl >> 1) & 0x7) :
                                     (av->stat_rate_sl & 0xf);
    *tclass = grh ? av->tclass : 0;
}

bool sim_lid_has_mac(uint16_t lid, const uint8_t mac[6])
{
    uint8_t expect[6];

    sim_lid_mac(lid, expect);
    return (lid != 0) && !memcmp(expect, mac, sizeof(expect));
}

/* The address of a port this device knows by its LID (the source LID of a
 * request): on InfiniBand the LID; on Ethernet the port's RoCE v2
 * link-local GID and MAC, as that port's GID table has them. Returns true
 * when the AV carries a GRH (extended AV). */
bool sim_av_for_lid(const smlx5_context_t *ctx, uint16_t lid,
                    struct mlx5_wqe_av *av)
{
    union ibv_gid gid;

    av->rlid = htobe16(lid);
    if (!sim_port_is_eth(ctx)) {
        return false;
    }
    gid.global.subnet_prefix = htobe64(SIM_IB_SUBNET_LINK_LOCAL);
    gid.global.interface_id  = htobe64(sim_lid_iid(ctx, lid));
    memcpy(av->rgid, gid.raw, sizeof(av->rgid));
    sim_lid_mac(lid, av->rmac);
    av->hop_limit  = 64;
    av->grh_gid_fl = htobe32(1u << 30);
    return true;
}

int sim_ah_attr_check(const smlx5_context_t    *ctx,
                      const struct ibv_ah_attr *attr)
{
    if (sim_port_is_eth(ctx) && !attr->is_global) {
        return EINVAL; /* RoCE always carries a GRH */
    }
    if (attr->is_global && (attr->grh.sgid_index >= ctx->num_gids)) {
        return EINVAL;
    }
    return 0;
}

/* mlx5's static-rate encoding of enum ibv_rate (0: unlimited). */
static uint8_t sim_mlx5_rate(enum ibv_rate rate)
{
    static const uint8_t mlx5_rate[] = {
            [IBV_RATE_2_5_GBPS] = 7,  [IBV_RATE_10_GBPS] = 8,
            [IBV_RATE_30_GBPS] = 9,   [IBV_RATE_5_GBPS] = 10,
            [IBV_RATE_20_GBPS] = 11,  [IBV_RATE_40_GBPS] = 12,
            [IBV_RATE_60_GBPS] = 13,  [IBV_RATE_80_GBPS] = 14,
            [IBV_RATE_120_GBPS] = 15, [IBV_RATE_14_GBPS] = 11,
            [IBV_RATE_56_GBPS] = 13,  [IBV_RATE_112_GBPS] = 15,
            [IBV_RATE_25_GBPS] = 9,   [IBV_RATE_100_GBPS] = 15,
            [IBV_RATE_28_GBPS] = 9,   [IBV_RATE_50_GBPS] = 13,
    };

    return ((unsigned)rate < sizeof(mlx5_rate)) ? mlx5_rate[rate] : 0;
}

/* RoCE v2: the UDP source port rides in rlid, from the flow label or, as
 * rdma-core does without one, drawn at random from the valid range. */
static uint16_t sim_roce_udp_sport(smlx5_context_t *ctx, uint32_t flow_label)
{
    uint32_t span = IB_ROCE_UDP_ENCAP_VALID_PORT_MAX -
                    IB_ROCE_UDP_ENCAP_VALID_PORT_MIN + 1;

    flow_label &= IB_GRH_FLOWLABEL_MASK;
    if (flow_label != 0) {
        return ibv_flow_label_to_udp_sport(flow_label);
    }
    ctx->rng ^= ctx->rng << 13;
    ctx->rng ^= ctx->rng >> 7;
    ctx->rng ^= ctx->rng << 17;
    return (uint16_t)(IB_ROCE_UDP_ENCAP_VALID_PORT_MIN + ctx->rng % span);
}

int smlx5_create_av(smlx5_pd_t *pd, const struct ibv_ah_attr *attr,
                    struct mlx5_wqe_av *av)
{
    smlx5_context_t *ctx  = pd->ctx;
    uint8_t          rate = sim_mlx5_rate(attr->static_rate);
    uint32_t         grh  = 0;
    uint16_t         lid;
    int              ret;

    if (attr->port_num != SMLX5_PORT_NUM) {
        return EINVAL;
    }
    ret = sim_ah_attr_check(ctx, attr);
    if (ret != 0) {
        return ret;
    }
    memset(av, 0, sizeof(*av));
    if (sim_port_is_eth(ctx)) {
        pthread_mutex_lock(&ctx->lock);
        lid = sim_gid_to_lid(ctx, attr->grh.dgid.raw);
        if (lid != 0) {
            sim_lid_mac(lid, av->rmac);
            if (ctx->gid_types[attr->grh.sgid_index] == IBV_GID_TYPE_ROCE_V2) {
                av->rlid = htobe16(
                        sim_roce_udp_sport(ctx, attr->grh.flow_label));
            }
        }
        pthread_mutex_unlock(&ctx->lock);
        if (lid == 0) {
            return EHOSTUNREACH; /* no neighbour owns that GID */
        }
        /* the GRH bit is reserved on RoCE: every packet has one */
        av->stat_rate_sl = (rate << 4) | ((attr->sl & 0x7) << 1);
    } else {
        av->fl_mlid      = attr->src_path_bits & 0x7f;
        av->rlid         = htobe16(attr->dlid);
        av->stat_rate_sl = (rate << 4) | (attr->sl & 0xf);
        grh              = 1;
    }
    if (attr->is_global) {
        av->tclass     = attr->grh.traffic_class;
        av->hop_limit  = attr->grh.hop_limit;
        av->grh_gid_fl = htobe32(
                (grh << 30) | ((uint32_t)attr->grh.sgid_index << 20) |
                (attr->grh.flow_label & IB_GRH_FLOWLABEL_MASK));
        memcpy(av->rgid, attr->grh.dgid.raw, sizeof(av->rgid));
    }
    return 0;
}
