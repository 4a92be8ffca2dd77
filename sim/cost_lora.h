/*
 * cost_lora.h -- the LoRA term of a step's time (cost_lora.c).
 */
#ifndef SIM_COST_LORA_H
#define SIM_COST_LORA_H

#include <stdint.h>

struct cost_model;

/* ns for `tokens` LoRA tokens over `nadapters` adapters of adapter_bytes
 * each: max(FLOPs at achieved compute, weight bytes at achieved HBM). */
int64_t cost_lora_ns(const struct cost_model *cm, uint64_t tokens,
		     uint32_t nadapters, double flops_token,
		     double adapter_bytes);

#endif /* SIM_COST_LORA_H */
