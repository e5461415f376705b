/*
 * dc_strand addresses: what a peer needs to reach this interface (device
 * address: LID and subnet prefix on InfiniBand, GID on RoCE; interface
 * address: the DCT number), reachability, and the address vector an
 * endpoint puts in every WQE.
 */
#ifndef STRAND_DC_ADDR_H_
#define STRAND_DC_ADDR_H_

#include "dc_iface.h"

enum {
    STRAND_DC_ADDR_FLAG_ETH = UCS_BIT(0)  /* RoCE: a GID, no LID */
};

/* Device address. InfiniBand: flags, LID, subnet prefix (which subnet, and
 * on the software device which fabric); Ethernet: flags, GID. The length
 * follows from the link layer (see strand_dc_addr_device_len). */
typedef struct strand_dc_device_addr {
    uint8_t flags;
    union {
        struct {
            uint16_t lid;
            uint64_t subnet_prefix;     /* network order, as in the GID */
        } UCS_S_PACKED ib;
        uint8_t gid[16];
    } UCS_S_PACKED;
} UCS_S_PACKED strand_dc_device_addr_t;

enum {
    STRAND_DC_IFACE_ADDR_FLAG_TM = UCS_BIT(0)  /* every message to it starts
                                                  with a tag-matching header */
};

/* Interface address: the DCT number (24 bits), and flags. */
typedef struct strand_dc_iface_addr {
    uint8_t dctn[3];
    uint8_t flags;
} UCS_S_PACKED strand_dc_iface_addr_t;

size_t strand_dc_addr_device_len(const strand_iface_t *iface);
void   strand_dc_addr_pack_device(const strand_iface_t *iface,
                                  strand_dc_device_addr_t *addr);
void   strand_dc_addr_pack_iface(const strand_iface_t *iface,
                                 strand_dc_iface_addr_t *addr);
uint32_t strand_dc_addr_dctn(const strand_dc_iface_addr_t *addr);
int    strand_dc_addr_is_reachable(const strand_iface_t *iface,
                                   const strand_dc_device_addr_t *addr);
/* Both sides agree on tag matching (its header is in every message). */
int    strand_dc_addr_iface_compatible(const strand_iface_t *iface,
                                       const strand_dc_iface_addr_t *addr);

/* The address vector of a DCT: AV bytes from the device (MAC resolution on
 * RoCE), with the DC key, DCT number and, when a GRH is carried, the
 * extended-AV bit; *av_size 16 or 48. */
ucs_status_t strand_dc_addr_make_av(strand_iface_t *iface,
                                    const strand_dc_device_addr_t *dev_addr,
                                    uint32_t dctn, struct mlx5_wqe_av *av,
                                    unsigned *av_size);

/* The peer NIC an AV names (LID, or a hash of the GID), for streams per
 * peer. */
uint64_t strand_dc_addr_peer_key(const struct mlx5_wqe_av *av);

/* "lid 5 dct 0x1234" / "gid fd00:..:5 dct 0x1234", for messages */
const char *strand_dc_addr_av_str(const struct mlx5_wqe_av *av, char *buf,
                                  size_t max);

#endif
