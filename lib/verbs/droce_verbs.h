/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What droce's libibverbs.so.1 exports beyond rdma-core's API, for droce's own librdmacm
 * only (version node DROCE_PRIVATE_1 of drivers/compat/libibverbs.map; programs never
 * see it).
 */
#ifndef DROCE_VERBS_H
#define DROCE_VERBS_H

#include <stdint.h>

#include <infiniband/verbs.h>

/*
 * ibv_create_qp_ex, then the QP moved to INIT on port port_num with P_Key index 0 and no
 * access flags, in one request to droced instead of two (rdma_create_qp of a connected
 * QP, whose real access flags come with its RTR change). NULL and errno on failure, and
 * then no QP exists.
 */
struct ibv_qp *droce_create_qp_init(struct ibv_context *context,
				    struct ibv_qp_init_attr_ex *attr, uint8_t port_num);

#endif
