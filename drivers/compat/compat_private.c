/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * IBVERBS_PRIVATE_34: the interface between rdma-core's libibverbs and its provider
 * libraries (libmlx5, libefa, ...), which libibverbs.so.1 must export because programs such
 * as perftest link those providers directly, and with BIND_NOW every import has to resolve
 * before main. droce's devices never come from a provider: ibv_get_device_list asks droced
 * (lib/verbs/verbs_device.c), so none of these is on any path that reaches a droce device.
 *
 * What they do here:
 *  - verbs_register_driver_34: the providers' constructors call it before main; a no-op, so
 *    no provider ever gets a device to drive.
 *  - ibv_cmd_*: the kernel-command helpers providers call on their own objects; with no
 *    provider device there is no such object. Each returns EOPNOTSUPP, the ibv_cmd_*
 *    convention for an error (a positive errno), so a caller fails cleanly.
 *  - verbs_open_device / _verbs_init_and_alloc_context: NULL with errno EOPNOTSUPP.
 *  - __verbs_log(ctx, level, fmt, ...): prints when DROCE_DEBUG is set, as libdroce's own
 *    messages do.
 * ibv_query_gid_type, the one private symbol that programs (ibv_devinfo, pyverbs) call
 * themselves, is libdroce's real implementation (lib/verbs/verbs_device.c).
 */

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define COMPAT_EXPORT	__attribute__((visibility("default")))

/* Provider-side types of rdma-core's <infiniband/driver.h> (not installed by Debian). */
struct ibv_command_buffer;
struct ibv_context;
struct ibv_cq;
struct ibv_comp_channel;
struct ibv_device;
struct verbs_context;
struct verbs_context_ops;
struct verbs_device_ops;
struct verbs_sysfs_dev;

/* rdma-core reads it to decide whether destroy may succeed after a device disassociates. */
COMPAT_EXPORT bool verbs_allow_disassociate_destroy;

COMPAT_EXPORT void
verbs_register_driver_34(const struct verbs_device_ops *ops)
{
	(void)ops;
}

COMPAT_EXPORT void
__verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...)
{
	va_list ap;

	/* rdma-core 44's verbs_log(): the level comes before the format (providers such as
	 * libefa log through it while probing every device). */
	(void)ctx;
	(void)level;
	if (getenv("DROCE_DEBUG") == NULL)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

COMPAT_EXPORT struct ibv_context *
verbs_open_device(struct ibv_device *device, void *private_data)
{
	(void)device;
	(void)private_data;
	errno = EOPNOTSUPP;
	return NULL;
}

COMPAT_EXPORT void *
_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd, size_t alloc_size,
			      struct verbs_context *context_offset, uint32_t driver_id)
{
	(void)device;
	(void)cmd_fd;
	(void)alloc_size;
	(void)context_offset;
	(void)driver_id;
	errno = EOPNOTSUPP;
	return NULL;
}

COMPAT_EXPORT void
verbs_uninit_context(struct verbs_context *context)
{
	(void)context;
}

COMPAT_EXPORT void
verbs_set_ops(struct verbs_context *vctx, const struct verbs_context_ops *ops)
{
	(void)vctx;
	(void)ops;
}

COMPAT_EXPORT void
verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context, struct ibv_comp_channel *channel,
	      void *cq_context)
{
	(void)cq;
	(void)context;
	(void)channel;
	(void)cq_context;
}

COMPAT_EXPORT int
ibv_read_ibdev_sysfs_file(char *buf, size_t size, struct verbs_sysfs_dev *sysfs_dev,
			  const char *fnfmt, ...)
{
	(void)buf;
	(void)size;
	(void)sysfs_dev;
	(void)fnfmt;
	errno = ENOENT;
	return -1;
}

COMPAT_EXPORT unsigned int
__ioctl_final_num_attrs(unsigned int num_attrs, struct ibv_command_buffer *link)
{
	(void)link;
	return num_attrs;
}

COMPAT_EXPORT int
execute_ioctl(struct ibv_context *context, struct ibv_command_buffer *cmd)
{
	(void)context;
	(void)cmd;
	return EOPNOTSUPP;
}

/*
 * The ibv_cmd_* helpers. Their real parameter lists differ per command; under the x86-64
 * and AArch64 calling conventions a function that ignores its arguments may be called
 * with any of them, so one parameterless definition serves all.
 */
#define COMPAT_CMD(name)					\
	COMPAT_EXPORT int name(void);				\
	COMPAT_EXPORT int name(void) { return EOPNOTSUPP; }

COMPAT_CMD(ibv_cmd_advise_mr)
COMPAT_CMD(ibv_cmd_alloc_dm)
COMPAT_CMD(ibv_cmd_alloc_mw)
COMPAT_CMD(ibv_cmd_alloc_pd)
COMPAT_CMD(ibv_cmd_attach_mcast)
COMPAT_CMD(ibv_cmd_close_xrcd)
COMPAT_CMD(ibv_cmd_create_ah)
COMPAT_CMD(ibv_cmd_create_counters)
COMPAT_CMD(ibv_cmd_create_cq)
COMPAT_CMD(ibv_cmd_create_cq_ex)
COMPAT_CMD(ibv_cmd_create_flow)
COMPAT_CMD(ibv_cmd_create_flow_action_esp)
COMPAT_CMD(ibv_cmd_create_qp)
COMPAT_CMD(ibv_cmd_create_qp_ex)
COMPAT_CMD(ibv_cmd_create_qp_ex2)
COMPAT_CMD(ibv_cmd_create_rwq_ind_table)
COMPAT_CMD(ibv_cmd_create_srq)
COMPAT_CMD(ibv_cmd_create_srq_ex)
COMPAT_CMD(ibv_cmd_create_wq)
COMPAT_CMD(ibv_cmd_dealloc_mw)
COMPAT_CMD(ibv_cmd_dealloc_pd)
COMPAT_CMD(ibv_cmd_dereg_mr)
COMPAT_CMD(ibv_cmd_destroy_ah)
COMPAT_CMD(ibv_cmd_destroy_counters)
COMPAT_CMD(ibv_cmd_destroy_cq)
COMPAT_CMD(ibv_cmd_destroy_flow)
COMPAT_CMD(ibv_cmd_destroy_flow_action)
COMPAT_CMD(ibv_cmd_destroy_qp)
COMPAT_CMD(ibv_cmd_destroy_rwq_ind_table)
COMPAT_CMD(ibv_cmd_destroy_srq)
COMPAT_CMD(ibv_cmd_destroy_wq)
COMPAT_CMD(ibv_cmd_detach_mcast)
COMPAT_CMD(ibv_cmd_free_dm)
COMPAT_CMD(ibv_cmd_get_context)
COMPAT_CMD(ibv_cmd_modify_cq)
COMPAT_CMD(ibv_cmd_modify_flow_action_esp)
COMPAT_CMD(ibv_cmd_modify_qp)
COMPAT_CMD(ibv_cmd_modify_qp_ex)
COMPAT_CMD(ibv_cmd_modify_srq)
COMPAT_CMD(ibv_cmd_modify_wq)
COMPAT_CMD(ibv_cmd_open_qp)
COMPAT_CMD(ibv_cmd_open_xrcd)
COMPAT_CMD(ibv_cmd_poll_cq)
COMPAT_CMD(ibv_cmd_post_recv)
COMPAT_CMD(ibv_cmd_post_send)
COMPAT_CMD(ibv_cmd_post_srq_recv)
COMPAT_CMD(ibv_cmd_query_context)
COMPAT_CMD(ibv_cmd_query_device_any)
COMPAT_CMD(ibv_cmd_query_mr)
COMPAT_CMD(ibv_cmd_query_port)
COMPAT_CMD(ibv_cmd_query_qp)
COMPAT_CMD(ibv_cmd_query_srq)
COMPAT_CMD(ibv_cmd_read_counters)
COMPAT_CMD(ibv_cmd_reg_dm_mr)
COMPAT_CMD(ibv_cmd_reg_dmabuf_mr)
COMPAT_CMD(ibv_cmd_reg_mr)
COMPAT_CMD(ibv_cmd_req_notify_cq)
COMPAT_CMD(ibv_cmd_rereg_mr)
COMPAT_CMD(ibv_cmd_resize_cq)
