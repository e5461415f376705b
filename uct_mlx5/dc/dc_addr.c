/*
 * dc_strand addresses and address vectors. Everything comes from the device
 * layer's port attributes (LID, link layer, the chosen GID); nothing from
 * the environment or sysfs.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dc_addr.h"
#include "mlx5/wqe.h"

#include <ucs/debug/log.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

static int strand_dc_addr_is_eth(const strand_iface_t *iface)
{
    return iface->dev->caps.link_layer == IBV_LINK_LAYER_ETHERNET;
}

size_t strand_dc_addr_device_len(const strand_iface_t *iface)
{
    return strand_dc_addr_is_eth(iface) ?
           (1 + sizeof(((strand_dc_device_addr_t*)NULL)->gid)) :
           (1 + sizeof(((strand_dc_device_addr_t*)NULL)->ib));
}

void strand_dc_addr_pack_device(const strand_iface_t *iface,
                                strand_dc_device_addr_t *addr)
{
    const strand_dev_caps_t *caps = &iface->dev->caps;

    if (strand_dc_addr_is_eth(iface)) {
        addr->flags = STRAND_DC_ADDR_FLAG_ETH;
        memcpy(addr->gid, caps->gid.raw, sizeof(addr->gid));
    } else {
        addr->flags            = 0;
        addr->ib.lid           = caps->lid;
        addr->ib.subnet_prefix = caps->gid.global.subnet_prefix;
    }
}

void strand_dc_addr_pack_iface(const strand_iface_t *iface,
                               strand_dc_iface_addr_t *addr)
{
    uint32_t dctn = strand_dc_iface(iface)->dct.qpn;

    addr->dctn[0] = dctn & 0xff;
    addr->dctn[1] = (dctn >> 8) & 0xff;
    addr->dctn[2] = (dctn >> 16) & 0xff;
    addr->flags   = (iface->config.am_tmh > 0) ?
                    STRAND_DC_IFACE_ADDR_FLAG_TM : 0;
}

int strand_dc_addr_iface_compatible(const strand_iface_t *iface,
                                    const strand_dc_iface_addr_t *addr)
{
    return !!(addr->flags & STRAND_DC_IFACE_ADDR_FLAG_TM) ==
           (iface->config.am_tmh > 0);
}

uint32_t strand_dc_addr_dctn(const strand_dc_iface_addr_t *addr)
{
    return (uint32_t)addr->dctn[0] | ((uint32_t)addr->dctn[1] << 8) |
           ((uint32_t)addr->dctn[2] << 16);
}

/* An IPv4 address in a GID: ::ffff:a.b.c.d */
static int strand_dc_gid_is_v4(const uint8_t *gid)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                       0xff, 0xff};

    return !memcmp(gid, prefix, sizeof(prefix));
}

/*
 * InfiniBand: a LID on the same subnet (the subnet prefix, which on the
 * software device also names the fabric). RoCE: the same address family
 * and, for IPv6 GIDs, the same /64 prefix (IPv4 GIDs are routed, as UCX
 * treats them without UCX_IB_ROCE_LOCAL_SUBNET).
 */
int strand_dc_addr_is_reachable(const strand_iface_t *iface,
                                const strand_dc_device_addr_t *addr)
{
    const strand_dev_caps_t *caps = &iface->dev->caps;
    int eth                       = strand_dc_addr_is_eth(iface);

    if ((addr == NULL) ||
        (!!(addr->flags & STRAND_DC_ADDR_FLAG_ETH) != eth)) {
        return 0;
    }
    if (!eth) {
        return (addr->ib.lid != 0) &&
               (addr->ib.subnet_prefix == caps->gid.global.subnet_prefix);
    }
    if (strand_dc_gid_is_v4(addr->gid) != strand_dc_gid_is_v4(caps->gid.raw)) {
        return 0;
    }
    return strand_dc_gid_is_v4(addr->gid) ||
           !memcmp(addr->gid, caps->gid.raw, 8);
}

ucs_status_t strand_dc_addr_make_av(strand_iface_t *iface,
                                    const strand_dc_device_addr_t *dev_addr,
                                    uint32_t dctn, struct mlx5_wqe_av *av,
                                    unsigned *av_size)
{
    strand_dev_t *dev = iface->dev;
    struct ibv_ah_attr ah;
    char gid_str[64];
    int err;

    memset(&ah, 0, sizeof(ah));
    strand_dev_set_path(dev, &ah);
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
        ucs_error("%s: dc_strand: no path to %s: %s", dev->info.name,
                  gid_str, strerror(err));
        return UCS_ERR_UNREACHABLE;
    }
    av->key.dc_key = htobe64(STRAND_DC_ACCESS_KEY);
    av->dqp_dct    = htobe32((dctn & 0xffffff) |
                             (ah.is_global ? MLX5_EXTENDED_UD_AV : 0));
    *av_size       = ah.is_global ? STRAND_AV_FULL_SIZE : STRAND_AV_BASE_SIZE;
    return UCS_OK;
}

const char *strand_dc_addr_av_str(const struct mlx5_wqe_av *av, char *buf,
                                  size_t max)
{
    uint32_t dqp_dct = be32toh(av->dqp_dct);
    char gid[INET6_ADDRSTRLEN];

    if (dqp_dct & MLX5_EXTENDED_UD_AV) {
        inet_ntop(AF_INET6, av->rgid, gid, sizeof(gid));
        snprintf(buf, max, "gid %s dct 0x%x", gid, dqp_dct & 0xffffff);
    } else {
        snprintf(buf, max, "lid %u dct 0x%x", be16toh(av->rlid),
                 dqp_dct & 0xffffff);
    }
    return buf;
}

uint64_t strand_dc_addr_peer_key(const struct mlx5_wqe_av *av)
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
