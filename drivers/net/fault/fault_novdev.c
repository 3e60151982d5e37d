/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Built instead of fault_vdev.c when DPDK's driver SDK headers are missing: there is no
 * net_fault vdev, so no port is one.
 */

#include <errno.h>

#include <rte_errno.h>

#include "fault_loc.h"

struct droce_fault *
droce_fault_from_port(uint16_t port_id __rte_unused)
{
	rte_errno = ENODEV;
	return NULL;
}
