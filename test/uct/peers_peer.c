/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_peers: a peer process. It receives the hub's data messages and checks
 * each against what the endpoint's next one must be (its sequence number
 * and pattern: a duplicate, a loss or a reordering shows at once), keeps
 * the memory the hub PUTs into and adds to, and at the end compares every
 * endpoint's FIN message (what the hub sent) with what arrived.
 */
#include "peers.h"

#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct peers_peer {
    peers_uct_t     uct;
    peers_slot_t   *slots;
    uct_mem_h       memh;
    uint32_t        expect[PEERS_SLOTS]; /* next data seq per slot */
    uint8_t         finned[PEERS_SLOTS];
    peers_verdict_t verdict;
} peers_peer_t;

static void peers_peer_fail(peers_peer_t *p, const char *fmt, ...)
{
    va_list ap;

    if (!p->verdict.ok) {
        return; /* the first failure tells most */
    }
    p->verdict.ok = 0;
    va_start(ap, fmt);
    vsnprintf(p->verdict.why, sizeof(p->verdict.why), fmt, ap);
    va_end(ap);
}

static ucs_status_t
peers_peer_data(void *arg, void *data, size_t length, unsigned flags)
{
    peers_peer_t  *p = arg;
    const uint8_t *payload;
    uint32_t       slot, seq;
    uint64_t       hdr;
    size_t         i;

    if (length < sizeof(hdr)) {
        peers_peer_fail(p, "a data message of %zu bytes", length);
        return UCS_OK;
    }
    memcpy(&hdr, data, sizeof(hdr));
    slot    = PEERS_HDR_SLOT(hdr);
    seq     = PEERS_HDR_SEQ(hdr);
    payload = (const uint8_t *)data + sizeof(hdr);
    p->verdict.ams++;
    if (slot >= PEERS_SLOTS) {
        peers_peer_fail(p, "a data message for slot %u", slot);
        return UCS_OK;
    }
    if (seq != p->expect[slot]) {
        peers_peer_fail(p,
                        "endpoint %u: message %u arrived when %u was "
                        "next (%s)",
                        slot, seq, p->expect[slot],
                        (seq < p->expect[slot]) ? "a duplicate" :
                                                  "one was lost or overtaken");
        return UCS_OK;
    }
    for (i = 0; i < length - sizeof(hdr); ++i) {
        if (payload[i] != peers_pattern(slot, seq, i)) {
            peers_peer_fail(p,
                            "endpoint %u: message %u: wrong byte at "
                            "offset %zu of %zu",
                            slot, seq, i, length - sizeof(hdr));
            return UCS_OK;
        }
    }
    p->expect[slot]++;
    return UCS_OK;
}

static ucs_status_t
peers_peer_fin(void *arg, void *data, size_t length, unsigned flags)
{
    peers_peer_t *p = arg;
    peers_fin_t   fin;
    uint32_t      slot, ams;
    peers_slot_t *s;
    uint64_t      hdr;

    if (length != sizeof(hdr) + sizeof(fin)) {
        peers_peer_fail(p, "a FIN message of %zu bytes", length);
        return UCS_OK;
    }
    memcpy(&hdr, data, sizeof(hdr));
    memcpy(&fin, (uint8_t *)data + sizeof(hdr), sizeof(fin));
    slot = PEERS_HDR_SLOT(hdr);
    ams  = PEERS_HDR_SEQ(hdr);
    if ((slot >= PEERS_SLOTS) || p->finned[slot]) {
        peers_peer_fail(p, "FIN for slot %u (again?)", slot);
        return UCS_OK;
    }
    p->finned[slot] = 1;
    p->verdict.fins++;
    s = &p->slots[slot];
    if (p->expect[slot] != ams) {
        peers_peer_fail(p,
                        "endpoint %u: %u data messages arrived, the hub "
                        "sent %u",
                        slot, p->expect[slot], ams);
    } else if ((s->put_seq != fin.put_seq) || (s->put_check != ~fin.put_seq)) {
        peers_peer_fail(p,
                        "endpoint %u: the last PUT holds %lu/%lx, the "
                        "hub's last was %lu",
                        slot, (unsigned long)s->put_seq,
                        (unsigned long)s->put_check,
                        (unsigned long)fin.put_seq);
    } else if (s->atomic != fin.atomics) {
        peers_peer_fail(p,
                        "endpoint %u: the atomic counter is %lu, the hub "
                        "added %lu times",
                        slot, (unsigned long)s->atomic,
                        (unsigned long)fin.atomics);
    }
    return UCS_OK;
}

static ucs_status_t peers_peer_err(void *arg, uct_ep_h ep, ucs_status_t status)
{
    return UCS_OK; /* the peer has no endpoints of its own */
}

static int peers_peer_setup(peers_peer_t *p, peers_hello_t *hello)
{
    size_t       size = PEERS_SLOTS * sizeof(peers_slot_t);
    ucs_status_t status;
    unsigned     i;

    status = peers_uct_open(&p->uct, peers_peer_err, p);
    if (status != UCS_OK) {
        fprintf(stderr, "dc_peers peer: open: %s\n", ucs_status_string(status));
        return -1;
    }
    if (posix_memalign((void **)&p->slots, 4096, size) != 0) {
        return -1;
    }
    memset(p->slots, 0, size);
    for (i = 0; i < PEERS_SLOTS; ++i) {
        p->slots[i].put_check = ~0ull; /* PUT 0: none yet */
    }
    status = uct_md_mem_reg(p->uct.md, p->slots, size, UCT_MD_MEM_ACCESS_ALL,
                            &p->memh);
    if ((status != UCS_OK) ||
        (p->uct.md_attr.rkey_packed_size > sizeof(hello->rkey)) ||
        (p->uct.attr.device_addr_len > sizeof(hello->dev_addr)) ||
        (p->uct.attr.iface_addr_len > sizeof(hello->iface_addr))) {
        return -1;
    }
    memset(hello, 0, sizeof(*hello));
    hello->pid            = getpid();
    hello->dev_addr_len   = p->uct.attr.device_addr_len;
    hello->iface_addr_len = p->uct.attr.iface_addr_len;
    hello->rkey_len       = p->uct.md_attr.rkey_packed_size;
    hello->slots          = (uintptr_t)p->slots;
    if ((uct_md_mkey_pack(p->uct.md, p->memh, hello->rkey) != UCS_OK) ||
        (uct_iface_get_device_address(p->uct.iface,
                                      (uct_device_addr_t *)hello->dev_addr) !=
         UCS_OK) ||
        (uct_iface_get_address(p->uct.iface,
                               (uct_iface_addr_t *)hello->iface_addr) !=
         UCS_OK)) {
        return -1;
    }
    uct_iface_set_am_handler(p->uct.iface, PEERS_AM_DATA, peers_peer_data, p,
                             0);
    uct_iface_set_am_handler(p->uct.iface, PEERS_AM_FIN, peers_peer_fin, p, 0);
    return 0;
}

/* Progress; when idle, sleep on the interface's event fd and the socket
 * (the peers share two cores with the hub and their NICs). Returns whether
 * the hub wrote to the socket (checked when idle, and now and then). */
static int peers_peer_progress(peers_peer_t *p, int fd, unsigned *idle)
{
    static unsigned busy;
    struct pollfd   pfd[2];
    int             nfds = 1;

    pfd[0].fd     = fd;
    pfd[0].events = POLLIN;
    if (uct_worker_progress(p->uct.worker) != 0) {
        *idle = 0;
        return ((++busy % 4096) == 0) && (poll(pfd, 1, 0) > 0);
    }
    if (++*idle < 256) {
        return 0;
    }
    *idle = 0;
    if ((p->uct.event_fd >= 0) &&
        (uct_iface_event_arm(p->uct.iface,
                             UCT_EVENT_RECV | UCT_EVENT_RECV_SIG) == UCS_OK)) {
        pfd[1].fd     = p->uct.event_fd;
        pfd[1].events = POLLIN;
        nfds          = 2;
    }
    /* events pending (arm refused): only a look at the socket */
    return (poll(pfd, nfds, (nfds == 2) ? 20 : 0) > 0) &&
           (pfd[0].revents & (POLLIN | POLLHUP));
}

int peers_peer_main(int fd, int rank)
{
    peers_peer_t  *p = calloc(1, sizeof(*p));
    peers_finish_t finish;
    peers_hello_t  hello;
    unsigned       idle = 0;
    double         deadline;

    if ((p == NULL) || (peers_peer_setup(p, &hello) != 0)) {
        return 2;
    }
    p->verdict.ok = 1;
    if (peers_send(fd, &hello, sizeof(hello)) != 0) {
        return 3;
    }
    /* receive until the hub says how many FINs to expect */
    while (!peers_peer_progress(p, fd, &idle)) {
    }
    if (peers_recv(fd, &finish, sizeof(finish)) != 0) {
        return 4; /* the hub is gone */
    }
    deadline = peers_now() + 120;
    while ((p->verdict.fins < finish.fins) && (peers_now() < deadline)) {
        peers_peer_progress(p, fd, &idle);
    }
    if (p->verdict.fins < finish.fins) {
        peers_peer_fail(p, "%u of %u FIN messages arrived", p->verdict.fins,
                        finish.fins);
    }
    peers_send(fd, &p->verdict, sizeof(p->verdict));
    /* stay until the hub closed its endpoints to us */
    peers_recv(fd, &finish, sizeof(finish));
    uct_md_mem_dereg(p->uct.md, p->memh);
    peers_uct_close(&p->uct);
    free(p->slots);
    free(p);
    return 0;
}
