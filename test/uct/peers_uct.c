/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dc_peers: UCT set-up of one process (the strand component, its MD on the
 * software NIC, a dc_strand interface), VFS reads and socket helpers.
 */
#include "peers.h"
#include "contrib/uct_loader.h"
#include "dc_iface_params.h"

#include <ucs/datastruct/string_buffer.h>
#include <ucs/vfs/base/vfs_obj.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double peers_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

ucs_status_t
peers_uct_open(peers_uct_t *u, uct_error_handler_t err_cb, void *err_arg)
{
    uct_md_config_t    *md_config;
    uct_iface_config_t *config;
    uct_iface_params_t  params;
    ucs_status_t        status;

    memset(u, 0, sizeof(*u));
    u->event_fd  = -1;
    u->component = strand_uct_component();
    if (u->component == NULL) {
        fprintf(stderr, "dc_peers: no strand component (run through "
                        "strand-run, or set STRAND_PLUGIN)\n");
        return UCS_ERR_NO_DEVICE;
    }
    status = uct_md_config_read(u->component, NULL, NULL, &md_config);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_md_open(u->component, "smlx5_0", md_config, &u->md);
    uct_config_release(md_config);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_md_query(u->md, &u->md_attr);
    if (status != UCS_OK) {
        return status;
    }
    status = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                      &u->async);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_worker_create(u->async, UCS_THREAD_MODE_SINGLE, &u->worker);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_md_iface_config_read(u->md, "dc_strand", NULL, NULL, &config);
    if (status != UCS_OK) {
        return status;
    }
    strand_test_dc_iface_params(&params, err_cb, err_arg);
    status = uct_iface_open(u->md, u->worker, &params, config, &u->iface);
    uct_config_release(config);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_iface_query(u->iface, &u->attr);
    if (status != UCS_OK) {
        return status;
    }
    if (uct_iface_event_fd_get(u->iface, &u->event_fd) != UCS_OK) {
        u->event_fd = -1;
    }
    uct_iface_progress_enable(u->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    return UCS_OK;
}

void peers_uct_close(peers_uct_t *u)
{
    if (u->iface != NULL) {
        uct_iface_close(u->iface);
    }
    if (u->worker != NULL) {
        uct_worker_destroy(u->worker);
    }
    if (u->async != NULL) {
        ucs_async_context_destroy(u->async);
    }
    if (u->md != NULL) {
        uct_md_close(u->md);
    }
}

static void peers_vfs_nop(const char *name, void *arg)
{
}

void peers_vfs_read(peers_uct_t *u, const char *file, char *buf, size_t len)
{
    ucs_string_buffer_t strb = UCS_STRING_BUFFER_INITIALIZER;
    char                path[256];

    buf[0] = '\0';
    /* listing the directory refreshes it: the transport adds its files */
    snprintf(path, sizeof(path), "/uct/worker/%p/iface/%p", u->worker,
             u->iface);
    ucs_vfs_path_list_dir(path, peers_vfs_nop, NULL);
    snprintf(path, sizeof(path), "/uct/worker/%p/iface/%p/%s", u->worker,
             u->iface, file);
    if (ucs_vfs_path_read_file(path, &strb) == UCS_OK) {
        snprintf(buf, len, "%s", ucs_string_buffer_cstr(&strb));
    }
    ucs_string_buffer_cleanup(&strb);
}

int peers_send(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    ssize_t     n;

    while (len > 0) {
        n = write(fd, p, len);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= n;
    }
    return 0;
}

int peers_recv(int fd, void *buf, size_t len)
{
    char   *p = buf;
    ssize_t n;

    while (len > 0) {
        n = read(fd, p, len);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= n;
    }
    return 0;
}
