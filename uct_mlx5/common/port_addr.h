/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The address of the device's port, as both transports give it to peers
 * (uct_iface_get_device_address: LID and subnet prefix on InfiniBand, GID
 * on RoCE), whether a peer's is reachable, and the address vector that
 * names a QP behind one (a DC WQE carries it; a connected QP is named by it
 * in messages). Everything comes from the device layer's port attributes;
 * nothing from the environment or sysfs.
 */
#ifndef STRAND_PORT_ADDR_H_
#define STRAND_PORT_ADDR_H_

#include "iface.h"

enum {
    STRAND_PORT_ADDR_FLAG_ETH = UCS_BIT(0) /* RoCE: a GID, no LID */
};

/* Device address. InfiniBand: flags, LID, subnet prefix (which subnet, and
 * on the software device which fabric); Ethernet: flags, GID. The length
 * follows from the link layer (see strand_port_addr_len). */
typedef struct strand_port_addr {
    uint8_t flags;
    union {
        struct {
            uint16_t lid;
            uint64_t subnet_prefix; /* network order, as in the GID */
        } UCS_S_PACKED ib;
        uint8_t        gid[16];
    } UCS_S_PACKED;
} UCS_S_PACKED strand_port_addr_t;

size_t strand_port_addr_len(const strand_iface_t *iface);
void   strand_port_addr_pack(const strand_iface_t *iface,
                             strand_port_addr_t   *addr);
int    strand_port_addr_is_reachable(const strand_iface_t     *iface,
                                     const strand_port_addr_t *addr);
/* Why addr is not reachable (InfiniBand: a LID on the same subnet; RoCE:
 * the same address family and, for IPv6 GIDs, the same /64 prefix; on the
 * software device the prefixes name the fabric): a sentence, in buf or
 * constant; NULL when it is reachable. */
const char *strand_port_addr_unreachable(const strand_iface_t     *iface,
                                         const strand_port_addr_t *addr,
                                         char *buf, size_t max);

/* The address vector of QP (or DCT) qpn at addr: AV bytes from the device
 * (MAC resolution on RoCE), the QP number and, when a GRH is carried, the
 * extended-AV bit; no DC key. *av_size 16 or 48. */
ucs_status_t strand_port_addr_make_av(strand_iface_t           *iface,
                                      const strand_port_addr_t *addr,
                                      uint32_t qpn, struct mlx5_wqe_av *av,
                                      unsigned *av_size);

/* Does av lead to the port at addr (its LID, or on RoCE its GID)? */
int strand_av_names_port(const struct mlx5_wqe_av *av,
                         const strand_port_addr_t *addr);

/* The peer NIC an AV names (LID, or a hash of the GID): a key for grouping
 * endpoints by peer. */
uint64_t strand_av_peer_key(const struct mlx5_wqe_av *av);

/* "lid 5 dct 0x1234" / "gid fd00:..:5 dct 0x1234", for messages */
const char *strand_av_str(const struct mlx5_wqe_av *av, char *buf, size_t max);

#endif
