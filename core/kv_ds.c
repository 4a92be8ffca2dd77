/*
 * kv_ds.c -- mode `deepspeed`: DeepSpeed FastGen's ragged KV state.
 *
 * Reference: deepspeedai/DeepSpeed at edaa7221267, deepspeed/inference/v2/
 * ragged/{blocked_allocator,kv_cache,ragged_manager,sequence_descriptor}.py
 * and the dense model's get_kv_requirements / maybe_allocate_kv
 * (model_implementations/inference_transformer_base.py), under the engine's
 * can_schedule contract in its per-group form.  docs/replay.md §8 (R35-R47)
 * is the normative contract; core-spec §4 describes the reference.
 *
 * Model.  Every KV cache group owns a BlockedAllocator of gpu_blocks ids
 * (struct kv_dsa, kv_ds.h): group ids are independent, reuse is LIFO.  A
 * request is one sequence, WAITING (untracked: no blocks, S = 0) or RUNNING
 * (tracked: 1 <= S <= T and, in every group g, exactly cdiv(S, bs_g)
 * blocks).  S, the descriptor's seen_tokens, lives in kvc_seq.ncomp.
 *
 * Main invariant (seed bug 1, deepspeedai/DeepSpeed issue #5407 / PR #8503):
 * free counts are per group and are never collapsed into a scalar or read
 * from group 0 only.  Every decision checks every group against that
 * group's own held and free counts, and every reservation takes blocks
 * from every group or from none: the reference's per-group allocate calls
 * are not atomic as a sequence (R38), so we check them all first and then
 * take, which gives the same ids as the reference's calls whenever they all
 * succeed.
 *
 * Costs: a reservation is O(groups + blocks taken), a flush O(blocks held),
 * queries O(groups); the audit is O(blocks + sequences).  Nothing is
 * allocated per operation beyond the growth of the sequence's own token and
 * table arrays (kv_mgr.c).
 *
 * Rejected alternative: one shared pool for all groups (vLLM v1's model).
 * FastGen sizes every group's allocator with the same num_blocks and hands
 * out ids per group, and replay output (R45, R46) shows per-group ids.
 */
#include "kv_ds.h"

#include <stdlib.h>
#include <string.h>

/* ---- the per-group BlockedAllocator ----------------------------------- */

kv_err
kv_dsa_init(struct kv_dsa *a, uint32_t nblocks)
{
	kv_err e;

	memset(a, 0, sizeof(*a));
	e = kv_list_init(&a->free, nblocks);
	if (e != KV_OK)
		return e;
	a->stamp = calloc(nblocks ? nblocks : 1, sizeof(*a->stamp));
	if (a->stamp == NULL) {
		kv_list_release(&a->free);
		return KV_ENOMEM;
	}
	for (uint32_t i = 0; i < nblocks; i++)
		kv_list_push_back(&a->free, (int32_t)i);
	a->nblocks = nblocks;
	return KV_OK;
}

void
kv_dsa_release(struct kv_dsa *a)
{
	if (a == NULL)
		return;
	kv_list_release(&a->free);
	free(a->stamp);
	a->stamp = NULL;
	a->nblocks = 0;
	a->epoch = 0;
}

kv_err
kv_dsa_copy(struct kv_dsa *dst, const struct kv_dsa *src)
{
	kv_err e;

	memset(dst, 0, sizeof(*dst));
	e = kv_list_copy(&dst->free, &src->free);
	if (e != KV_OK)
		return e;
	dst->stamp = calloc(src->nblocks ? src->nblocks : 1,
			    sizeof(*dst->stamp));
	if (dst->stamp == NULL) {
		kv_list_release(&dst->free);
		return KV_ENOMEM;
	}
	dst->nblocks = src->nblocks;
	return KV_OK;
}

kv_err
kv_dsa_allocate(struct kv_dsa *a, uint32_t k, int32_t *out)
{
	if (k > kv_dsa_nfree(a))
		return KV_ENOSPC;
	for (uint32_t i = 0; i < k; i++)
		out[i] = kv_list_pop_front(&a->free);
	return KV_OK;
}

void
kv_dsa_mark_begin(struct kv_dsa *a)
{
	if (++a->epoch == 0) {
		memset(a->stamp, 0, a->nblocks * sizeof(*a->stamp));
		a->epoch = 1;
	}
}

bool
kv_dsa_mark(struct kv_dsa *a, int32_t id)
{
	if (a->stamp[id] == a->epoch)
		return true;
	a->stamp[id] = a->epoch;
	return false;
}

static kv_err
kv_dsa__fault(struct kv_dsa_fault *f, enum kv_dsa_fault_kind kind,
	      size_t index, int32_t id)
{
	if (f != NULL) {
		f->kind = kind;
		f->index = index;
		f->id = id;
	}
	return kind == KV_DSA_OK ? KV_OK : KV_EINVAL;
}

kv_err
kv_dsa_free_check(struct kv_dsa *a, const int32_t *ids, size_t n,
		  struct kv_dsa_fault *f)
{
	kv_dsa_mark_begin(a);
	for (size_t i = 0; i < n; i++) {
		int32_t id = ids[i];

		if (id < 0 || (uint32_t)id >= a->nblocks)
			return kv_dsa__fault(f, KV_DSA_RANGE, i, id);
		if (kv_list_has(&a->free, id))
			return kv_dsa__fault(f, KV_DSA_FREE, i, id);
		if (kv_dsa_mark(a, id))
			return kv_dsa__fault(f, KV_DSA_REPEAT, i, id);
	}
	return kv_dsa__fault(f, KV_DSA_OK, 0, 0);
}

kv_err
kv_dsa_free(struct kv_dsa *a, const int32_t *ids, size_t n,
	    struct kv_dsa_fault *f)
{
	kv_err e = kv_dsa_free_check(a, ids, n, f);

	if (e != KV_OK)
		return e;
	for (size_t i = 0; i < n; i++)
		kv_list_push_front(&a->free, ids[i]);
	return KV_OK;
}

int
kv_dsa_check(const struct kv_dsa *a)
{
	if (a->free.cap != a->nblocks || kv_list_check(&a->free) != 0)
		return 1;
	if (a->free.n > a->nblocks)
		return 2;
	return 0;
}

void
kv_ds_kv_requirements(uint64_t seen, uint64_t new_tokens, uint64_t held,
		      uint32_t bs, uint64_t max_new_blocks, uint64_t *tokens,
		      int64_t *blocks)
{
	int64_t req = (int64_t)kvc_cdiv(seen + new_tokens, bs) - (int64_t)held;

	if (req <= (int64_t)max_new_blocks) {
		*tokens = new_tokens;
		*blocks = req;
		return;
	}
	*tokens = (max_new_blocks + held) * bs - seen;
	*blocks = (int64_t)max_new_blocks;
}

/* ---- mode state ------------------------------------------------------- */

static struct kvc_ds *
kvc__ds(const kvc *k)
{
	return k->ms;
}

static void
kvc__ds_free_state(struct kvc_ds *ds, uint32_t ngroups)
{
	if (ds == NULL)
		return;
	for (uint32_t g = 0; g < ngroups; g++)
		kv_dsa_release(&ds->grp[g]);
	free(ds);
}

static kv_err
kvc__ds_init(kvc *k)
{
	struct kvc_ds *ds = calloc(1, sizeof(*ds));

	if (ds == NULL)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	for (uint32_t g = 0; g < k->cfg.ngroups; g++)
		if (kv_dsa_init(&ds->grp[g], k->cfg.gpu_blocks) != KV_OK) {
			kvc__ds_free_state(ds, g);
			return kvc__fail(k, KV_ENOMEM, "out of memory");
		}
	k->ms = ds;
	return KV_OK;
}

static void
kvc__ds_release(kvc *k)
{
	kvc__ds_free_state(kvc__ds(k), k->cfg.ngroups);
	k->ms = NULL;
}

static kv_err
kvc__ds_clone(kvc *dst, const kvc *src)
{
	const struct kvc_ds *s = kvc__ds(src);
	struct kvc_ds *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return KV_ENOMEM;
	for (uint32_t g = 0; g < src->cfg.ngroups; g++)
		if (kv_dsa_copy(&d->grp[g], &s->grp[g]) != KV_OK) {
			kvc__ds_free_state(d, g);
			return KV_ENOMEM;
		}
	dst->ms = d;
	return KV_OK;
}

/* R35.  Called with the resolved configuration (ngroups >= 1). */
static kv_err
kvc__ds_check_config(const struct kvc_config *c, char *why, size_t whylen)
{
	for (uint32_t g = 0; g < c->ngroups; g++)
		if (c->group[g].kind != KVC_FULL)
			return kvc__failbuf(why, whylen, KV_ECONFIG,
					    "group %s: mode deepspeed supports "
					    "kind=full only", c->group[g].name);
	if (c->cpu_blocks != 0)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				    "mode deepspeed has no CPU pool "
				    "(cpu_blocks must be 0)");
	if (c->watermark != 0.0)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				    "mode deepspeed has no watermark "
				    "(watermark must be 0)");
	if (c->prefix_caching)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				    "mode deepspeed has no prefix caching");
	if (c->reuse == KVC_REUSE_FIFO_LRU)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				    "mode deepspeed reuses blocks LIFO only");
	return KV_OK;
}

/* ---- reservations (R38) ----------------------------------------------- */

/* Blocks group g must take for the sequence to hold `tokens` (>= 0). */
static uint64_t
kvc__ds_need(const kvc *k, const struct kvc_seq *q, uint32_t g,
	     uint64_t tokens)
{
	uint64_t want = kvc_cdiv(tokens, kvc__bs(k, g));

	return want > q->tab[g].n ? want - q->tab[g].n : 0;
}

/* Does a reservation for `tokens` fit every group now? */
static bool
kvc__ds_fits(const kvc *k, const struct kvc_seq *q, uint64_t tokens,
	     uint32_t *short_group)
{
	const struct kvc_ds *ds = kvc__ds(k);

	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		uint64_t tok;
		int64_t blk;

		/* can_schedule's per-group question, asked of group g. */
		kv_ds_kv_requirements(q->ncomp, tokens - q->ncomp,
				      q->tab[g].n, kvc__bs(k, g),
				      kv_dsa_nfree(&ds->grp[g]), &tok, &blk);
		if (tok != tokens - q->ncomp) {
			if (short_group != NULL)
				*short_group = g;
			return false;
		}
	}
	return true;
}

/*
 * Reserve for `tokens` (R38): every group's missing blocks or none.  The
 * caller has made sure tokens >= S.  KV_ENOSPC or KV_ENOMEM leave the
 * sequence and every allocator unchanged.
 */
static kv_err
kvc__ds_reserve(kvc *k, int32_t s, uint64_t tokens)
{
	struct kvc_ds *ds = kvc__ds(k);
	struct kvc_seq *q = kvc__seq(k, s);
	uint32_t g, bad = 0;

	if (!kvc__ds_fits(k, q, tokens, &bad))
		return kvc__fail(k, KV_ENOSPC, "group %s: %llu blocks needed, "
				 "%u free", k->cfg.group[bad].name,
				 (unsigned long long)kvc__ds_need(k, q, bad,
								  tokens),
				 kv_dsa_nfree(&ds->grp[bad]));
	for (g = 0; g < k->cfg.ngroups; g++) {
		uint64_t want = q->tab[g].n + kvc__ds_need(k, q, g, tokens);

		if (kvc__tab_reserve(k, &q->tab[g], (uint32_t)want) != KV_OK)
			return kvc__fail(k, KV_ENOMEM, "out of memory");
	}
	/* From here on nothing can fail. */
	for (g = 0; g < k->cfg.ngroups; g++) {
		struct kvc_tab *t = &q->tab[g];
		uint32_t need = (uint32_t)kvc__ds_need(k, q, g, tokens);

		if (need == 0)
			continue;	/* the reference makes no call */
		(void)kv_dsa_allocate(&ds->grp[g], need, t->id + t->n);
		for (uint32_t i = 0; i < need; i++)
			t->aux[t->n + i] = 0;
		t->n += need;
	}
	q->ncomp = (uint32_t)tokens;
	return KV_OK;
}

/* ---- operations ------------------------------------------------------- */

static const char *
kvc__ds_statename(const struct kvc_seq *q)
{
	switch (q->state) {
	case KVC_WAITING:
		return "waiting";
	case KVC_RUNNING:
		return "running";
	case KVC_SWAPPED:
		return "swapped";
	default:
		return "dead";
	}
}

static kv_err
kvc__ds_no_lookahead(kvc *k, bool given)
{
	if (given)
		return kvc__fail(k, KV_EINVAL, "mode deepspeed reserves no "
				 "lookahead slots");
	return KV_OK;
}

/* R41: can_schedule([uid], [T]) for an untracked uid, per group. */
static kv_err
kvc__ds_can_allocate(kvc *k, int32_t s, uint32_t L, kvc_verdict *o)
{
	const struct kvc_ds *ds = kvc__ds(k);
	const struct kvc_seq *q = kvc__seq(k, s);
	kv_err e = kvc__ds_no_lookahead(k, L != 0);

	if (e != KV_OK)
		return e;
	if (q->state != KVC_WAITING)
		return kvc__fail(k, KV_ESTATE, "needs a waiting request "
				 "(it is %s)", kvc__ds_statename(q));
	if (kvc__ds_fits(k, q, q->ntok, NULL)) {
		*o = KVC_VERDICT_OK;
		return KV_OK;
	}
	*o = KVC_VERDICT_LATER;
	for (uint32_t g = 0; g < k->cfg.ngroups; g++)
		if (kvc_cdiv(q->ntok, kvc__bs(k, g)) > ds->grp[g].nblocks)
			*o = KVC_VERDICT_NEVER;
	return KV_OK;
}

/* R39. */
static kv_err
kvc__ds_allocate(kvc *k, int32_t s, uint32_t n)
{
	struct kvc_seq *q = kvc__seq(k, s);
	uint64_t rest, tokens;
	kv_err e;

	switch (q->state) {
	case KVC_WAITING:
		rest = q->ntok;
		break;
	case KVC_RUNNING:
		if (q->ncomp >= q->ntok)
			return kvc__fail(k, KV_ESTATE, "every token of the "
					 "sequence was already sent "
					 "(S = T = %u)", q->ntok);
		rest = q->ntok - q->ncomp;
		break;
	default:
		return kvc__fail(k, KV_ESTATE, "the sequence is %s",
				 kvc__ds_statename(q));
	}
	if (n != 0 && n < rest)
		rest = n;
	tokens = (uint64_t)q->ncomp + rest;
	e = kvc__ds_reserve(k, s, tokens);
	if (e != KV_OK)
		return e;
	q->state = KVC_RUNNING;
	return KV_OK;
}

/* R40. */
static kv_err
kvc__ds_append(kvc *k, int32_t s, const uint32_t *tok, size_t ntok,
	       uint32_t L, bool has_L)
{
	struct kvc_seq *q = kvc__seq(k, s);
	uint64_t T = (uint64_t)q->ntok + ntok;
	kv_err e = kvc__ds_no_lookahead(k, has_L || L != 0);

	if (e != KV_OK)
		return e;
	if (q->state != KVC_WAITING && q->state != KVC_RUNNING)
		return kvc__fail(k, KV_ESTATE, "the sequence is %s",
				 kvc__ds_statename(q));
	if (T > k->cfg.max_model_len)
		return kvc__fail(k, KV_EINVAL, "append makes the sequence "
				 "%llu tokens long, over max_model_len %u",
				 (unsigned long long)T, k->cfg.max_model_len);
	/* Spare token capacity is not state: growing it first keeps the
	 * reservation the last step that can fail. */
	if (kvc__tok_reserve(q, (uint32_t)T) != KV_OK)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	if (q->state == KVC_RUNNING) {
		e = kvc__ds_reserve(k, s, T);
		if (e != KV_OK)
			return e;
	}
	if (ntok > 0)	/* tok may be NULL for an append of no tokens */
		memcpy(q->tok + q->ntok, tok, ntok * sizeof(*tok));
	q->ntok = (uint32_t)T;
	return KV_OK;
}

/* R42: can_schedule([uid], [T + N - S]) with the sequence's held counts. */
static kv_err
kvc__ds_can_append(kvc *k, int32_t s, uint32_t n, bool has_n, uint32_t L,
		   bool *o)
{
	const struct kvc_seq *q = kvc__seq(k, s);
	uint64_t N = has_n ? n : 1;
	kv_err e = kvc__ds_no_lookahead(k, L != 0);

	if (e != KV_OK)
		return e;
	if (N == 0)
		return kvc__fail(k, KV_EINVAL, "n must be at least 1");
	if (q->state != KVC_RUNNING)
		return kvc__fail(k, KV_ESTATE, "needs a running sequence "
				 "(it is %s)", kvc__ds_statename(q));
	if (q->ntok + N > k->cfg.max_model_len)
		return kvc__fail(k, KV_EINVAL, "%u + %llu tokens exceed "
				 "max_model_len %u", q->ntok,
				 (unsigned long long)N, k->cfg.max_model_len);
	*o = kvc__ds_fits(k, q, q->ntok + N, NULL);
	return KV_OK;
}

/* R43: S advances when tokens are sent, not here. */
static kv_err
kvc__ds_computed(kvc *k, int32_t s, uint32_t n, bool has_n)
{
	const struct kvc_seq *q = kvc__seq(k, s);

	(void)n;
	(void)has_n;
	if (q->state != KVC_RUNNING)
		return kvc__fail(k, KV_ESTATE, "needs a running sequence "
				 "(it is %s)", kvc__ds_statename(q));
	return KV_OK;
}

/*
 * R44: flush_sequence.  Every group's table is validated as a whole before
 * any group is freed, so a corrupt table (which no operation can produce)
 * fails the flush with nothing changed instead of freeing part of it.
 */
static kv_err
kvc__ds_free_seq(kvc *k, int32_t s)
{
	struct kvc_ds *ds = kvc__ds(k);
	struct kvc_seq *q = kvc__seq(k, s);
	struct kv_dsa_fault f;
	uint32_t g;

	if (q->state == KVC_WAITING)
		return kvc__fail(k, KV_ENOSPC, "the request is waiting "
				 "(nothing to free)");
	if (q->state != KVC_RUNNING)
		return kvc__fail(k, KV_ESTATE, "the sequence is %s",
				 kvc__ds_statename(q));
	for (g = 0; g < k->cfg.ngroups; g++)
		if (kv_dsa_free_check(&ds->grp[g], q->tab[g].id, q->tab[g].n,
				      &f) != KV_OK)
			return kvc__fail(k, KV_EREF, "group %s: block %d at "
					 "slot %zu cannot be freed (%s)",
					 k->cfg.group[g].name, f.id, f.index,
					 f.kind == KV_DSA_RANGE ? "out of range"
					 : f.kind == KV_DSA_FREE ?
					 "already free" : "repeated");
	for (g = 0; g < k->cfg.ngroups; g++) {
		kv_dsa_free(&ds->grp[g], q->tab[g].id, q->tab[g].n, NULL);
		q->tab[g].n = 0;
	}
	q->ncomp = 0;
	q->state = KVC_WAITING;
	return KV_OK;
}

/* R46: no prefix caching. */
static kv_err
kvc__ds_cached(kvc *k, int32_t s, size_t *tokens)
{
	(void)k;
	(void)s;
	*tokens = 0;
	return KV_OK;
}

/*
 * Per-group blocks an action would take now: a WAITING request's admission
 * of all T tokens (n is ignored: kvcore.h), or n more tokens
 * of a RUNNING sequence (its unsent tokens included, as the next forward
 * carries them).
 */
static kv_err
kvc__ds_blocks_needed(kvc *k, int32_t s, uint32_t n, uint32_t L,
		      uint32_t need[KVC_MAX_GROUPS])
{
	const struct kvc_seq *q = kvc__seq(k, s);
	uint64_t tokens = (uint64_t)q->ntok;
	kv_err e = kvc__ds_no_lookahead(k, L != 0);

	if (e != KV_OK)
		return e;
	if (q->state == KVC_RUNNING)
		tokens += n;
	else if (q->state != KVC_WAITING)
		return kvc__fail(k, KV_ESTATE, "the sequence is %s",
				 kvc__ds_statename(q));
	if (tokens > k->cfg.max_model_len)
		return kvc__fail(k, KV_EINVAL, "%llu tokens exceed "
				 "max_model_len %u",
				 (unsigned long long)tokens,
				 k->cfg.max_model_len);
	for (uint32_t g = 0; g < k->cfg.ngroups; g++)
		need[g] = (uint32_t)kvc__ds_need(k, q, g, tokens);
	return KV_OK;
}

static uint32_t
kvc__ds_free_blocks(const kvc *k, uint32_t g)
{
	return g < k->cfg.ngroups ? kv_dsa_nfree(&kvc__ds(k)->grp[g]) : 0;
}

static uint32_t
kvc__ds_free_cpu(const kvc *k)
{
	(void)k;
	return 0;
}

/*
 * R46, numbered as core-spec §8.3: 1 table references (an id in range,
 * handed out, in one table slot only), 2 free list, 3 used + free = total,
 * 5 tables (held = cdiv(S, bs_g) while RUNNING, none while WAITING).
 * Writes only the allocators' scratch stamps.
 */
static int
kvc__ds_audit(const kvc *k, char *why, size_t whylen)
{
	struct kvc_ds *ds = kvc__ds(k);

	for (uint32_t i = 0; i < k->nseq; i++) {
		const struct kvc_seq *q = &k->seq[i];

		if (q->req != (int32_t)i || q->next != -1) {
			kvc__failbuf(why, whylen, KV_EINVAL, "sequence %u: "
				     "not a one-sequence request", i);
			return 5;
		}
		if (q->ntok > k->cfg.max_model_len) {
			kvc__failbuf(why, whylen, KV_EINVAL, "sequence %u: "
				     "%u tokens over max_model_len", i,
				     q->ntok);
			return 5;
		}
		if (q->state == KVC_WAITING && q->ncomp != 0) {
			kvc__failbuf(why, whylen, KV_EINVAL, "sequence %u: "
				     "waiting with S = %u", i, q->ncomp);
			return 5;
		}
		if (q->state == KVC_RUNNING &&
		    (q->ncomp == 0 || q->ncomp > q->ntok)) {
			kvc__failbuf(why, whylen, KV_EINVAL, "sequence %u: "
				     "running with S = %u, T = %u", i,
				     q->ncomp, q->ntok);
			return 5;
		}
		if (q->state != KVC_WAITING && q->state != KVC_RUNNING &&
		    q->state != KVC_DEAD) {	/* DEAD: kvc_seq_release */
			kvc__failbuf(why, whylen, KV_EINVAL, "sequence %u: "
				     "state %u", i, q->state);
			return 5;
		}
		for (uint32_t g = 0; g < KVC_MAX_GROUPS; g++) {
			uint64_t want = g < k->cfg.ngroups ?
				kvc_cdiv(q->ncomp, kvc__bs(k, g)) : 0;

			if (q->tab[g].n != want) {
				kvc__failbuf(why, whylen, KV_EINVAL,
					     "sequence %u group %u: holds %u "
					     "blocks, S = %u needs %llu", i, g,
					     q->tab[g].n, q->ncomp,
					     (unsigned long long)want);
				return 5;
			}
		}
	}
	for (uint32_t g = 0; g < k->cfg.ngroups; g++) {
		struct kv_dsa *a = &ds->grp[g];
		const char *name = k->cfg.group[g].name;
		uint64_t slots = 0;

		if (a->nblocks != k->cfg.gpu_blocks || kv_dsa_check(a) != 0) {
			kvc__failbuf(why, whylen, KV_EINVAL, "group %s: free "
				     "list broken (%d)", name,
				     kv_dsa_check(a));
			return 2;
		}
		kv_dsa_mark_begin(a);
		for (uint32_t i = 0; i < k->nseq; i++) {
			const struct kvc_tab *t = &k->seq[i].tab[g];

			for (uint32_t j = 0; j < t->n; j++) {
				int32_t id = t->id[j];

				if (!kv_dsa_used(a, id)) {
					kvc__failbuf(why, whylen, KV_EINVAL,
						     "group %s: sequence %u "
						     "holds block %d, which is "
						     "%s", name, i, id,
						     id < 0 || (uint32_t)id >=
						     a->nblocks ? "out of range"
						     : "free");
					return 1;
				}
				if (kv_dsa_mark(a, id)) {
					kvc__failbuf(why, whylen, KV_EINVAL,
						     "group %s: block %d held "
						     "twice", name, id);
					return 1;
				}
				slots++;
			}
		}
		if (slots + kv_dsa_nfree(a) != a->nblocks) {
			kvc__failbuf(why, whylen, KV_EINVAL, "group %s: %llu "
				     "used + %u free != %u blocks", name,
				     (unsigned long long)slots,
				     kv_dsa_nfree(a), a->nblocks);
			return 3;
		}
	}
	return 0;
}

/*
 * fork and the swap operations are left NULL: kv_mgr.c answers KV_ENOTSUP
 * for them (R36; FastGen has neither fork nor KV offload).
 */
const struct kvc_ops kvc__ds_ops = {
	.name = "deepspeed",
	.init = kvc__ds_init,
	.release = kvc__ds_release,
	.clone = kvc__ds_clone,
	.check_config = kvc__ds_check_config,
	.can_allocate = kvc__ds_can_allocate,
	.allocate = kvc__ds_allocate,
	.append = kvc__ds_append,
	.can_append = kvc__ds_can_append,
	.computed = kvc__ds_computed,
	.fork = NULL,
	.can_swap_out = NULL,
	.swap_out = NULL,
	.can_swap_in = NULL,
	.swap_in = NULL,
	.free_seq = kvc__ds_free_seq,
	.cached = kvc__ds_cached,
	.blocks_needed = kvc__ds_blocks_needed,
	.free_blocks = kvc__ds_free_blocks,
	.free_cpu = kvc__ds_free_cpu,
	.audit = kvc__ds_audit,
};
