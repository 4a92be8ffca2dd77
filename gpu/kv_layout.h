/*
 * kv_layout.h -- where a word of a block lies in a pool, per layout
 * (docs/gpu-design.md §1).  nb is the pool's block count, tb the 32-bit
 * words of one slot of one layer and K or V, bs the block size.
 *
 *   fa-split        per layer [2, nb, bs, H, D]   chunk = (layer, K/V)
 *   fi-fused        per layer [nb, 2, bs, H, D]   chunk = layer
 *   ds-interleaved  (L, nb, bs, 2, H, D)          chunk = layer
 *   cross-layer     [nb, L, 2, bs, H, D]          chunk = the block
 *
 * Offsets are in words from the pool's start.  Shared by C and CUDA.
 */
#ifndef KV_LAYOUT_H
#define KV_LAYOUT_H

#include "gpu/kv_pattern.h"

#include <stdint.h>

struct kvgpu_lay {
	uint32_t layout;	/* enum kvgpu_layout */
	uint32_t layers, bs, tw;	/* tw: words of one slot (layer, K/V) */
	uint64_t nb;		/* blocks in this pool */
};

KV_HD static inline uint64_t
kvgpu_word_at(const struct kvgpu_lay *y, uint64_t b, uint32_t layer,
	      uint32_t kv, uint32_t t, uint32_t w)
{
	uint64_t L = y->layers, bs = y->bs, tw = y->tw, nb = y->nb;

	switch (y->layout) {
	case 0:		/* fa-split */
		return (((uint64_t)layer * 2 + kv) * nb + b) * bs * tw +
		       t * tw + w;
	case 1:		/* fi-fused */
		return ((uint64_t)layer * nb + b) * 2 * bs * tw +
		       (uint64_t)kv * bs * tw + t * tw + w;
	case 2:		/* ds-interleaved */
		return ((uint64_t)layer * nb + b) * 2 * bs * tw +
		       ((uint64_t)t * 2 + kv) * tw + w;
	default:	/* cross-layer */
		return b * L * 2 * bs * tw + (uint64_t)layer * 2 * bs * tw +
		       (uint64_t)kv * bs * tw + t * tw + w;
	}
}

/* Chunks a block, and words a chunk. */
KV_HD static inline uint32_t
kvgpu_lay_chunks(const struct kvgpu_lay *y)
{
	return y->layout == 0 ? 2 * y->layers :
	       y->layout == 3 ? 1 : y->layers;
}

KV_HD static inline uint64_t
kvgpu_lay_chunk_words(const struct kvgpu_lay *y)
{
	uint64_t blk = (uint64_t)2 * y->layers * y->bs * y->tw;

	return blk / kvgpu_lay_chunks(y);
}

/* First word of chunk c of block b. */
KV_HD static inline uint64_t
kvgpu_chunk_at(const struct kvgpu_lay *y, uint64_t b, uint32_t c)
{
	switch (y->layout) {
	case 0:
		return kvgpu_word_at(y, b, c / 2, c % 2, 0, 0);
	case 1:
	case 2:
		return kvgpu_word_at(y, b, c, 0, 0, 0);
	default:
		return kvgpu_word_at(y, b, 0, 0, 0, 0);
	}
}

#endif /* KV_LAYOUT_H */
