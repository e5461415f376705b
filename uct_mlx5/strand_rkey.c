/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The process's table of unpacked signing keys (strand_rkey.h). rkey_unpack is a
 * component operation (no MD, no worker), so the table is the process's;
 * unpack, release and the lookup of a checked GET take its lock (a GET
 * through a signing key costs far more than that).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "strand_rkey.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <pthread.h>
#include <string.h>

#define STRAND_RKEY_CHUNK_BITS  10
#define STRAND_RKEY_CHUNK       (1u << STRAND_RKEY_CHUNK_BITS)
#define STRAND_RKEY_MAX         (1u << STRAND_RKEY_INDEX_BITS)
#define STRAND_RKEY_INDEX_SHIFT 32
#define STRAND_RKEY_GEN_SHIFT   (STRAND_RKEY_INDEX_SHIFT + STRAND_RKEY_INDEX_BITS)
#define STRAND_RKEY_NONE        UINT32_MAX

typedef struct strand_rkey_entry {
    strand_rkey_sig_t rk;
    uint16_t          gen; /* moves on when the slot is freed */
    uint8_t           used;
    uint32_t          next_free; /* STRAND_RKEY_NONE: the last */
} strand_rkey_entry_t;

/* Chunks made as the table grows and kept: an index stays where it is. */
static struct {
    pthread_mutex_t      lock;
    strand_rkey_entry_t *chunks[STRAND_RKEY_MAX / STRAND_RKEY_CHUNK];
    uint32_t             num;  /* slots ever handed out */
    uint32_t             free; /* a freed slot, STRAND_RKEY_NONE */
} strand_rkey_table = {
        .lock = PTHREAD_MUTEX_INITIALIZER,
        .free = STRAND_RKEY_NONE,
};

static strand_rkey_entry_t *strand_rkey_entry(uint32_t index)
{
    strand_rkey_entry_t *chunk;

    if (index >= strand_rkey_table.num) {
        return NULL;
    }
    chunk = strand_rkey_table.chunks[index >> STRAND_RKEY_CHUNK_BITS];
    return &chunk[index & (STRAND_RKEY_CHUNK - 1)];
}

/* A free slot's index, STRAND_RKEY_NONE when the table is full. */
static uint32_t strand_rkey_slot_take(void)
{
    uint32_t              index = strand_rkey_table.free;
    strand_rkey_entry_t **chunk;

    if (index != STRAND_RKEY_NONE) {
        strand_rkey_table.free = strand_rkey_entry(index)->next_free;
        return index;
    }
    if (strand_rkey_table.num == STRAND_RKEY_MAX) {
        return STRAND_RKEY_NONE;
    }
    index = strand_rkey_table.num;
    chunk = &strand_rkey_table.chunks[index >> STRAND_RKEY_CHUNK_BITS];
    if (*chunk == NULL) {
        *chunk = ucs_calloc(STRAND_RKEY_CHUNK, sizeof(**chunk),
                            "strand_rkey_chunk");
        if (*chunk == NULL) {
            return STRAND_RKEY_NONE;
        }
    }
    ++strand_rkey_table.num;
    return index;
}

static uct_rkey_t
strand_rkey_value(uint32_t index, const strand_rkey_entry_t *e)
{
    return STRAND_RKEY_SIG_FLAG | ((uint64_t)e->gen << STRAND_RKEY_GEN_SHIFT) |
           ((uint64_t)index << STRAND_RKEY_INDEX_SHIFT) | e->rk.rkey;
}

/* The entry a key names, NULL for none (lock held). */
static strand_rkey_entry_t *strand_rkey_find(uct_rkey_t rkey)
{
    uint32_t index = (uint32_t)(rkey >> STRAND_RKEY_INDEX_SHIFT) &
                     (STRAND_RKEY_MAX - 1);
    strand_rkey_entry_t *e;

    if (!strand_rkey_is_sig(rkey)) {
        return NULL;
    }
    e = strand_rkey_entry(index);
    return ((e != NULL) && e->used && (strand_rkey_value(index, e) == rkey)) ?
                   e :
                   NULL;
}

ucs_status_t
strand_rkey_sig_add(const strand_rkey_sig_t *rk, uct_rkey_t *rkey_p)
{
    strand_rkey_entry_t *e;
    uint32_t             index;

    pthread_mutex_lock(&strand_rkey_table.lock);
    index = strand_rkey_slot_take();
    if (index == STRAND_RKEY_NONE) {
        pthread_mutex_unlock(&strand_rkey_table.lock);
        ucs_error("strand: %u signing remote keys are unpacked in this "
                  "process: no room for another",
                  STRAND_RKEY_MAX);
        return UCS_ERR_NO_MEMORY;
    }
    e       = strand_rkey_entry(index);
    e->rk   = *rk;
    e->used = 1;
    *rkey_p = strand_rkey_value(index, e);
    pthread_mutex_unlock(&strand_rkey_table.lock);
    return UCS_OK;
}

void strand_rkey_sig_remove(uct_rkey_t rkey)
{
    strand_rkey_entry_t *e;

    pthread_mutex_lock(&strand_rkey_table.lock);
    e = strand_rkey_find(rkey);
    if (e != NULL) {
        e->used      = 0;
        e->gen       = (e->gen + 1) & ((1u << STRAND_RKEY_GEN_BITS) - 1);
        e->next_free = strand_rkey_table.free;
        strand_rkey_table.free = (uint32_t)(rkey >> STRAND_RKEY_INDEX_SHIFT) &
                                 (STRAND_RKEY_MAX - 1);
    }
    pthread_mutex_unlock(&strand_rkey_table.lock);
}

ucs_status_t strand_rkey_sig_get(uct_rkey_t rkey, strand_rkey_sig_t *rk)
{
    strand_rkey_entry_t *e;

    pthread_mutex_lock(&strand_rkey_table.lock);
    e = strand_rkey_find(rkey);
    if (e != NULL) {
        *rk = e->rk;
    }
    pthread_mutex_unlock(&strand_rkey_table.lock);
    return (e != NULL) ? UCS_OK : UCS_ERR_INVALID_PARAM;
}
