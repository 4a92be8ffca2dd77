/*
 * wl_stats.c -- the statistics of `kvsim trace-stats`, with the
 * definitions of ../shared/traces/README.md:
 *
 *   p99       nearest rank: the ceil(0.99 n)-th smallest value;
 *   median    the middle value, or the mean of the two middle values;
 *   span      last arrival - first arrival; mean rate = rows / span;
 *   1-min     arrivals in consecutive 60 s bins from the first arrival,
 *             the final partial bin left out;
 *   reuse     an infinite never-evicting prefix cache replayed in arrival
 *             order: per request, the longest leading run of hash ids (or
 *             token blocks) seen in earlier requests; the token ratio
 *             caps matched tokens at min(block x matched, prompt).
 *
 * Lengths are counted exactly in a dense table up to 2^20 tokens (an
 * overflow list above), so percentiles are exact without storing the
 * trace.  Memory: the tables, one counter per minute, and the set of
 * distinct hash ids or block hashes when reuse is measured.
 */
#include "config.h"

#include "workloads/wl_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DENSE ((uint32_t)1 << 20)
#define BIN_NS 60000000000LL

struct lenacc {
	uint32_t *dense;
	uint32_t *over;		/* values >= DENSE */
	size_t nover, overcap;
	uint64_t n, sum, min, max;
};

struct wl_stats {
	uint32_t block, vocab, hb;
	uint64_t rows;
	int64_t first, last;
	uint64_t distinct;
	double gmean, gm2;	/* Welford over inter-arrival gaps (s) */
	uint64_t ngaps;
	uint64_t *bins;
	size_t nbins, bincap;
	struct lenacc in, out;
	struct wl_hset seen;	/* hash ids */
	struct wl_hset blocks;	/* chained token-block hashes */
	uint64_t seg_total, seg_matched, tok_matched, reuse_req;
	uint64_t blk_total, blk_hit;
	uint64_t *bh;		/* per-request chained block hashes */
	size_t bhcap;
};

static bool
len_init(struct lenacc *a)
{
	memset(a, 0, sizeof(*a));
	a->dense = calloc(DENSE, sizeof(*a->dense));
	a->min = UINT64_MAX;
	return a->dense != NULL;
}

static bool
len_add(struct lenacc *a, uint32_t v)
{
	if (v < DENSE) {
		a->dense[v]++;
	} else {
		if (!wl__grow((void **)&a->over, &a->overcap, a->nover + 1,
		    sizeof(*a->over)))
			return false;
		a->over[a->nover++] = v;
	}
	a->n++;
	a->sum += v;
	if (v < a->min)
		a->min = v;
	if (v > a->max)
		a->max = v;
	return true;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* The k-th smallest value, k 1-based.  `over` must be sorted. */
static uint64_t
len_rank(const struct lenacc *a, uint64_t k)
{
	uint64_t c = 0;

	for (uint32_t v = 0; v < DENSE; v++) {
		c += a->dense[v];
		if (c >= k)
			return v;
	}
	return a->over[k - c - 1];
}

static void
len_summary(struct lenacc *a, struct wl_len_summary *s)
{
	memset(s, 0, sizeof(*s));
	if (a->n == 0)
		return;
	if (a->nover > 1)
		qsort(a->over, a->nover, sizeof(*a->over), cmp_u32);
	s->sum = a->sum;
	s->min = a->min;
	s->max = a->max;
	s->mean = (double)a->sum / (double)a->n;
	if (a->n % 2)
		s->median = (double)len_rank(a, (a->n + 1) / 2);
	else
		s->median = ((double)len_rank(a, a->n / 2) +
		    (double)len_rank(a, a->n / 2 + 1)) / 2;
	s->p99 = len_rank(a, (a->n * 99 + 99) / 100);
}

static void
len_release(struct lenacc *a)
{
	free(a->dense);
	free(a->over);
}

wl_stats *
wl_stats_new(uint32_t block_tokens, uint32_t vocab, uint32_t hash_block)
{
	wl_stats *st = calloc(1, sizeof(*st));

	if (st == NULL)
		return NULL;
	st->block = block_tokens;
	st->vocab = vocab ? vocab : 32000;
	st->hb = hash_block;
	if (!len_init(&st->in) || !len_init(&st->out) ||
	    (hash_block && !wl__hset_init(&st->seen)) ||
	    (block_tokens && !wl__hset_init(&st->blocks))) {
		wl_stats_free(st);
		return NULL;
	}
	return st;
}

/* Token-block reuse of one request (blocks of st->block tokens). */
static wl_err
add_blocks(wl_stats *st, const struct wl_request *r)
{
	uint32_t nb = r->prompt_tokens / st->block, b = 0, fill = 0;
	uint64_t chain = 0x6b7673696d, h = 0;
	bool leading = true;
	uint32_t seg = 0, off = 0;

	if (nb == 0)
		return WL_OK;
	if (!wl__grow((void **)&st->bh, &st->bhcap, nb, sizeof(*st->bh)))
		return WL_ENOMEM;
	for (uint32_t pos = 0; b < nb; pos++) {
		uint32_t tok;

		if (r->tokens != NULL) {
			tok = r->tokens[pos];
		} else {
			while (off >= r->segs[seg].len) {
				seg++;
				off = 0;
			}
			tok = wl_token(r->segs[seg].key, off, st->vocab);
			off++;
		}
		h = wl_mix(h, tok);
		if (++fill == st->block) {
			chain = wl_mix(chain, h);
			st->bh[b++] = chain;
			h = 0;
			fill = 0;
		}
	}
	for (b = 0; b < nb; b++) {
		int hit = wl__hset_has(&st->blocks, st->bh[b], false);

		if (hit && leading)
			st->blk_hit++;
		else
			leading = false;
	}
	for (b = 0; b < nb; b++)
		if (wl__hset_has(&st->blocks, st->bh[b], true) < 0)
			return WL_ENOMEM;
	st->blk_total += nb;
	return WL_OK;
}

static wl_err
add_hashes(wl_stats *st, const struct wl_request *r)
{
	uint64_t m = 0;
	uint64_t tok;

	while (m < r->nsegs && wl__hset_has(&st->seen, r->segs[m].key,
	    false) == 1)
		m++;
	for (uint32_t i = 0; i < r->nsegs; i++)
		if (wl__hset_has(&st->seen, r->segs[i].key, true) < 0)
			return WL_ENOMEM;
	st->seg_total += r->nsegs;
	st->seg_matched += m;
	tok = m * st->hb;
	st->tok_matched += tok < r->prompt_tokens ? tok : r->prompt_tokens;
	if (m > 0)
		st->reuse_req++;
	return WL_OK;
}

wl_err
wl_stats_add(wl_stats *st, const struct wl_request *r)
{
	int64_t t = r->arrival_ns;

	if (st->rows == 0) {
		st->first = st->last = t;
		st->distinct = 1;
	} else {
		double gap = (double)(t - st->last) / 1e9, d;

		if (t < st->last)
			return WL_EORDER;
		if (t != st->last)
			st->distinct++;
		st->ngaps++;
		d = gap - st->gmean;
		st->gmean += d / (double)st->ngaps;
		st->gm2 += d * (gap - st->gmean);
		st->last = t;
	}
	st->rows++;
	{
		size_t bin = (size_t)((t - st->first) / BIN_NS);

		if (!wl__grow((void **)&st->bins, &st->bincap, bin + 1,
		    sizeof(*st->bins)))
			return WL_ENOMEM;
		while (st->nbins <= bin)
			st->bins[st->nbins++] = 0;
		st->bins[bin]++;
	}
	if (!len_add(&st->in, r->prompt_tokens) ||
	    !len_add(&st->out, r->output_tokens))
		return WL_ENOMEM;
	if (st->hb && add_hashes(st, r) != WL_OK)
		return WL_ENOMEM;
	if (st->block && add_blocks(st, r) != WL_OK)
		return WL_ENOMEM;
	return WL_OK;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

void
wl_stats_summary(wl_stats *st, struct wl_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->rows = st->rows;
	if (st->rows == 0)
		return;
	s->first_ns = st->first;
	s->last_ns = st->last;
	s->span_s = (double)(st->last - st->first) / 1e9;
	s->mean_rate = s->span_s > 0 ? (double)st->rows / s->span_s : 0;
	s->distinct_ts = st->distinct;
	if (st->ngaps > 1 && st->gmean > 0)
		s->gap_cv = sqrt(st->gm2 / (double)(st->ngaps - 1)) /
		    st->gmean;
	s->bins = (uint64_t)((st->last - st->first) / BIN_NS);
	if (s->bins > 0) {
		uint64_t *b = malloc(s->bins * sizeof(*b));

		if (b != NULL) {
			memcpy(b, st->bins, s->bins * sizeof(*b));
			qsort(b, s->bins, sizeof(*b), cmp_u64);
			s->bin_min = b[0];
			s->bin_max = b[s->bins - 1];
			s->bin_median = s->bins % 2 ? (double)b[s->bins / 2] :
			    ((double)b[s->bins / 2 - 1] +
			    (double)b[s->bins / 2]) / 2;
			for (uint64_t i = 0; i < s->bins; i++)
				s->bins_empty += b[i] == 0;
			free(b);
		}
	}
	len_summary(&st->in, &s->in);
	len_summary(&st->out, &s->out);
	if (s->span_s > 0) {
		s->in_tok_s = (double)s->in.sum / s->span_s;
		s->out_tok_s = (double)s->out.sum / s->span_s;
	}
	if (st->hb) {
		s->has_hash = true;
		s->hash_block = st->hb;
		s->seg_total = st->seg_total;
		s->seg_unique = st->seen.n;
		s->seg_matched = st->seg_matched;
		s->tok_matched = st->tok_matched;
		s->reuse_requests = st->reuse_req;
	}
	s->block_tokens = st->block;
	s->blk_total = st->blk_total;
	s->blk_hit = st->blk_hit;
}

void
wl_stats_free(wl_stats *st)
{
	if (st == NULL)
		return;
	len_release(&st->in);
	len_release(&st->out);
	if (st->hb)
		wl__hset_release(&st->seen);
	if (st->block)
		wl__hset_release(&st->blocks);
	free(st->bins);
	free(st->bh);
	free(st);
}
