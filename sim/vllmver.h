/*
 * vllmver.h -- the vLLM releases kvsim knows by number, and the engine
 * loop each runs by default (engine.vllm_version, engine.async_scheduling;
 * docs/run.md "Engine loop: async scheduling").
 *
 * A version is MAJOR.MINOR.PATCH with an optional ".postN"; it is known
 * when its MAJOR.MINOR series is in kvsim's table and PATCH is not past
 * the series' last release kvsim knows.  Async scheduling (vLLM's
 * --async-scheduling, PR #19970) is there from 0.10.0 and on by default
 * from 0.14.0 (PR #27614).
 */
#ifndef SIM_VLLMVER_H
#define SIM_VLLMVER_H

#include "core/kvcore.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The version a vllm-v1 run takes when the configuration names none. */
#define SIM_VLLM_DEFAULT "0.15.1"

struct sim_vllm_ver {
	uint32_t major, minor, patch;
};

/*
 * Parse and look up text.  KV_OK, or KV_EINVAL with why ("unknown vLLM
 * version; kvsim knows 0.6.0 to 0.15.1") for text that is not a version
 * or a release kvsim does not know.
 */
kv_err sim_vllm_parse(const char *text, struct sim_vllm_ver *v, char *why,
		      size_t whylen);

/* Whether v has async scheduling at all, and whether it is on by default. */
bool sim_vllm_has_async(const struct sim_vllm_ver *v);
bool sim_vllm_async_default(const struct sim_vllm_ver *v);

#endif
