/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fabric segment: a header (attachments, LID allocation, guarded by a
 * robust process-shared mutex) and SIM_FABRIC_MAX_PORTS ports, each with a
 * lock-free multi-producer / single-consumer ring of fixed-size slots. A
 * LID encodes its port slot in the low 7 bits and a generation above, so a
 * packet for a closed port never reaches the slot's next owner.
 *
 * The ring is laid out so that a packet costs what a cache line passed
 * between two cores costs, no more. Producers claim a position on `tail`
 * and publish a slot by writing its sequence number (position + 1); the
 * consumer only reads slots, and says how far it got on a line of its own
 * (`head`). A producer knows a slot is free from the consumer's head as it
 * last read it (each attachment keeps that per port), and reads the real
 * one only when that old value says the ring is full: a send then touches
 * no line the consumer writes, and a receive writes no line a producer
 * reads, so neither waits for the other's cache.
 */
#define _GNU_SOURCE
#include "fabric.h"
#include "sim_clock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SIM_FABRIC_MAGIC      0x5354524e44464142ull /* "STRNDFAB" */
#define SIM_FABRIC_VERSION    6 /* 6: a host of a fabric across hosts */
#define SIM_FABRIC_MAX_ATTACH 256
#define SIM_PORT_BITS         SIM_FABRIC_SLOT_BITS
#define SIM_HOST_GEN_SHIFT    (SIM_FABRIC_SLOT_BITS + SIM_FABRIC_HOST_BITS)
#define SIM_HOST_GEN_MAX      5
#define SIM_LID_MAX           0xbfff
#define SIM_POLL_FRESH_NS     100000ull  /* owner polls: skip the wake */
#define SIM_OWNER_ACTIVE_NS   5000000ull /* owner recently active */
#define SIM_NAP_NS            1000000ll

typedef struct sim_proc_id {
    int32_t  pid;
    uint64_t start; /* /proc/<pid>/stat field 22 */
} sim_proc_id_t;

/* 8 bytes of slot header: a small RC packet and its header share one
 * cache line (slots start on a line: a packet of up to 56 bytes then costs
 * the consumer one line, not two). `seq` is position + 1 of the packet in
 * it; 32-bit, compared as differences. */
typedef struct sim_slot {
    _Alignas(64) _Atomic uint32_t seq;
    uint32_t len;
    uint8_t  data[SIM_FABRIC_MAX_PKT];
} sim_slot_t;

typedef struct sim_port_shm {
    /* written under the header lock */
    sim_proc_id_t    owner;
    _Atomic uint32_t lid; /* 0: free */
    uint32_t         gen;
    _Atomic uint32_t epoch; /* which opening of the slot: unlike the
                               LID, never the same twice */
    /* producers */
    _Alignas(64) _Atomic uint32_t tail;
    /* consumer: positions before it are consumed, their slots free */
    _Alignas(64) _Atomic uint32_t head;
    /* the wake protocol: every send reads `sleeping`, so this line changes
     * only when the waiter sleeps or is woken */
    _Alignas(64) _Atomic uint32_t futex;
    _Atomic uint32_t sleeping;
    _Atomic uint32_t wake_req; /* sim_fabric_port_wake() pending */
    /* across hosts: the waiter sleeps on its socket, woken by an empty
     * datagram to this address (network order; port 0: the futex) */
    _Atomic uint32_t wake_addr;
    _Atomic uint32_t wake_port;
    /* written by the owner as it polls (every SIM_POLL_FRESH_NS / 8) */
    _Alignas(64) _Atomic uint64_t last_poll_ns;
    _Alignas(64) sim_slot_t ring[SIM_FABRIC_RING_SIZE];
} sim_port_shm_t;

typedef struct sim_fabric_shm {
    _Atomic uint64_t magic;
    uint32_t         version;
    int32_t          creator_pid;
    uint64_t         identity; /* random, made with the segment: its
                                  subnet (sim_fabric_identity); across
                                  hosts the fabric's, the same on each */
    uint32_t         host;     /* across hosts: 1 + this host's index */
    pthread_mutex_t  lock;     /* robust, process-shared */
    uint32_t         dead;     /* unlinked: attach elsewhere */
    uint32_t         next_gen;
    uint32_t         next_epoch;
    sim_proc_id_t    attached[SIM_FABRIC_MAX_ATTACH];
    _Alignas(4096) sim_port_shm_t ports[SIM_FABRIC_MAX_PORTS];
} sim_fabric_shm_t;

struct sim_fabric {
    sim_fabric_shm_t *shm;
    char              name[128];
    sim_proc_id_t     self;
    int               wake_fd; /* across hosts: sends wake datagrams */
    /* per port: the epoch and the head this attachment last read from it
     * (in one word, so that threads sending at once never pair a head
     * with another opening of the port) */
    _Atomic uint64_t head_seen[SIM_FABRIC_MAX_PORTS];
};

struct sim_port {
    sim_fabric_t   *fab;
    sim_port_shm_t *shm;
    uint16_t        lid;
    /* sim_fabric_port_stats */
    _Atomic uint64_t sleeps, untimed_sleeps;
    _Atomic int      asleep_untimed;
    int              sleep_fd; /* across hosts: the socket to sleep on */
};

/* -------------------------------------------------------------- utils */

static inline uint64_t sim_fabric_now(void)
{
    return sim_clock_ns();
}

static uint64_t sim_proc_start_time(pid_t pid)
{
    char               path[64], buf[1024], *p;
    unsigned long long start = 0;
    ssize_t            n;
    int                fd, field;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    p      = strrchr(buf, ')'); /* the command name may contain spaces */
    if (p == NULL) {
        return 0;
    }
    /* field 3 follows ") "; start time is field 22 */
    for (field = 2, p++; (field < 22) && (*p != '\0'); ++p) {
        if (*p == ' ') {
            ++field;
        }
    }
    sscanf(p, "%llu", &start);
    return start;
}

static bool sim_proc_alive(const sim_proc_id_t *id)
{
    if (id->pid <= 0) {
        return false;
    }
    if ((kill(id->pid, 0) != 0) && (errno == ESRCH)) {
        return false;
    }
    return sim_proc_start_time(id->pid) == id->start;
}

static int sim_futex(_Atomic uint32_t *addr, int op, uint32_t val,
                     const struct timespec *ts)
{
    /* no FUTEX_PRIVATE_FLAG: the word is shared between processes */
    return (int)syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

static int sim_fabric_lock(sim_fabric_shm_t *shm)
{
    int ret = pthread_mutex_lock(&shm->lock);

    if (ret == EOWNERDEAD) {
        /* a process died holding it: the table is consistent at every
         * step we take under it, so just mark the mutex usable again */
        pthread_mutex_consistent(&shm->lock);
        ret = 0;
    }
    return ret;
}

/* Forget attachments and ports of processes that are gone. Lock held. */
static void sim_fabric_reap(sim_fabric_shm_t *shm)
{
    unsigned i;

    for (i = 0; i < SIM_FABRIC_MAX_ATTACH; ++i) {
        if (shm->attached[i].pid && !sim_proc_alive(&shm->attached[i])) {
            memset(&shm->attached[i], 0, sizeof(shm->attached[i]));
        }
    }
    for (i = 0; i < SIM_FABRIC_MAX_PORTS; ++i) {
        if (atomic_load(&shm->ports[i].lid) &&
            !sim_proc_alive(&shm->ports[i].owner)) {
            atomic_store(&shm->ports[i].lid, 0);
        }
    }
}

/* ------------------------------------------------------------ segment */

/* A fabric's identity: random, as a subnet manager sets a subnet's
 * prefix; never 0. Two segments of one name (two hosts, two containers
 * with their own /dev/shm) are two subnets. */
static uint64_t sim_fabric_new_identity(void)
{
    uint64_t id = 0;

    while ((id == 0) &&
           (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))) {
        if (errno != EINTR) {
            /* no entropy source: time and pid, still apart per segment */
            id = sim_fabric_now() ^ ((uint64_t)getpid() << 32);
        }
    }
    return (id != 0) ? id : 1;
}

static void
sim_fabric_init_shm(sim_fabric_shm_t *shm, uint32_t host, uint64_t identity)
{
    pthread_mutexattr_t attr;

    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&shm->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    shm->version  = SIM_FABRIC_VERSION;
    shm->next_gen = 1;
    shm->host     = host;
    shm->identity = (identity != 0) ? identity : sim_fabric_new_identity();
    atomic_store_explicit(&shm->magic, SIM_FABRIC_MAGIC, memory_order_release);
}

static int sim_fabric_map(const char *name, uint32_t host, uint64_t identity,
                          sim_fabric_shm_t **shm_p)
{
    const size_t      size = sizeof(sim_fabric_shm_t);
    sim_fabric_shm_t *shm;
    uint64_t          deadline;
    struct stat       st;
    bool              created = false;
    int               fd;

    for (;;) {
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) {
            created = true;
            if (ftruncate(fd, size) != 0) {
                int err = -errno;
                close(fd);
                shm_unlink(name);
                return err;
            }
            break;
        }
        if (errno != EEXIST) {
            return -errno;
        }
        fd = shm_open(name, O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0) {
            break;
        }
        if (errno != ENOENT) {
            return -errno;
        }
        /* unlinked between the two opens: try again */
    }

    /* a creator sizes the object first; wait until it did */
    deadline = sim_fabric_now() + 2000000000ull;
    while (!created && (fstat(fd, &st) == 0) && ((size_t)st.st_size < size)) {
        if (sim_fabric_now() > deadline) {
            close(fd);
            shm_unlink(name); /* its creator died before sizing it */
            return sim_fabric_map(name, host, identity, shm_p);
        }
        usleep(1000);
    }

    shm = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (shm == MAP_FAILED) {
        return -errno;
    }
    if (created) {
        shm->creator_pid = getpid();
        sim_fabric_init_shm(shm, host, identity);
    } else {
        while (atomic_load_explicit(&shm->magic, memory_order_acquire) !=
               SIM_FABRIC_MAGIC) {
            if (sim_fabric_now() > deadline) {
                sim_proc_id_t c     = {shm->creator_pid, 0};
                bool          alive = (c.pid > 0) &&
                             !((kill(c.pid, 0) != 0) && (errno == ESRCH));
                munmap(shm, size);
                if (alive) {
                    return -ETIMEDOUT;
                }
                shm_unlink(name); /* creator died mid-initialisation */
                return sim_fabric_map(name, host, identity, shm_p);
            }
            usleep(1000);
        }
        if ((shm->version != SIM_FABRIC_VERSION) || (shm->host != host) ||
            ((identity != 0) && (shm->identity != identity))) {
            munmap(shm, size);
            return -EPROTO;
        }
    }
    *shm_p = shm;
    return 0;
}

static int sim_fabric_attach_as(const char *name, uint32_t host,
                                uint64_t identity, sim_fabric_t **fab_p)
{
    sim_fabric_t *fab;
    const char   *env;
    unsigned      i;
    int           ret;

    sim_clock_init();
    fab = calloc(1, sizeof(*fab));
    if (fab == NULL) {
        return -ENOMEM;
    }
    env = getenv("STRAND_SIM_FABRIC");
    if (name == NULL) {
        name = ((env != NULL) && (*env != '\0')) ? env : NULL;
    }
    if (name == NULL) {
        snprintf(fab->name, sizeof(fab->name), "/strand-%u",
                 (unsigned)getuid());
    } else if ((strlen(name) > 100) || strchr(name + (name[0] == '/'), '/')) {
        free(fab);
        return -EINVAL;
    } else {
        snprintf(fab->name, sizeof(fab->name), "%s%s",
                 (name[0] == '/') ? "" : "/", name);
    }
    fab->self.pid   = getpid();
    fab->self.start = sim_proc_start_time(fab->self.pid);
    fab->wake_fd    = -1;

    for (;;) {
        ret = sim_fabric_map(fab->name, host, identity, &fab->shm);
        if (ret < 0) {
            free(fab);
            return ret;
        }
        if (sim_fabric_lock(fab->shm) != 0) {
            ret = -EIO;
            break;
        }
        if (fab->shm->dead) {
            /* its last user removed it while we opened it */
            pthread_mutex_unlock(&fab->shm->lock);
            munmap(fab->shm, sizeof(*fab->shm));
            continue;
        }
        sim_fabric_reap(fab->shm);
        for (i = 0; i < SIM_FABRIC_MAX_ATTACH; ++i) {
            if (fab->shm->attached[i].pid == 0) {
                fab->shm->attached[i] = fab->self;
                break;
            }
        }
        pthread_mutex_unlock(&fab->shm->lock);
        if (i == SIM_FABRIC_MAX_ATTACH) {
            ret = -EUSERS;
            break;
        }
        if (host != 0) {
            /* what wakes a port's thread asleep on its socket */
            fab->wake_fd = socket(AF_INET,
                                  SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        }
        *fab_p = fab;
        return 0;
    }
    munmap(fab->shm, sizeof(*fab->shm));
    free(fab);
    return ret;
}

int sim_fabric_attach(const char *name, sim_fabric_t **fab_p)
{
    return sim_fabric_attach_as(name, 0, 0, fab_p);
}

int sim_fabric_attach_host(const char *name, unsigned host, uint64_t identity,
                           sim_fabric_t **fab_p)
{
    if ((name == NULL) || (host >= SIM_FABRIC_MAX_HOSTS) || (identity == 0)) {
        return -EINVAL;
    }
    return sim_fabric_attach_as(name, host + 1, identity, fab_p);
}

void sim_fabric_detach(sim_fabric_t *fab)
{
    sim_fabric_shm_t *shm  = fab->shm;
    bool              last = true, removed = false;
    unsigned          i;

    if (sim_fabric_lock(shm) == 0) {
        sim_fabric_reap(shm);
        for (i = 0; i < SIM_FABRIC_MAX_ATTACH; ++i) {
            if (!removed && (shm->attached[i].pid == fab->self.pid) &&
                (shm->attached[i].start == fab->self.start)) {
                /* ours (one entry per attachment, even in one process) */
                memset(&shm->attached[i], 0, sizeof(shm->attached[i]));
                removed = true;
            } else if (shm->attached[i].pid != 0) {
                last = false;
            }
        }
        if (last) {
            shm->dead = 1;
            shm_unlink(fab->name);
        }
        pthread_mutex_unlock(&shm->lock);
    }
    munmap(shm, sizeof(*shm));
    if (fab->wake_fd >= 0) {
        close(fab->wake_fd);
    }
    free(fab);
}

/* --------------------------------------------------------------- ports */

int sim_fabric_port_open(sim_fabric_t *fab, sim_port_t **port_p)
{
    sim_fabric_shm_t *shm = fab->shm;
    sim_port_shm_t   *p   = NULL;
    sim_port_t       *port;
    unsigned          i, gen, lid;

    port = calloc(1, sizeof(*port));
    if (port == NULL) {
        return -ENOMEM;
    }
    if (sim_fabric_lock(shm) != 0) {
        free(port);
        return -EIO;
    }
    sim_fabric_reap(shm);
    /* the least recently used free slot first: LIDs come back late */
    for (i = 0; i < SIM_FABRIC_MAX_PORTS; ++i) {
        if (atomic_load(&shm->ports[i].lid) == 0) {
            if ((p == NULL) || (shm->ports[i].gen < p->gen)) {
                p = &shm->ports[i];
            }
        }
    }
    if (p == NULL) {
        pthread_mutex_unlock(&shm->lock);
        free(port);
        return -ENOSPC;
    }
    i   = (unsigned)(p - shm->ports);
    gen = shm->next_gen++;
    if ((shm->host != 0) ? (gen > SIM_HOST_GEN_MAX) :
                           (((gen << SIM_PORT_BITS) | i) > SIM_LID_MAX)) {
        shm->next_gen = 1;
        gen           = shm->next_gen++;
    }
    p->gen = gen;
    atomic_store_explicit(&p->epoch, ++shm->next_epoch, memory_order_relaxed);
    p->owner = fab->self;
    atomic_store(&p->head, 0);
    atomic_store(&p->tail, 0);
    atomic_store(&p->sleeping, 0);
    atomic_store(&p->wake_req, 0);
    atomic_store(&p->last_poll_ns, 0);
    atomic_store(&p->wake_addr, 0);
    atomic_store(&p->wake_port, 0);
    for (unsigned s = 0; s < SIM_FABRIC_RING_SIZE; ++s) {
        /* not s + 1: nothing is in it yet */
        atomic_store_explicit(&p->ring[s].seq, s, memory_order_relaxed);
    }
    lid = (shm->host == 0) ? ((gen << SIM_PORT_BITS) | i) :
                             ((gen << SIM_HOST_GEN_SHIFT) |
                              ((shm->host - 1) << SIM_PORT_BITS) | i);
    atomic_store_explicit(&p->lid, lid, memory_order_release);
    pthread_mutex_unlock(&shm->lock);

    port->fab      = fab;
    port->shm      = p;
    port->lid      = (uint16_t)lid;
    port->sleep_fd = -1;
    *port_p        = port;
    return 0;
}

void sim_fabric_port_close(sim_port_t *port)
{
    sim_fabric_shm_t *shm = port->fab->shm;

    if (sim_fabric_lock(shm) == 0) {
        atomic_store(&port->shm->lid, 0);
        pthread_mutex_unlock(&shm->lock);
    }
    free(port);
}

uint64_t sim_fabric_identity(const sim_fabric_t *fab)
{
    return fab->shm->identity;
}

const char *sim_fabric_name(const sim_fabric_t *fab)
{
    return fab->name + 1;
}

void sim_fabric_port_stats(const sim_port_t *port, sim_port_stats_t *st)
{
    st->sleeps         = atomic_load(&port->sleeps);
    st->untimed_sleeps = atomic_load(&port->untimed_sleeps);
    st->asleep_untimed = atomic_load(&port->asleep_untimed);
}

uint16_t sim_fabric_port_lid(const sim_port_t *port)
{
    return port->lid;
}

int sim_fabric_lid_local(const sim_fabric_t *fab, uint16_t lid)
{
    return (fab->shm->host == 0) ||
           (sim_fabric_lid_host(lid) + 1 == fab->shm->host);
}

int sim_fabric_lid_alive(sim_fabric_t *fab, uint16_t lid)
{
    sim_port_shm_t *p = &fab->shm->ports[lid & (SIM_FABRIC_MAX_PORTS - 1)];

    return (lid != 0) && (atomic_load(&p->lid) == lid) &&
           sim_proc_alive(&p->owner);
}

/* ---------------------------------------------------------- data path */

/* The consumer of port `p` (LID `dlid`) is done with position `pos -
 * RING`: by the head this attachment saw last in this opening of the port
 * (`epoch`), else by the real one, which is then remembered. Acquire and
 * release all along: the consumer read the slot before it moved its head
 * past it, and that holds for whichever thread of ours read the head. */
static bool sim_fabric_slot_free(sim_fabric_t *fab, uint16_t dlid,
                                 sim_port_shm_t *p, uint32_t epoch,
                                 uint32_t pos)
{
    _Atomic uint64_t *seen = &fab->head_seen[dlid & (SIM_FABRIC_MAX_PORTS - 1)];
    uint64_t          v    = atomic_load_explicit(seen, memory_order_acquire);
    uint32_t          head;

    if (((uint32_t)(v >> 32) == epoch) &&
        (pos - (uint32_t)v < SIM_FABRIC_RING_SIZE)) {
        return true;
    }
    head = atomic_load_explicit(&p->head, memory_order_acquire);
    atomic_store_explicit(seen, ((uint64_t)epoch << 32) | head,
                          memory_order_release);
    return pos - head < SIM_FABRIC_RING_SIZE;
}

/* Wake the thread asleep on port P: by its futex, or where it sleeps on a
 * socket, by an empty datagram (a wake that finds the thread awake is a
 * datagram its next receive reads and skips). */
static void sim_fabric_wake_waiter(sim_fabric_t *fab, sim_port_shm_t *p)
{
    struct sockaddr_in to;
    uint32_t           port = atomic_load(&p->wake_port);

    atomic_fetch_add(&p->futex, 1);
    /* a thread whose owner polls naps on the futex (sim_fabric_wait) */
    sim_futex(&p->futex, FUTEX_WAKE, 1, NULL);
    if ((port == 0) || (fab->wake_fd < 0)) {
        return;
    }
    memset(&to, 0, sizeof(to));
    to.sin_family      = AF_INET;
    to.sin_addr.s_addr = atomic_load(&p->wake_addr);
    to.sin_port        = (in_port_t)port;
    (void)sendto(fab->wake_fd, "", 0, MSG_DONTWAIT, (struct sockaddr *)&to,
                 sizeof(to));
}

void sim_fabric_port_sleep_on(sim_port_t *port, int fd,
                              const struct sockaddr_in *addr)
{
    port->sleep_fd = fd;
    atomic_store(&port->shm->wake_addr, addr->sin_addr.s_addr);
    atomic_store(&port->shm->wake_port, addr->sin_port);
}

int sim_fabric_send(sim_fabric_t *fab, uint16_t dlid, const void *hdr,
                    size_t hdr_len, const void *payload, size_t payload_len)
{
    sim_port_shm_t *p = &fab->shm->ports[dlid & (SIM_FABRIC_MAX_PORTS - 1)];
    sim_slot_t     *slot;
    uint32_t        pos, epoch;

    if (hdr_len + payload_len > SIM_FABRIC_MAX_PKT) {
        return -EMSGSIZE;
    }
    if ((dlid == 0) ||
        (atomic_load_explicit(&p->lid, memory_order_acquire) != dlid)) {
        return -EHOSTUNREACH;
    }
    epoch = atomic_load_explicit(&p->epoch, memory_order_relaxed);

    pos = atomic_load_explicit(&p->tail, memory_order_relaxed);
    do {
        if (!sim_fabric_slot_free(fab, dlid, p, epoch, pos)) {
            /* full: a live owner is slow (the sender waits, as on a
             * lossless link); a dead one never drains it, and the
             * packet is lost as a switch drops what nobody takes */
            return sim_proc_alive(&p->owner) ? -EAGAIN : 0;
        }
    } while (!atomic_compare_exchange_weak_explicit(&p->tail, &pos, pos + 1,
                                                    memory_order_relaxed,
                                                    memory_order_relaxed));

    slot = &p->ring[pos & (SIM_FABRIC_RING_SIZE - 1)];
    memcpy(slot->data, hdr, hdr_len);
    if (payload_len > 0) {
        memcpy(slot->data + hdr_len, payload, payload_len);
    }
    slot->len = (uint32_t)(hdr_len + payload_len);
    atomic_store_explicit(&slot->seq, pos + 1, memory_order_release);

    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&p->sleeping, memory_order_relaxed) &&
        (sim_fabric_now() - atomic_load(&p->last_poll_ns) >
         SIM_POLL_FRESH_NS)) {
        sim_fabric_wake_waiter(fab, p);
    }
    return 0;
}

/* The slot at the consumer's head holds its packet. */
static inline bool sim_fabric_head_ready(const sim_port_shm_t *p, uint32_t head)
{
    const sim_slot_t *slot = &p->ring[head & (SIM_FABRIC_RING_SIZE - 1)];

    return atomic_load_explicit(&slot->seq, memory_order_acquire) == head + 1;
}

int sim_fabric_rx_pending(const sim_port_t *port)
{
    const sim_port_shm_t *p = port->shm;

    return sim_fabric_head_ready(p, atomic_load_explicit(&p->head,
                                                         memory_order_relaxed));
}

unsigned sim_fabric_recv(sim_port_t *port, sim_fabric_rx_cb_t cb, void *arg,
                         unsigned max)
{
    sim_port_shm_t *p    = port->shm;
    uint32_t        head = atomic_load_explicit(&p->head, memory_order_relaxed);
    unsigned        count = 0;
    sim_slot_t     *slot;

    while ((count < max) && sim_fabric_head_ready(p, head)) {
        slot = &p->ring[head & (SIM_FABRIC_RING_SIZE - 1)];
        if (slot->len <= SIM_FABRIC_MAX_PKT) {
            cb(arg, slot->data, slot->len);
        }
        /* release: the slot is read before a producer may take it again */
        atomic_store_explicit(&p->head, ++head, memory_order_release);
        ++count;
    }
    return count;
}

void sim_fabric_port_touch(sim_port_t *port)
{
    uint64_t now  = sim_fabric_now();
    uint64_t last = atomic_load_explicit(&port->shm->last_poll_ns,
                                         memory_order_relaxed);

    /* store rarely: senders read this cache line after every packet, and a
     * store per poll would pull it back and forth between the processes */
    if (now - last > SIM_POLL_FRESH_NS / 8) {
        atomic_store_explicit(&port->shm->last_poll_ns, now,
                              memory_order_relaxed);
    }
}

int sim_fabric_owner_polling(const sim_port_t *port)
{
    return sim_fabric_now() - atomic_load_explicit(&port->shm->last_poll_ns,
                                                   memory_order_relaxed) <
           SIM_POLL_FRESH_NS;
}

void sim_fabric_port_idle(sim_port_t *port)
{
    sim_port_shm_t *p = port->shm;

    /* A sender stores its packet, then reads last_poll_ns (seq_cst fence
     * between, sim_fabric_send); here the reverse: either the sender sees
     * the owner idle and wakes the thread, or this sees the packet. Before,
     * a packet that came within SIM_POLL_FRESH_NS of the owner's last poll
     * skipped the wake, and an owner that then armed and slept on its CQ's
     * event left it in the ring of a thread asleep without a timeout: both
     * waited for ever (a rare hang of an event-driven ping-pong). */
    atomic_store(&p->last_poll_ns, 0);
    atomic_thread_fence(memory_order_seq_cst);
    if (sim_fabric_rx_pending(port) && atomic_load(&p->sleeping)) {
        sim_fabric_port_wake(port);
    }
}

void sim_fabric_port_wake(sim_port_t *port)
{
    /* the request first: a waiter that read the futex word after the
     * increment below still sees it and does not sleep */
    atomic_store(&port->shm->wake_req, 1);
    sim_fabric_wake_waiter(port->fab, port->shm);
}

int sim_fabric_wait(sim_port_t *port, int64_t timeout_ns)
{
    sim_port_shm_t *p = port->shm;
    struct timespec ts;
    bool            owner_active;
    uint32_t        v;
    int64_t         t = timeout_ns;

    v = atomic_load(&p->futex);
    atomic_store(&p->sleeping, 1);
    atomic_thread_fence(memory_order_seq_cst);
    if (sim_fabric_rx_pending(port) || atomic_exchange(&p->wake_req, 0)) {
        atomic_store(&p->sleeping, 0);
        return 0;
    }
    /* while the owner is active, senders may skip the wake: nap */
    owner_active = sim_fabric_now() - atomic_load(&p->last_poll_ns) <
                   SIM_OWNER_ACTIVE_NS;
    if (owner_active) {
        if ((t < 0) || (t > SIM_NAP_NS)) {
            t = SIM_NAP_NS;
        }
    }
    if (t >= 0) {
        ts.tv_sec  = t / 1000000000ll;
        ts.tv_nsec = t % 1000000000ll;
    }
    atomic_fetch_add(&port->sleeps, 1);
    if (t < 0) {
        atomic_fetch_add(&port->untimed_sleeps, 1);
        atomic_store(&port->asleep_untimed, 1);
    }
    if ((port->sleep_fd >= 0) && !owner_active) {
        /* (an active owner reads the socket itself: a thread woken by
         * each datagram would only take the engine from it) */
        struct pollfd pfd = {.fd = port->sleep_fd, .events = POLLIN};
        ppoll(&pfd, 1, (t >= 0) ? &ts : NULL, NULL);
    } else {
        sim_futex(&p->futex, FUTEX_WAIT, v, (t >= 0) ? &ts : NULL);
    }
    atomic_store(&port->asleep_untimed, 0);
    atomic_store(&p->sleeping, 0);
    return (sim_fabric_rx_pending(port) || atomic_exchange(&p->wake_req, 0) ||
            (atomic_load(&p->futex) != v)) ?
                   0 :
                   -ETIMEDOUT;
}
