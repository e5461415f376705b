/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Data through indirect and signature mkeys (sim_sig.h): the device's part
 * of mlx5dv_wr_set_mkey_sig_block(3). Going from a domain with a signature
 * to one without checks each block's signature (the bytes check_mask
 * selects) and strips it; the reverse computes and inserts it; memory to
 * wire is "transmit" (the gather of a SEND or WRITE, the responder of a
 * READ), wire to memory "receive" (a READ's responses, the responder of a
 * WRITE). A bad block is reported (a SIG_ERR CQE, the first per
 * configuration) and its data still delivered; the operation completes
 * as usual.
 */
#include "sim_sig.h"
#include "sim_crc.h"

#include "mlx5/cqe.h"

#include <string.h>

#define SIM_SIG_MAX_UNIT (4160 + 8) /* largest block and field */

/* ------------------------------------------------------------- layout */

/* A signed transfer reads the whole blocks around its range, and a block
 * may run past the object the application keeps in registered memory (a
 * registration covers whole pages): a NIC's DMA, which AddressSanitizer
 * and valgrind would take for the program's own overflow. Under ASan it
 * is copied by hand, unchecked (and not turned back into a memcpy call,
 * which ASan intercepts); test/valgrind.supp names this function. */
#ifdef __SANITIZE_ADDRESS__
__attribute__((noinline, no_sanitize_address,
               optimize("no-tree-loop-distribute-patterns"))) static void
sim_dma_read(uint8_t *dst, const uint8_t *src, uint64_t n)
{
    while (n-- > 0) {
        *dst++ = *src++;
    }
}
#else
__attribute__((noinline)) static void
sim_dma_read(uint8_t *dst, const uint8_t *src, uint64_t n)
{
    memcpy(dst, src, n);
    __asm__ volatile("" ::: "memory"); /* a frame of its own: no tail call */
}
#endif

/* Copy between buf and the mkey's memory at memory offset `off`. A buffer
 * whose region is gone is neither read (zeros) nor written. */
static void sim_mkey_mem_io(smlx5_mkey_t *mk, uint64_t off, uint8_t *buf,
                            uint32_t len, bool write)
{
    const sim_mkey_entry_t *e;
    uint64_t                n;
    uint16_t                i;
    uint8_t                *mem;

    for (i = 0; (i < mk->num_entries) && (len > 0); ++i) {
        e = &mk->entries[i];
        if (off >= e->len) {
            off -= e->len;
            continue;
        }
        n = e->len - off;
        if (n > len) {
            n = len;
        }
        mem = (uint8_t *)(uintptr_t)(e->addr + off);
        if (sim_mr_lookup(mk->ctx, e->lkey, false) == NULL) {
            if (!write) {
                memset(buf, 0, n);
            }
        } else if (write) {
            memcpy(mem, buf, n);
        } else {
            sim_dma_read(buf, mem, n);
        }
        buf += n;
        len -= (uint32_t)n;
        off = 0;
    }
}

/* Data bytes of block k (the last one may be short). */
static uint32_t sim_mkey_block_len(const smlx5_mkey_t *mk, uint64_t k)
{
    uint64_t start = k * mk->bs;

    return (mk->data_len - start < mk->bs) ? (uint32_t)(mk->data_len - start) :
                                             mk->bs;
}

/* Memory offset of data offset d of block k / of block k's signature. */
static uint64_t
sim_mkey_mem_data(const smlx5_mkey_t *mk, uint64_t k, uint32_t in_block)
{
    return k * (mk->bs + mk->mem.size) + in_block;
}

static uint64_t sim_mkey_mem_sig(const smlx5_mkey_t *mk, uint64_t k)
{
    return sim_mkey_mem_data(mk, k, sim_mkey_block_len(mk, k));
}

/* --------------------------------------------------------- signatures */

static bool sim_sig_is_dif(const sim_sig_domain_t *d)
{
    return (d->kind == SIM_SIG_T10DIF_CRC) || (d->kind == SIM_SIG_T10DIF_CSUM);
}

static uint32_t sim_sig_acc_init(const sim_sig_domain_t *d)
{
    return (d->kind == SIM_SIG_T10DIF_CSUM) ? 0 : d->seed;
}

/* More bytes of a block's data at offset `pos` in it. */
static uint32_t sim_sig_acc_update(const sim_sig_domain_t *d, uint32_t acc,
                                   const uint8_t *data, uint32_t len,
                                   uint32_t pos)
{
    switch (d->kind) {
    case SIM_SIG_CRC32:
        return sim_crc32_update(acc, data, len);
    case SIM_SIG_CRC32C:
        return sim_crc32c_update(acc, data, len);
    case SIM_SIG_T10DIF_CRC:
        return sim_crc16_t10_update((uint16_t)acc, data, len);
    case SIM_SIG_T10DIF_CSUM:
        return sim_csum_update(acc, data, len, pos);
    default:
        return acc;
    }
}

/* The signature field of block k whose data gave `acc`, as it is stored:
 * CRC32(C) big-endian; T10-DIF guard, application tag, reference tag
 * (incremented per block with REF_REMAP), big-endian. */
static void
sim_sig_field(const sim_sig_domain_t *d, uint32_t acc, uint64_t k, uint8_t *out)
{
    uint32_t v32, ref;
    uint16_t v16;

    if (!sim_sig_is_dif(d)) {
        v32 = htobe32(sim_crc32_final(acc));
        memcpy(out, &v32, sizeof(v32));
        return;
    }
    v16 = (d->kind == SIM_SIG_T10DIF_CSUM) ? sim_csum_final(acc) :
                                             (uint16_t)acc;
    v16 = htobe16(v16);
    memcpy(out, &v16, sizeof(v16));
    v16 = htobe16(d->app_tag);
    memcpy(out + 2, &v16, sizeof(v16));
    ref = d->ref_tag;
    if (d->dif_flags & MLX5DV_SIG_T10DIF_FLAG_REF_REMAP) {
        ref += (uint32_t)k;
    }
    v32 = htobe32(ref);
    memcpy(out + 4, &v32, sizeof(v32));
}

static uint32_t sim_sig_be32(const uint8_t *p)
{
    uint32_t v;

    memcpy(&v, p, sizeof(v));
    return be32toh(v);
}

/* The bytes of `field` that check_mask selects (bit 7 - i: byte i) and
 * differ from `want`: 0 when the block is good, else the syndrome of the
 * first bad part (guard, application tag, reference tag: the order the
 * T10-DIF specification gives). */
static uint16_t sim_sig_compare(const sim_sig_domain_t *d, uint8_t check_mask,
                                const uint8_t *field, const uint8_t *want)
{
    uint8_t  bad = 0;
    unsigned i;

    for (i = 0; i < d->size; ++i) {
        if ((check_mask & (0x80u >> i)) && (field[i] != want[i])) {
            bad |= 0x80u >> i;
        }
    }
    if (bad == 0) {
        return 0;
    }
    if (!sim_sig_is_dif(d)) {
        return STRAND_SIGERR_SYNDROME_GUARD;
    }
    /* the escapes: an application tag of 0xffff (and a reference tag of
     * 0xffffffff) turns the guard check off */
    if (((d->dif_flags & MLX5DV_SIG_T10DIF_FLAG_APP_ESCAPE) &&
         (field[2] == 0xff) && (field[3] == 0xff)) ||
        ((d->dif_flags & MLX5DV_SIG_T10DIF_FLAG_APP_REF_ESCAPE) &&
         (field[2] == 0xff) && (field[3] == 0xff) &&
         (sim_sig_be32(field + 4) == 0xffffffffu))) {
        bad &= 0x3f;
    }
    return (bad & 0xc0) ? STRAND_SIGERR_SYNDROME_GUARD :
           (bad & 0x30) ? STRAND_SIGERR_SYNDROME_APPTAG :
           (bad & 0x0f) ? STRAND_SIGERR_SYNDROME_REFTAG :
                          0;
}

/* Check block k's stored `field` against the one its data gives (`want`);
 * report a mismatch in `domain`. */
static void sim_sig_check(smlx5_mkey_t *mk, const sim_sig_domain_t *d,
                          uint8_t domain, uint64_t k, const uint8_t *field,
                          const uint8_t *want, const sim_sig_report_t *rep)
{
    uint16_t      syndrome = sim_sig_compare(d, mk->check_mask, field, want);
    uint64_t      trans_exp, trans_act;
    sim_sig_err_t err;

    if (syndrome == 0) {
        return;
    }
    if (sim_sig_is_dif(d)) {
        /* guard 31:16 and application tag 15:0 of trans_sig */
        trans_exp    = sim_sig_be32(field);
        trans_act    = sim_sig_be32(want);
        err.expected = (trans_exp << 32) | sim_sig_be32(field + 4);
        err.actual   = (trans_act << 32) | sim_sig_be32(want + 4);
    } else {
        err.expected = (uint64_t)sim_sig_be32(field) << 32;
        err.actual   = (uint64_t)sim_sig_be32(want) << 32;
    }
    err.syndrome = syndrome;
    err.domain   = domain;
    err.offset   = k * mk->bs;
    sim_sig_report(mk, &err, rep);
}

/* The mkey reports a signature error (spec section 9, sim_sig.h). */
static bool sim_sig_armed(const smlx5_mkey_t *mk)
{
    return ((mk->sigerr_reported + 1) & 1) == (mk->sigerr_expected & 1);
}

void sim_sig_report(smlx5_mkey_t *mk, const sim_sig_err_t *err,
                    const sim_sig_report_t *rep)
{
    struct strand_sigerr_cqe cqe;

    if (!sim_sig_armed(mk)) {
        return; /* a NIC that reported an error sees no more */
    }
    if (rep->requester != NULL) {
        rep->requester->sig_stop = rep->requester->sig_pipelining;
    }
    if (rep->cq == NULL) {
        return;
    }
    mk->sigerr_reported = (mk->sigerr_reported + 1) & 1;
    memset(&cqe, 0, sizeof(cqe));
    cqe.expected_trans_sig = htobe32((uint32_t)(err->expected >> 32));
    cqe.actual_trans_sig   = htobe32((uint32_t)(err->actual >> 32));
    cqe.expected_ref_tag   = htobe32((uint32_t)err->expected);
    cqe.actual_ref_tag     = htobe32((uint32_t)err->actual);
    cqe.syndrome           = htobe16(err->syndrome);
    cqe.sig_type           = STRAND_SIGERR_TYPE_BLOCK;
    cqe.domain             = err->domain;
    cqe.mkey               = htobe32(mk->key);
    cqe.sig_err_offset     = htobe64(err->offset);
    cqe.op_own             = MLX5_CQE_SIG_ERR << 4;
    sim_cq_push(rep->cq, (const struct mlx5_cqe64 *)(const void *)&cqe);
}

/* ------------------------------------------------------------ transmit */

/* Damage a byte of block data when fault injection asks for it here. */
static void sim_sig_corrupt(smlx5_mkey_t *mk, uint64_t k, int where,
                            uint8_t *data, uint32_t len)
{
    if ((mk->corrupt_block == (int64_t)k) && (mk->corrupt_where == where) &&
        (len > 0)) {
        data[len / 2] ^= 0x5a;
        mk->corrupt_block = -1;
    }
}

/* Block k as it goes on the link: its data, checked against its memory
 * signature, then the wire signature. Returns its length. */
static uint32_t sim_sig_tx_block(smlx5_mkey_t *mk, uint64_t k, uint8_t *img,
                                 const sim_sig_report_t *rep)
{
    uint32_t blen = sim_mkey_block_len(mk, k);
    uint8_t  field[8], want[8];

    sim_mkey_mem_io(mk, sim_mkey_mem_data(mk, k, 0), img, blen, false);
    sim_sig_corrupt(mk, k, SMLX5_CORRUPT_MEMORY, img, blen);
    if (mk->mem.size > 0) {
        sim_mkey_mem_io(mk, sim_mkey_mem_sig(mk, k), field, mk->mem.size,
                        false);
        sim_sig_field(&mk->mem,
                      sim_sig_acc_update(&mk->mem, sim_sig_acc_init(&mk->mem),
                                         img, blen, 0),
                      k, want);
        sim_sig_check(mk, &mk->mem, STRAND_SIGERR_DOMAIN_MEMORY, k, field, want,
                      rep);
    }
    if (mk->wire.size > 0) {
        sim_sig_field(&mk->wire,
                      sim_sig_acc_update(&mk->wire, sim_sig_acc_init(&mk->wire),
                                         img, blen, 0),
                      k, img + blen);
    }
    sim_sig_corrupt(mk, k, SMLX5_CORRUPT_WIRE, img, blen);
    return blen + mk->wire.size;
}

void sim_sig_tx(smlx5_mkey_t *mk, uint64_t off, uint8_t *dst, uint32_t len,
                const sim_sig_report_t *rep)
{
    uint8_t  img[SIM_SIG_MAX_UNIT];
    uint32_t unit, p, ilen, n;
    uint64_t k;

    if (!mk->sig) {
        sim_mkey_mem_io(mk, off, dst, len, false);
        return;
    }
    unit = mk->bs + mk->wire.size;
    while (len > 0) {
        k = off / unit;
        p = (uint32_t)(off % unit);
        if ((p == 0) && (len >= unit)) {
            /* a whole block in the packet: built in place */
            n = sim_sig_tx_block(mk, k, dst, rep);
        } else {
            /* a piece of one: built aside, the piece copied */
            ilen = sim_sig_tx_block(mk, k, img, rep);
            if (p >= ilen) {
                break; /* past the end: the caller checked the bounds */
            }
            n = (ilen - p < len) ? ilen - p : len;
            memcpy(dst, img + p, n);
        }
        dst += n;
        off += n;
        len -= n;
    }
}

/* ------------------------------------------------------------- receive */

void sim_sig_rx_start(sim_sig_rx_t *st, uint64_t off)
{
    memset(st, 0, sizeof(*st));
    st->pos = off;
}

/* Data bytes of block k at `p` arrive: into memory, into the checksums;
 * when the block's data is complete its memory signature is written. */
static void sim_sig_rx_data(smlx5_mkey_t *mk, sim_sig_rx_t *st, uint64_t k,
                            uint32_t p, const uint8_t *src, uint32_t n,
                            uint32_t blen)
{
    uint8_t field[8];

    sim_mkey_mem_io(mk, sim_mkey_mem_data(mk, k, p), (uint8_t *)src, n, true);
    st->acc_wire = sim_sig_acc_update(&mk->wire, st->acc_wire, src, n, p);
    st->acc_mem  = sim_sig_acc_update(&mk->mem, st->acc_mem, src, n, p);
    if ((p + n == blen) && (mk->mem.size > 0)) {
        sim_sig_field(&mk->mem, st->acc_mem, k, field);
        sim_mkey_mem_io(mk, sim_mkey_mem_sig(mk, k), field, mk->mem.size, true);
    }
}

void sim_sig_rx(smlx5_mkey_t *mk, sim_sig_rx_t *st, uint64_t off,
                const uint8_t *src, uint32_t len, const sim_sig_report_t *rep)
{
    uint32_t unit, p, blen, n, skip;
    uint8_t  want[8];
    uint64_t k;

    /* in order, each byte once: a repeat of what came is skipped, a gap
     * (which the transport never lets through) drops the packet */
    if (off > st->pos) {
        return;
    }
    skip = (uint32_t)((st->pos - off < len) ? st->pos - off : len);
    src += skip;
    len -= skip;
    if (!mk->sig) {
        sim_mkey_mem_io(mk, st->pos, (uint8_t *)src, len, true);
        st->pos += len;
        return;
    }
    unit = mk->bs + mk->wire.size;
    while (len > 0) {
        k    = st->pos / unit;
        p    = (uint32_t)(st->pos % unit);
        blen = sim_mkey_block_len(mk, k);
        if (p == 0) {
            st->acc_wire = sim_sig_acc_init(&mk->wire);
            st->acc_mem  = sim_sig_acc_init(&mk->mem);
        }
        if (p < blen) {
            n = (blen - p < len) ? blen - p : len;
            sim_sig_rx_data(mk, st, k, p, src, n, blen);
        } else {
            /* the wire signature field, possibly split over packets */
            n = (blen + mk->wire.size - p < len) ? blen + mk->wire.size - p :
                                                   len;
            memcpy(st->sigbuf + (p - blen), src, n);
            if (p + n == blen + mk->wire.size) {
                sim_sig_field(&mk->wire, st->acc_wire, k, want);
                sim_sig_check(mk, &mk->wire, STRAND_SIGERR_DOMAIN_WIRE, k,
                              st->sigbuf, want, rep);
            }
        }
        st->pos += n;
        src += n;
        len -= n;
    }
}
