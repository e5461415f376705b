/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where a packet goes once it leaves the device: this host's fabric ring
 * of its destination LID, or another host's port through the wire.
 */
#include "sim.h"
#include "sim_net.h"

int sim_route_send(smlx5_context_t *ctx, uint16_t dlid, const sim_pkt_t *hdr,
                   const void *payload)
{
    if ((ctx->net != NULL) && sim_net_is_remote(ctx->net, dlid)) {
        return sim_net_send(ctx->net, dlid, hdr, payload);
    }
    return sim_fabric_send(ctx->fabric, dlid, hdr, sim_pkt_hdr_len(hdr),
                           payload, hdr->payload_len);
}
