/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Remote keys as values (uct_rkey_t). A key comes from a peer, and UCP
 * hands the transports UCT_INVALID_RKEY for a buffer without registration:
 * nothing in a key is ever dereferenced, and no key, damaged or made up,
 * can crash the process.
 *
 *   bits  0-31  the registration's plain key (RDMA and atomics use it as
 *               it is: a bad one is the device's to refuse, and a
 *               zero-length RDMA carries no key the responder checks)
 *   bit  63     a signing mkey stands behind the key (strand_sig.h): bits
 *               32-62 name an entry of this process's table of unpacked
 *               signing keys, its index (bits 32-51) and the generation of
 *               that slot (bits 52-62)
 *
 * The entry is used only when index, generation and plain key all match
 * what rkey_unpack made; anything else is a bad key (strand_rkey_sig_get
 * says so, the operation fails with a clear status). UCX packs its atomic
 * mkey into the upper word the same way (uct_ib_md_pack_rkey).
 */
#ifndef STRAND_RKEY_H_
#define STRAND_RKEY_H_

#include <uct/api/uct.h>
#include <ucs/type/status.h>
#include <stdint.h>

/* What a signing key says: the registration's plain key, the key of its
 * signing mkey, the kind (strand_integrity_kind_t), and the registration
 * the mkey covers (its block grid starts at base). */
typedef struct strand_rkey_sig {
    uint32_t rkey;
    uint32_t sig_rkey;
    uint8_t  kind;
    uint64_t base;
    uint64_t length;
} strand_rkey_sig_t;

#define STRAND_RKEY_SIG_FLAG   (1ull << 63)
#define STRAND_RKEY_INDEX_BITS 20 /* entries unpacked at once: 1M */
#define STRAND_RKEY_GEN_BITS   11

/* the key of plain RDMA and atomics */
static inline uint32_t strand_rkey_plain(uct_rkey_t rkey)
{
    return (uint32_t)rkey;
}

/* the key says a signing mkey stands behind it (whether it really names
 * one: strand_rkey_sig_get) */
static inline int strand_rkey_is_sig(uct_rkey_t rkey)
{
    return (rkey & STRAND_RKEY_SIG_FLAG) != 0;
}

/* A signing key into the table: its value in *rkey_p. UCS_ERR_NO_MEMORY
 * when 2^STRAND_RKEY_INDEX_BITS are unpacked already. */
ucs_status_t
strand_rkey_sig_add(const strand_rkey_sig_t *rk, uct_rkey_t *rkey_p);
/* The entry of a signing key goes (a key that names none: nothing). */
void strand_rkey_sig_remove(uct_rkey_t rkey);
/* What a signing key names, copied into *rk: UCS_OK, or
 * UCS_ERR_INVALID_PARAM when it names no entry (a key not made by
 * rkey_unpack in this process, released, or damaged). */
ucs_status_t strand_rkey_sig_get(uct_rkey_t rkey, strand_rkey_sig_t *rk);

#endif
