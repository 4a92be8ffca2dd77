/*
 * cpu_pool.c -- the work of a backend on a pool in host memory: the whole
 * host backend, and the host (swap) pool of the CUDA backend.  Plain loops
 * over the layout's word offsets (kv_layout.h); the digest walks a block
 * in logical order (layer, K/V, slot, word), so it is the same for every
 * layout.
 */
#include "config.h"

#include "gpu/kvgpu_int.h"

#include <string.h>

void
kvgpu__cpu_poison(uint32_t *pool, const struct kvgpu_lay *y,
		  const int32_t *blocks, size_t n)
{
	uint32_t nc = kvgpu_lay_chunks(y);
	uint64_t cw = kvgpu_lay_chunk_words(y);

	for (size_t i = 0; i < n; i++)
		for (uint32_t c = 0; c < nc; c++) {
			uint32_t *w = pool + kvgpu_chunk_at(y, blocks[i], c);

			for (uint64_t k = 0; k < cw; k++)
				w[k] = KVGPU_POISON;
		}
}

void
kvgpu__cpu_poison_all(uint32_t *pool, const struct kvgpu_lay *y)
{
	uint64_t n = y->nb * 2 * y->layers * y->bs * y->tw;

	for (uint64_t k = 0; k < n; k++)
		pool[k] = KVGPU_POISON;
}

void
kvgpu__cpu_fill(uint32_t *pool, const struct kvgpu_lay *y,
		const struct kvgpu_slot *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (uint32_t l = 0; l < y->layers; l++)
			for (uint32_t kv = 0; kv < 2; kv++) {
				uint32_t *w = pool + kvgpu_word_at(
					y, s[i].block, l, kv, s[i].slot, 0);

				for (uint32_t k = 0; k < y->tw; k++)
					w[k] = kvgpu_pattern(s[i].key,
							     s[i].pos, l, kv,
							     k);
			}
}

void
kvgpu__cpu_verify(const uint32_t *pool, const struct kvgpu_lay *y,
		  const struct kvgpu_slot *s, size_t n,
		  struct kvgpu_verdict *out)
{
	for (size_t i = 0; i < n; i++)
		for (uint32_t l = 0; l < y->layers; l++)
			for (uint32_t kv = 0; kv < 2; kv++) {
				const uint32_t *w = pool + kvgpu_word_at(
					y, s[i].block, l, kv, s[i].slot, 0);

				for (uint32_t k = 0; k < y->tw; k++) {
					uint32_t want = kvgpu_pattern(
						s[i].key, s[i].pos, l, kv, k);

					out->words++;
					if (w[k] == want)
						continue;
					if (out->mismatches++ == 0) {
						out->first = (int64_t)i;
						out->first_layer = l;
						out->first_kv = kv;
						out->first_word = k;
						out->want = want;
						out->got = w[k];
					}
				}
			}
}

uint64_t
kvgpu__cpu_scan(const uint32_t *pool, const struct kvgpu_lay *y,
		const int32_t *blocks, size_t n)
{
	uint64_t cnt = 0;

	for (size_t i = 0; i < n; i++)
		for (uint32_t t = 0; t < y->bs; t++) {
			const uint32_t *w = pool + kvgpu_word_at(
				y, blocks[i], 0, 0, t, 0);
			uint32_t k;

			for (k = 0; k < y->tw && w[k] == KVGPU_POISON; k++)
				;
			cnt += k == y->tw;
		}
	return cnt;
}

uint64_t
kvgpu__cpu_digest(const uint32_t *pool, const struct kvgpu_lay *y,
		  const int32_t *blocks, size_t n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t idx = 0;

		for (uint32_t l = 0; l < y->layers; l++)
			for (uint32_t kv = 0; kv < 2; kv++)
				for (uint32_t t = 0; t < y->bs; t++) {
					const uint32_t *w = pool +
						kvgpu_word_at(y, blocks[i], l,
							      kv, t, 0);

					for (uint32_t k = 0; k < y->tw; k++)
						sum += kvgpu_digest_term(
							w[k], i, idx++);
				}
	}
	return sum;
}

void
kvgpu__cpu_copy_block(uint32_t *dst, const struct kvgpu_lay *yd, uint64_t db,
		      const uint32_t *src, const struct kvgpu_lay *ys,
		      uint64_t sb)
{
	uint32_t nc = kvgpu_lay_chunks(ys);
	size_t cb = (size_t)kvgpu_lay_chunk_words(ys) * 4;

	for (uint32_t c = 0; c < nc; c++)
		memcpy(dst + kvgpu_chunk_at(yd, db, c),
		       src + kvgpu_chunk_at(ys, sb, c), cb);
}

void
kvgpu__cpu_copy_pool(uint32_t *dst, const struct kvgpu_lay *yd,
		     const uint32_t *src, const struct kvgpu_lay *ys)
{
	for (uint64_t b = 0; b < ys->nb && b < yd->nb; b++)
		kvgpu__cpu_copy_block(dst, yd, b, src, ys, b);
}
