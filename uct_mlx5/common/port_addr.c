/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The port's address and address vectors (port_addr.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "port_addr.h"
#include "mlx5/wqe.h"

#include <ucs/debug/log.h>

#include <arpa/inet.h>
#include <endian.h>
#include <stdio.h>
#include <string.h>

static int strand_port_is_eth(const strand_iface_t *iface)
{
    return iface->dev->caps.link_layer == IBV_LINK_LAYER_ETHERNET;
}

size_t strand_port_addr_len(const strand_iface_t *iface)
{
    return strand_port_is_eth(iface) ?
                   (1 + sizeof(((strand_port_addr_t *)NULL)->gid)) :
                   (1 + sizeof(((strand_port_addr_t *)NULL)->ib));
}

void strand_port_addr_pack(const strand_iface_t *iface,
                           strand_port_addr_t   *addr)
{
    const strand_dev_caps_t *caps = &iface->dev->caps;

    if (strand_port_is_eth(iface)) {
        addr->flags = STRAND_PORT_ADDR_FLAG_ETH;
        memcpy(addr->gid, caps->gid.raw, sizeof(addr->gid));
    } else {
        addr->flags            = 0;
        addr->ib.lid           = caps->lid;
        addr->ib.subnet_prefix = caps->gid.global.subnet_prefix;
    }
}

/* An IPv4 address in a GID: ::ffff:a.b.c.d */
static int strand_gid_is_v4(const uint8_t *gid)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0,    0,
                                       0, 0, 0, 0, 0xff, 0xff};

    return !memcmp(gid, prefix, sizeof(prefix));
}

/*
 * InfiniBand: a LID on the same subnet (the subnet prefix, which on the
 * software device also names the fabric). RoCE: the same address family
 * and, for IPv6 GIDs, the same /64 prefix (IPv4 GIDs are routed, as UCX
 * treats them without UCX_IB_ROCE_LOCAL_SUBNET).
 */
const char *strand_port_addr_unreachable(const strand_iface_t     *iface,
                                         const strand_port_addr_t *addr,
                                         char *buf, size_t max)
{
    const strand_dev_caps_t *caps = &iface->dev->caps;
    int                      eth  = strand_port_is_eth(iface);

    if (addr == NULL) {
        return "no device address";
    }
    if (!!(addr->flags & STRAND_PORT_ADDR_FLAG_ETH) != eth) {
        snprintf(buf, max, "the peer's port is %s, this one %s",
                 eth ? "InfiniBand" : "RoCE", eth ? "RoCE" : "InfiniBand");
        return buf;
    }
    if (!eth) {
        if (addr->ib.lid == 0) {
            return "the peer's address has no LID";
        }
        if (addr->ib.subnet_prefix != caps->gid.global.subnet_prefix) {
            snprintf(buf, max,
                     "the peer's subnet prefix 0x%016llx is not "
                     "this port's 0x%016llx (another subnet, or another "
                     "software fabric)",
                     (unsigned long long)be64toh(addr->ib.subnet_prefix),
                     (unsigned long long)be64toh(
                             caps->gid.global.subnet_prefix));
            return buf;
        }
        return NULL;
    }
    if (strand_gid_is_v4(addr->gid) != strand_gid_is_v4(caps->gid.raw)) {
        snprintf(buf, max, "the peer's GID is %s, this port's %s",
                 strand_gid_is_v4(addr->gid) ? "IPv4" : "IPv6",
                 strand_gid_is_v4(caps->gid.raw) ? "IPv4" : "IPv6");
        return buf;
    }
    if (!strand_gid_is_v4(addr->gid) && memcmp(addr->gid, caps->gid.raw, 8)) {
        snprintf(buf, max,
                 "the peer's GID prefix %02x%02x:%02x%02x:%02x%02x:"
                 "%02x%02x is not this port's (another subnet, or another "
                 "software fabric)",
                 addr->gid[0], addr->gid[1], addr->gid[2], addr->gid[3],
                 addr->gid[4], addr->gid[5], addr->gid[6], addr->gid[7]);
        return buf;
    }
    return NULL;
}

int strand_port_addr_is_reachable(const strand_iface_t     *iface,
                                  const strand_port_addr_t *addr)
{
    char why[160];

    return strand_port_addr_unreachable(iface, addr, why, sizeof(why)) == NULL;
}

ucs_status_t strand_port_addr_make_av(strand_iface_t           *iface,
                                      const strand_port_addr_t *dev_addr,
                                      uint32_t qpn, struct mlx5_wqe_av *av,
                                      unsigned *av_size)
{
    strand_dev_t      *dev = iface->dev;
    struct ibv_ah_attr ah;
    char               gid_str[64];
    int                err;

    memset(&ah, 0, sizeof(ah));
    strand_dev_set_path(dev, &iface->path, &ah);
    if (ah.is_global) {
        memcpy(ah.grh.dgid.raw, dev_addr->gid, sizeof(ah.grh.dgid.raw));
    } else {
        ah.dlid = dev_addr->ib.lid;
    }
    err = dev->ops->create_av(dev, &ah, av);
    if (err != 0) {
        if (ah.is_global) {
            inet_ntop(AF_INET6, dev_addr->gid, gid_str, sizeof(gid_str));
        } else {
            snprintf(gid_str, sizeof(gid_str), "lid %u", ah.dlid);
        }
        ucs_error("%s: %s: no path to %s: %s", dev->info.name, iface->tl_name,
                  gid_str, strerror(err));
        return UCS_ERR_UNREACHABLE;
    }
    av->key.dc_key = 0;
    av->dqp_dct    = htobe32((qpn & 0xffffff) |
                             (ah.is_global ? MLX5_EXTENDED_UD_AV : 0));
    *av_size       = ah.is_global ? STRAND_AV_FULL_SIZE : STRAND_AV_BASE_SIZE;
    return UCS_OK;
}

const char *strand_av_str(const struct mlx5_wqe_av *av, char *buf, size_t max)
{
    uint32_t dqp_dct = be32toh(av->dqp_dct);
    char     gid[INET6_ADDRSTRLEN];

    if (dqp_dct & MLX5_EXTENDED_UD_AV) {
        inet_ntop(AF_INET6, av->rgid, gid, sizeof(gid));
        snprintf(buf, max, "gid %s dct 0x%x", gid, dqp_dct & 0xffffff);
    } else {
        snprintf(buf, max, "lid %u dct 0x%x", be16toh(av->rlid),
                 dqp_dct & 0xffffff);
    }
    return buf;
}

int strand_av_names_port(const struct mlx5_wqe_av *av,
                         const strand_port_addr_t *addr)
{
    if (be32toh(av->dqp_dct) & MLX5_EXTENDED_UD_AV) {
        return (addr->flags & STRAND_PORT_ADDR_FLAG_ETH) &&
               !memcmp(av->rgid, addr->gid, sizeof(av->rgid));
    }
    return !(addr->flags & STRAND_PORT_ADDR_FLAG_ETH) &&
           (be16toh(av->rlid) == addr->ib.lid);
}

uint64_t strand_av_peer_key(const struct mlx5_wqe_av *av)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a of the GID */
    unsigned i;

    if (!(be32toh(av->dqp_dct) & MLX5_EXTENDED_UD_AV)) {
        return be16toh(av->rlid);
    }
    for (i = 0; i < sizeof(av->rgid); ++i) {
        h = (h ^ av->rgid[i]) * 0x100000001b3ull;
    }
    return h | (1ull << 63); /* never a LID */
}
