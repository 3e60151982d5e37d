/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef DROCE_SHM_CTL_H
#define DROCE_SHM_CTL_H

/*
 * The old name of droce_shm_qp_attr.h and droce_shm_arena.h together, kept only because
 * lib/engine (droce_engine.h) includes it and lib/engine is renamed apart: remove this
 * file once it includes the two headers itself. Nothing else may include it.
 */

#include "droce_shm_arena.h"
#include "droce_shm_qp_attr.h"

#endif /* DROCE_SHM_CTL_H */
