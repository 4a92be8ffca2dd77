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
 * distinct hash ids when reuse is measured.  Token-block reuse costs per
 * segment, not per token (add_segment_blocks): a tree of the segments
 * seen, so a 2^31-token prompt is one step; only explicit token ids are
 * hashed block by block, a set of every block seen.
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
	struct wl_hset blocks;	/* chained token-block hashes (token ids) */
	struct wl_hset edge, node, follow;	/* add_segment_blocks' tree */
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
	    (block_tokens && (!wl__hset_init(&st->blocks) ||
	    !wl__hmap_init(&st->edge) || !wl__hset_init(&st->node) ||
	    !wl__hset_init(&st->follow)))) {
		wl_stats_free(st);
		return NULL;
	}
	return st;
}

/*
 * Token-block reuse of a request with explicit token ids: the ids hashed
 * in chained blocks of st->block, looked up in and added to the set of
 * every block seen.  The ids are in memory already (read from the trace),
 * so the walk costs what reading them did.
 */
static wl_err
add_token_blocks(wl_stats *st, const struct wl_request *r, uint32_t nb)
{
	uint64_t chain = 0x6b7673696d, h = 0;
	uint32_t b = 0, fill = 0, hit = 0;
	bool leading = true;

	if (!wl__grow((void **)&st->bh, &st->bhcap, nb, sizeof(*st->bh)))
		return WL_ENOMEM;
	for (uint32_t pos = 0; b < nb; pos++) {
		h = wl_mix(h, r->tokens[pos]);
		if (++fill == st->block) {
			chain = wl_mix(chain, h);
			st->bh[b++] = chain;
			h = 0;
			fill = 0;
		}
	}
	for (b = 0; b < nb && leading; b++) {
		if (wl__hset_has(&st->blocks, st->bh[b], false) == 1)
			hit++;
		else
			leading = false;
	}
	for (b = 0; b < nb; b++)
		if (wl__hset_has(&st->blocks, st->bh[b], true) < 0)
			return WL_ENOMEM;
	st->blk_hit += hit;
	return WL_OK;
}

/* Earlier segments with the key of the last one matched, running on. */
struct longer {
	bool any;
	uint32_t next;		/* their id right after the match */
};

/*
 * The same for a prompt of segments, in time linear in its segments
 * rather than its tokens.  Token i of a segment is a function of (key,
 * i), so two prompts agree on their first L tokens when their segments
 * agree up to there.  A tree of the segments seen gives the longest such
 * prefix L shared with any earlier prompt: a node is the exact run of
 * whole segments before it (a chained hash); st->edge maps (node, key) to
 * the longest segment with that key seen there; st->node holds the nodes
 * reached; st->follow holds (node, id of the token that follows it).
 * Beyond L the ids differ unless equal by chance (odds 1/vocab a token):
 * the token right after L is compared with those that followed L in the
 * earlier prompts, as a cache of ids would (a 1-token match can complete
 * a block); two or more chance-equal tokens in a row are not looked for.
 * Leading blocks that hit: (L + that match) / block.
 */
static wl_err
add_segment_blocks(wl_stats *st, const struct wl_request *r, uint32_t nb)
{
	uint64_t node = 0x6b7673696d, shared = 0;
	uint32_t left = r->prompt_tokens, v = st->vocab, extra = 0;
	struct longer dv = { false, 0 };
	bool matching = true;

	for (uint32_t i = 0; i < r->nsegs && left > 0; i++) {
		uint64_t key = r->segs[i].key, edge, child;
		uint32_t len = r->segs[i].len < left ? r->segs[i].len : left;
		uint32_t tok0 = wl_token(key, 0, v), m;

		if (len == 0)
			continue;
		left -= len;
		edge = wl_mix(node, key);
		child = wl_mix(edge, len);
		if (matching) {
			m = wl__hmap_get(&st->edge, edge);
			if (m == 0) {
				/* ids that followed this node, or the run */
				extra = wl__hset_has(&st->follow,
				    wl_mix(node, tok0), false) == 1 ||
				    (dv.any && dv.next == tok0);
				matching = false;
			} else if (m < len) {
				shared += m;
				extra = wl__hset_has(&st->follow, wl_mix(wl_mix(
				    edge, m), wl_token(key, m, v)), false) == 1;
				matching = false;
			} else {
				shared += len;
				dv.any = m > len;
				dv.next = wl_token(key, len, v);
				matching = wl__hset_has(&st->node, child,
				    false) == 1;
				if (!matching && dv.any && i + 1 < r->nsegs &&
				    left > 0)
					extra = wl_token(r->segs[i + 1].key, 0,
					    v) == dv.next;
			}
		}
		if (wl__hmap_max(&st->edge, edge, len) < 0 ||
		    wl__hset_has(&st->node, child, true) < 0 ||
		    wl__hset_has(&st->follow, wl_mix(node, tok0), true) < 0)
			return WL_ENOMEM;
		node = child;
	}
	shared = (shared + extra) / st->block;
	st->blk_hit += shared < nb ? shared : nb;
	return WL_OK;
}

static wl_err
add_blocks(wl_stats *st, const struct wl_request *r)
{
	uint32_t nb = r->prompt_tokens / st->block;
	wl_err rc = WL_OK;

	if (r->tokens != NULL && nb > 0)
		rc = add_token_blocks(st, r, nb);
	else if (r->tokens == NULL)
		rc = add_segment_blocks(st, r, nb);
	if (rc == WL_OK)
		st->blk_total += nb;
	return rc;
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
	if (st->block) {
		wl__hset_release(&st->blocks);
		wl__hset_release(&st->edge);
		wl__hset_release(&st->node);
		wl__hset_release(&st->follow);
	}
	free(st->bins);
	free(st->bh);
	free(st);
}
