/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Asynchronous events of the device (strand_async.h).
 */
#include "config.h"

#include "strand_async.h"

#include <ucs/async/async.h>
#include <ucs/debug/log.h>
#include <errno.h>
#include <pthread.h>

/* The async fds this process watches. Two memory domains of one process
 * can share a device context (the software device has one per process;
 * Open MPI's pml and osc each open UCP): the first one watches it, and the
 * second does not try (UCS would log an error for the taken fd). */
#define STRAND_ASYNC_MAX_WATCHED 64
static pthread_mutex_t strand_async_lock = PTHREAD_MUTEX_INITIALIZER;
static int             strand_async_watched[STRAND_ASYNC_MAX_WATCHED];
static unsigned        strand_async_num_watched;

/* Last WQE Reached, by QP number, for QPs that leave through ERR
 * (rc/rc_retire.h): the latest ones of every device of the process, since
 * one memory domain reads the events of a context others share. Events
 * are rare; the lock is the watch list's. */
#define STRAND_ASYNC_LAST_WQE_KEPT 1024
static struct {
    int      fd; /* the device context's async fd */
    uint32_t qpn;
} strand_async_last_wqe[STRAND_ASYNC_LAST_WQE_KEPT];
static uint64_t strand_async_last_wqe_count;

static void strand_async_last_wqe_add(int fd, uint32_t qpn)
{
    unsigned slot;

    pthread_mutex_lock(&strand_async_lock);
    slot = strand_async_last_wqe_count++ % STRAND_ASYNC_LAST_WQE_KEPT;
    strand_async_last_wqe[slot].fd  = fd;
    strand_async_last_wqe[slot].qpn = qpn;
    pthread_mutex_unlock(&strand_async_lock);
}

uint64_t strand_async_last_wqe_mark(void)
{
    uint64_t mark;

    pthread_mutex_lock(&strand_async_lock);
    mark = strand_async_last_wqe_count;
    pthread_mutex_unlock(&strand_async_lock);
    return mark;
}

int strand_async_last_wqe_since(const strand_dev_t *dev, uint32_t qpn,
                                uint64_t mark)
{
    uint64_t n;
    unsigned slot;
    int      found = 0;

    pthread_mutex_lock(&strand_async_lock);
    if (strand_async_last_wqe_count - mark > STRAND_ASYNC_LAST_WQE_KEPT) {
        found = -1;
    }
    for (n = mark; (found == 0) && (n != strand_async_last_wqe_count); ++n) {
        slot  = n % STRAND_ASYNC_LAST_WQE_KEPT;
        found = (strand_async_last_wqe[slot].fd == dev->async_fd) &&
                (strand_async_last_wqe[slot].qpn == qpn);
    }
    pthread_mutex_unlock(&strand_async_lock);
    return found;
}

static int strand_async_is_watched(int fd)
{
    unsigned i;

    for (i = 0; i < strand_async_num_watched; ++i) {
        if (strand_async_watched[i] == fd) {
            return 1;
        }
    }
    return 0;
}

static void strand_async_unwatch(int fd)
{
    unsigned i;

    for (i = 0; i < strand_async_num_watched; ++i) {
        if (strand_async_watched[i] == fd) {
            strand_async_watched[i] =
                    strand_async_watched[--strand_async_num_watched];
            return;
        }
    }
}

static ucs_log_level_t strand_async_level(enum ibv_event_type type)
{
    switch (type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
        /* a DCI in ERR: its error CQEs drive its recovery */
        return UCS_LOG_LEVEL_DIAG;
    case IBV_EVENT_CQ_ERR:
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_DEVICE_FATAL:
    case IBV_EVENT_PORT_ERR:
        return UCS_LOG_LEVEL_ERROR;
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_GID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
        return UCS_LOG_LEVEL_WARN;
    default:
        return UCS_LOG_LEVEL_DEBUG;
    }
}

void strand_async_drain(strand_async_t *a)
{
    strand_dev_event_t ev;
    unsigned           type;

    while (a->dev->ops->get_async_event(a->dev, &ev) == 0) {
        type = (unsigned)ev.type;
        if (ev.type == IBV_EVENT_QP_LAST_WQE_REACHED) {
            strand_async_last_wqe_add(a->dev->async_fd, ev.qpn);
        }
        if (type < STRAND_ASYNC_MAX_TYPE) {
            __atomic_store_n(&a->last_qpn[type], ev.qpn, __ATOMIC_RELAXED);
            __atomic_add_fetch(&a->count[type], 1, __ATOMIC_RELEASE);
        }
        ucs_log(strand_async_level(ev.type), "%s: async event %s%s%.0x",
                a->dev->info.name, ibv_event_type_str(ev.type),
                ev.qpn ? " on QP 0x" : "", ev.qpn);
    }
}

static void strand_async_cb(int fd, ucs_event_set_types_t events, void *arg)
{
    strand_async_drain(arg);
}

ucs_status_t strand_async_init(strand_async_t *a, strand_dev_t *dev)
{
    ucs_status_t status;

    memset(a, 0, sizeof(*a));
    a->dev = dev;
    if ((dev->async_fd < 0) || (dev->ops->get_async_event == NULL)) {
        return UCS_OK;
    }
    pthread_mutex_lock(&strand_async_lock);
    if (strand_async_is_watched(dev->async_fd) ||
        (strand_async_num_watched == STRAND_ASYNC_MAX_WATCHED)) {
        /* another memory domain of this process reads the events */
        ucs_debug("%s: async events read by another memory domain",
                  dev->info.name);
        status = UCS_ERR_ALREADY_EXISTS;
    } else {
        status = ucs_async_set_event_handler(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                             dev->async_fd,
                                             UCS_EVENT_SET_EVREAD,
                                             strand_async_cb, a, NULL);
        if (status == UCS_OK) {
            strand_async_watched[strand_async_num_watched++] = dev->async_fd;
            a->registered                                    = 1;
        }
    }
    pthread_mutex_unlock(&strand_async_lock);
    if ((status != UCS_OK) && (status != UCS_ERR_ALREADY_EXISTS)) {
        /* not fatal: the DCIs recover from their CQEs; the events are
         * then read when the VFS file is read and at close */
        ucs_diag("%s: cannot watch the device's async events: %s",
                 dev->info.name, ucs_status_string(status));
    }
    return UCS_OK;
}

void strand_async_cleanup(strand_async_t *a)
{
    if (a->registered) {
        ucs_async_remove_handler(a->dev->async_fd, 1);
        pthread_mutex_lock(&strand_async_lock);
        strand_async_unwatch(a->dev->async_fd);
        pthread_mutex_unlock(&strand_async_lock);
        a->registered = 0;
    }
    strand_async_drain(a);
}

uint64_t strand_async_count(const strand_async_t *a, enum ibv_event_type type,
                            uint32_t *last_qpn)
{
    unsigned t = (unsigned)type;

    if (t >= STRAND_ASYNC_MAX_TYPE) {
        return 0;
    }
    if (last_qpn != NULL) {
        *last_qpn = __atomic_load_n(&a->last_qpn[t], __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&a->count[t], __ATOMIC_ACQUIRE);
}
