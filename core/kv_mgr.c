/*
 * kv_mgr.c -- the handle, the sequences and the dispatch to the modes.
 *
 * What every mode shares lives here: configuration defaults and the checks
 * common to all modes, the sequence array (tokens, computed count, state,
 * request links, one block table per group), the pair buffer and the error
 * message.  Each public call validates the sequence id, clears the pair
 * buffer and the message, then hands over to the mode's kvc_ops; the mode
 * enforces its own preconditions, because the references disagree on them.
 *
 * Cost: a call is O(1) here plus the mode's work.  Memory grows only when a
 * sequence, table or pair list outgrows its capacity (doubling), so steady
 * state allocates nothing.
 */
#include "kv_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kv__errtext[] = {
#define KV__TEXT(name, text) text,
	KV_ERRORS(KV__TEXT)
#undef KV__TEXT
};

const char *
kv_strerror(kv_err e)
{
	if ((unsigned)e >= KV__NERR)
		return "unknown error";
	return kv__errtext[e];
}

static const char *const kvc__modenames[] = {
	"exact", "vllm-v0", "vllm-v1", "deepspeed"
};

int
kvc_mode_parse(const char *s, kvc_mode *out)
{
	for (unsigned i = 0; i < 4; i++)
		if (strcmp(s, kvc__modenames[i]) == 0) {
			*out = (kvc_mode)i;
			return 0;
		}
	return -1;
}

const char *
kvc_mode_name(kvc_mode m)
{
	return (unsigned)m < 4 ? kvc__modenames[m] : "?";
}

void
kvc_config_default(struct kvc_config *c, kvc_mode m)
{
	memset(c, 0, sizeof(*c));
	c->mode = m;
	c->block_size = 16;
	c->max_model_len = 8192;
	c->watermark = m == KVC_VLLM_V0 ? 0.01 : 0.0;
}

static const struct kvc_ops *
kvc__ops_of(kvc_mode m)
{
	switch (m) {
	case KVC_EXACT:
		return &kvc__exact_ops;
	case KVC_VLLM_V0:
		return &kvc__v0_ops;
	case KVC_VLLM_V1:
		return &kvc__v1_ops;
	case KVC_DEEPSPEED:
		return &kvc__ds_ops;
	}
	return NULL;
}

kv_err
kvc__failbuf(char *why, size_t whylen, kv_err e, const char *fmt, ...)
{
	va_list ap;

	if (why != NULL && whylen > 0) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return e;
}

kv_err
kvc__fail_room(kvc *k, long long sum, uint32_t need, uint32_t nfree)
{
	k->room_sum = sum;
	k->room_need = need;
	k->room_free = nfree;
	k->msg[0] = KVC_MSG_LATER;
	k->msg[1] = '\0';
	return KV_ENOSPC;
}

kv_err
kvc__fail(kvc *k, kv_err e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(k->msg, sizeof(k->msg), fmt, ap);
	va_end(ap);
	return e;
}

kv_err
kvc__watermark_check(double watermark, char *why, size_t whylen)
{
	if (!(watermark >= 0.0 && watermark <= 1.0))
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				    "watermark must be in [0, 1]");
	return KV_OK;
}

/* Checks every mode shares, then resolves defaults into *r. */
static kv_err
kvc__config_resolve(const struct kvc_config *c, struct kvc_config *r,
		    char *why, size_t whylen)
{
	const struct kvc_ops *ops = kvc__ops_of(c->mode);

	if (ops == NULL)
		return kvc__failbuf(why, whylen, KV_ECONFIG, "unknown mode");
	*r = *c;
	if (r->block_size == 0)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				    "block_size must be at least 1");
	if (r->gpu_blocks == 0)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				    "gpu_blocks must be at least 1");
	if (r->gpu_blocks > (1u << 30) || r->cpu_blocks > (1u << 30))
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				    "pool too large (at most 2^30 blocks)");
	if (kvc__watermark_check(r->watermark, why, whylen) != KV_OK)
		return KV_ECONFIG;
	if (r->max_model_len == 0)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				    "max_model_len must be at least 1");
	if (r->defer_same_step_state_hits && r->mode != KVC_VLLM_V1)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				    "defer_same_step_state_hits is a vllm-v1 "
				    "setting");
	if (r->ngroups > KVC_MAX_GROUPS)
		return kvc__failbuf(why, whylen, KV_ECONFIG,
				    "at most %d groups", KVC_MAX_GROUPS);
	if (r->ngroups == 0) {
		r->ngroups = 1;
		memset(&r->group[0], 0, sizeof(r->group[0]));
		strcpy(r->group[0].name, "attn");
		r->group[0].kind = KVC_FULL;
	}
	for (uint32_t g = 0; g < r->ngroups; g++) {
		struct kvc_group_config *gc = &r->group[g];

		if (gc->name[0] == '\0' || strcmp(gc->name, "cpu") == 0)
			return kvc__failbuf(why, whylen, KV_ECONFIG,
					    "group %u: bad name", g);
		for (uint32_t h = 0; h < g; h++)
			if (strcmp(r->group[h].name, gc->name) == 0)
				return kvc__failbuf(why, whylen, KV_ECONFIG,
						    "group %s declared twice",
						    gc->name);
		if (gc->block_size == 0)
			gc->block_size = r->block_size;
		if ((gc->kind == KVC_SLIDING) != (gc->window > 0))
			return kvc__failbuf(why, whylen, KV_ECONFIG,
					    "group %s: window is required for, "
					    "and only for, kind=sliding",
					    gc->name);
	}
	if (ops->check_config != NULL)
		return ops->check_config(r, why, whylen);
	return KV_OK;
}

kvc *
kvc_new(const struct kvc_config *c, kv_err *err, char *why, size_t whylen)
{
	kvc *k;
	kv_err e;

	if (why != NULL && whylen > 0)
		why[0] = '\0';
	k = calloc(1, sizeof(*k));
	if (k == NULL) {
		e = KV_ENOMEM;
		goto out;
	}
	e = kvc__config_resolve(c, &k->cfg, why, whylen);
	if (e != KV_OK)
		goto out_free;
	k->ops = kvc__ops_of(k->cfg.mode);
	e = k->ops->init(k);
	if (e != KV_OK) {
		kvc__failbuf(why, whylen, e, "%s", k->msg[0] ? k->msg :
			     kv_strerror(e));
		goto out_free;
	}
	if (err != NULL)
		*err = KV_OK;
	return k;
out_free:
	free(k);
	k = NULL;
out:
	if (err != NULL)
		*err = e;
	return k;
}

static void
kvc__seq_release(struct kvc_seq *q)
{
	free(q->tok);
	for (uint32_t g = 0; g < KVC_MAX_GROUPS; g++) {
		free(q->tab[g].id);
		free(q->tab[g].aux);
	}
}

void
kvc_free(kvc *k)
{
	if (k == NULL)
		return;
	if (k->ops != NULL && k->ms != NULL)
		k->ops->release(k);
	for (uint32_t i = 0; i < k->nseq; i++)
		kvc__seq_release(&k->seq[i]);
	for (uint32_t i = 0; i < k->ntabpool; i++) {
		free(k->tabpool[i].id);
		free(k->tabpool[i].aux);
	}
	free(k->tabpool);
	free(k->seq);
	free(k->spare);
	free(k->pairs);
	free(k);
}

static void *
kvc__dup(const void *p, size_t n)
{
	void *d;

	if (n == 0)
		return NULL;
	d = malloc(n);
	if (d != NULL)
		memcpy(d, p, n);
	return d;
}

static kv_err
kvc__seq_copy(struct kvc_seq *d, const struct kvc_seq *s)
{
	*d = *s;
	d->tok = NULL;
	for (uint32_t g = 0; g < KVC_MAX_GROUPS; g++)
		d->tab[g].id = NULL, d->tab[g].aux = NULL;
	d->tok = kvc__dup(s->tok, s->captok * sizeof(*s->tok));
	if (s->captok && d->tok == NULL)
		return KV_ENOMEM;
	for (uint32_t g = 0; g < KVC_MAX_GROUPS; g++) {
		const struct kvc_tab *t = &s->tab[g];

		d->tab[g].id = kvc__dup(t->id, t->cap * sizeof(*t->id));
		d->tab[g].aux = kvc__dup(t->aux, t->cap * sizeof(*t->aux));
		if (t->cap && (d->tab[g].id == NULL || d->tab[g].aux == NULL))
			return KV_ENOMEM;
	}
	return KV_OK;
}

kvc *
kvc_clone(const kvc *k)
{
	kvc *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return NULL;
	d->cfg = k->cfg;
	d->ops = k->ops;
	d->now = k->now;
	d->seq = calloc(k->capseq ? k->capseq : 1, sizeof(*d->seq));
	if (d->seq == NULL)
		goto fail;
	d->capseq = k->capseq;
	for (uint32_t i = 0; i < k->nseq; i++) {
		d->nseq = i + 1;
		if (kvc__seq_copy(&d->seq[i], &k->seq[i]) != KV_OK)
			goto fail;
	}
	if (k->nspare > 0) {
		d->spare = kvc__dup(k->spare, k->nspare * sizeof(*k->spare));
		if (d->spare == NULL)
			goto fail;
		d->nspare = d->capspare = k->nspare;
	}
	if (k->ops->clone(d, k) != KV_OK)
		goto fail;
	return d;
fail:
	kvc_free(d);
	return NULL;
}

const struct kvc_config *
kvc_config_of(const kvc *k)
{
	return &k->cfg;
}

uint32_t
kvc_ngroups(const kvc *k)
{
	return k->cfg.ngroups;
}

const char *
kvc_group_name(const kvc *k, uint32_t g)
{
	return g < k->cfg.ngroups ? k->cfg.group[g].name : NULL;
}

const char *
kvc_errmsg(const kvc *k)
{
	if (k->msg[0] == KVC_MSG_LATER) {	/* kvc__fail_room's, now */
		kvc *w = (kvc *)(uintptr_t)k;

		snprintf(w->msg, sizeof(w->msg), "needs %lld blocks for %u "
			 "tokens, %u free", k->room_sum, k->room_need,
			 k->room_free);
	}
	return k->msg;
}

void
kvc_set_time(kvc *k, int64_t t)
{
	k->now = t;
}

void
kvc_step_begin(kvc *k)
{
	if (k->ops->step_begin != NULL)
		k->ops->step_begin(k);
}

/* ---- growable arrays --------------------------------------------- */

/* The pool's bounds: the tables of a busy engine's running requests */
#define KVC_TABPOOL 256
#define KVC_TABPOOL_BYTES ((size_t)4 << 20)

static size_t
kvc__tab_bytes(const struct kvc_tab *t)
{
	return (size_t)t->cap * (sizeof(*t->id) + sizeof(*t->aux));
}

/* Released table t's room into the pool, or freed where it is full. */
static void
kvc__tab_pool(kvc *k, const struct kvc_tab *t)
{
	if (t->cap == 0)
		return;
	if (k->tabpool == NULL)
		k->tabpool = malloc(KVC_TABPOOL * sizeof(*k->tabpool));
	if (k->tabpool == NULL || k->ntabpool == KVC_TABPOOL ||
	    k->tabpool_bytes + kvc__tab_bytes(t) > KVC_TABPOOL_BYTES) {
		free(t->id);
		free(t->aux);
		return;
	}
	k->tabpool[k->ntabpool] = *t;
	k->tabpool[k->ntabpool++].n = 0;
	k->tabpool_bytes += kvc__tab_bytes(t);
}

/* Empty table t with no room takes a pooled one's (a released
 * sequence's): each request's table does not grow from nothing again. */
static void
kvc__tab_adopt(kvc *k, struct kvc_tab *t)
{
	if (t->cap != 0 || k->ntabpool == 0)	/* no room: n = 0 */
		return;
	*t = k->tabpool[--k->ntabpool];
	k->tabpool_bytes -= kvc__tab_bytes(t);
}

kv_err
kvc__tab_reserve(kvc *k, struct kvc_tab *t, uint32_t n)
{
	uint32_t cap;
	int32_t *id;
	uint64_t *aux;

	if (n <= t->cap)
		return KV_OK;
	kvc__tab_adopt(k, t);
	if (n <= t->cap)
		return KV_OK;
	cap = t->cap ? t->cap : 4;
	while (cap < n)
		cap *= 2;
	id = realloc(t->id, cap * sizeof(*id));
	if (id == NULL)
		return KV_ENOMEM;
	t->id = id;
	aux = realloc(t->aux, cap * sizeof(*aux));
	if (aux == NULL)
		return KV_ENOMEM;
	t->aux = aux;
	t->cap = cap;
	return KV_OK;
}

kv_err
kvc__tok_reserve(struct kvc_seq *q, uint32_t n)
{
	uint32_t cap;
	uint32_t *tok;

	if (n <= q->captok)
		return KV_OK;
	cap = q->captok ? q->captok : 16;
	while (cap < n)
		cap *= 2;
	tok = realloc(q->tok, cap * sizeof(*tok));
	if (tok == NULL)
		return KV_ENOMEM;
	q->tok = tok;
	q->captok = cap;
	return KV_OK;
}

kv_err
kvc__tok_push_ids(struct kvc_seq *q, const uint32_t *tok, size_t n)
{
	kv_err e;

	if (n == 0)
		return KV_OK;	/* kvc_append_slots() passes no tokens */
	if (q->ntok + n > q->captok &&
	    (e = kvc__tok_reserve(q, q->ntok + (uint32_t)n)) != KV_OK)
		return e;
	if (n == 1)
		q->tok[q->ntok] = tok[0];	/* a decode step: no memcpy */
	else
		memcpy(q->tok + q->ntok, tok, n * sizeof(*tok));
	q->ntok += (uint32_t)n;
	return KV_OK;
}

kv_err
kvc__pairs_reserve(kvc *k, uint32_t n)
{
	uint32_t cap;
	struct kvc_pair *p;

	if (n <= k->cappairs)
		return KV_OK;
	cap = k->cappairs ? k->cappairs : 16;
	while (cap < n)
		cap *= 2;
	p = realloc(k->pairs, cap * sizeof(*p));
	if (p == NULL)
		return KV_ENOMEM;
	k->pairs = p;
	k->cappairs = cap;
	return KV_OK;
}

kv_err
kvc__pair_push(kvc *k, int32_t src, int32_t dst)
{
	kv_err e = kvc__pairs_reserve(k, k->npairs + 1);

	if (e != KV_OK)
		return e;
	k->pairs[k->npairs].src = src;
	k->pairs[k->npairs].dst = dst;
	k->npairs++;
	return KV_OK;
}

const struct kvc_pair *
kvc_pairs(const kvc *k, size_t *n)
{
	*n = k->npairs;
	return k->pairs;
}

kv_err
kvc__seq_alloc(kvc *k, int32_t *out)
{
	struct kvc_seq *q;

	if (k->nseq >= INT32_MAX)
		return kvc__fail(k, KV_ENOMEM, "too many sequences");
	if (k->nseq == k->capseq) {
		uint32_t cap = k->capseq ? 2 * k->capseq : 16;
		struct kvc_seq *s = realloc(k->seq, cap * sizeof(*s));

		if (s == NULL)
			return kvc__fail(k, KV_ENOMEM, "out of memory");
		k->seq = s;
		k->capseq = cap;
	}
	q = &k->seq[k->nseq];
	memset(q, 0, sizeof(*q));
	q->req = (int32_t)k->nseq;
	q->next = -1;
	q->memo = -1;
	q->state = KVC_WAITING;
	q->prefill = 1;
	*out = (int32_t)k->nseq++;
	return KV_OK;
}

/* ---- sequences ---------------------------------------------------- */

static kv_err kvc__seq_new(kvc *k, const uint32_t *tok, uint64_t key,
			   size_t n, int32_t *out);

kv_err
kvc_seq_new(kvc *k, const uint32_t *tok, size_t n, int32_t *out)
{
	k->msg[0] = '\0';
	k->npairs = 0;
	if (n == 0 || tok == NULL)
		return kvc__fail(k, KV_EINVAL, "a sequence needs tokens");
	return kvc__seq_new(k, tok, 0, n, out);
}

kv_err
kvc_seq_new_keyed(kvc *k, uint64_t key, size_t n, int32_t *out)
{
	k->msg[0] = '\0';
	k->npairs = 0;
	if (k->cfg.mode != KVC_VLLM_V1)
		return kvc__fail(k, KV_ENOTSUP, "keyed sequences need mode "
				 "vllm-v1");
	if (n == 0 || key == 0)
		return kvc__fail(k, KV_EINVAL, "a keyed sequence needs tokens "
				 "and a key other than 0");
	return kvc__seq_new(k, NULL, key, n, out);
}

static kv_err
kvc__seq_new(kvc *k, const uint32_t *tok, uint64_t key, size_t n,
	     int32_t *out)
{
	struct kvc_seq *q;
	int32_t s;
	kv_err e;

	if ((k->cfg.mode == KVC_VLLM_V1 || k->cfg.mode == KVC_DEEPSPEED) &&
	    n > k->cfg.max_model_len)
		return kvc__fail(k, KV_EINVAL,
				 "sequence of %zu tokens is longer than "
				 "max_model_len %u", n, k->cfg.max_model_len);
	if (k->nspare > 0) {
		/* a released slot: DEAD, no memory, detached (kvc_seq_release) */
		s = k->spare[--k->nspare];
		q = &k->seq[s];
		memset(q, 0, sizeof(*q));
		q->req = s;
		q->next = -1;
		q->memo = -1;
		q->state = KVC_WAITING;
		q->prefill = 1;
	} else {
		e = kvc__seq_alloc(k, &s);
		if (e != KV_OK)
			return e;
		q = &k->seq[s];
	}
	q->key = key;
	e = kvc__tok_push(q, tok, n);
	if (e != KV_OK) {
		free(q->tok);
		q->tok = NULL;
		if ((uint32_t)s + 1 == k->nseq) {
			k->nseq--;
		} else {
			q->state = KVC_DEAD;	/* back to the spare slots */
			k->spare[k->nspare++] = s;
		}
		return kvc__fail(k, e, "out of memory");
	}
	*out = s;
	return KV_OK;
}

static bool
kvc__valid(const kvc *k, int32_t s)
{
	return s >= 0 && (uint32_t)s < k->nseq;
}

kvc_state
kvc_seq_state(const kvc *k, int32_t s)
{
	if (!kvc__valid(k, s))
		return KVC_DEAD;
	return (kvc_state)k->seq[s].state;
}

size_t
kvc_seq_len(const kvc *k, int32_t s)
{
	return kvc__valid(k, s) ? k->seq[s].ntok : 0;
}

const uint32_t *
kvc_seq_tokens(const kvc *k, int32_t s, size_t *n)
{
	if (!kvc__valid(k, s)) {
		*n = 0;
		return NULL;
	}
	*n = k->seq[s].ntok;
	return k->seq[s].tok;
}

size_t
kvc_seq_computed(const kvc *k, int32_t s)
{
	return kvc__valid(k, s) ? k->seq[s].ncomp : 0;
}

int32_t
kvc_seq_request(const kvc *k, int32_t s)
{
	return kvc__valid(k, s) ? k->seq[s].req : -1;
}

uint32_t
kvc_nseqs(const kvc *k)
{
	return k->nseq;
}

/* Common prologue of every operation on a sequence (kv_int.h). */
kv_err
kvc__enter(kvc *k, int32_t s)
{
	k->msg[0] = '\0';
	k->npairs = 0;
	if (!kvc__valid(k, s))
		return kvc__fail(k, KV_ENOENT, "no such sequence");
	if (k->seq[s].state == KVC_DEAD)
		return kvc__fail(k, KV_ENOENT, "sequence is dead (freed)");
	return KV_OK;
}

#define KVC__OP(call)                                                       \
	do {                                                                \
		kv_err e_ = kvc__enter(k, s);                               \
		if (e_ != KV_OK)                                            \
			return e_;                                          \
		return call;                                                \
	} while (0)

kv_err
kvc_can_allocate(kvc *k, int32_t s, uint32_t lookahead, kvc_verdict *out)
{
	KVC__OP(k->ops->can_allocate(k, s, lookahead, out));
}

kv_err
kvc_allocate(kvc *k, int32_t s, uint32_t n)
{
	KVC__OP(k->ops->allocate(k, s, n));
}

kv_err
kvc_append(kvc *k, int32_t s, const uint32_t *tok, size_t ntok,
	   uint32_t lookahead, bool has_lookahead)
{
	if (ntok == 0 || tok == NULL) {
		k->msg[0] = '\0';
		return kvc__fail(k, KV_EINVAL, "append needs tokens");
	}
	KVC__OP(k->ops->append(k, s, tok, ntok, lookahead, has_lookahead));
}

kv_err
kvc_add_tokens(kvc *k, int32_t s, const uint32_t *tok, size_t ntok)
{
	struct kvc_seq *q;
	kv_err e;

	if (ntok == 0 || tok == NULL) {
		k->msg[0] = '\0';
		return kvc__fail(k, KV_EINVAL, "add_tokens needs tokens");
	}
	e = kvc__enter(k, s);
	if (e != KV_OK)
		return e;
	q = &k->seq[s];
	if (q->state != KVC_RUNNING)
		return k->ops->append(k, s, tok, ntok, 0, false);
	if (k->ops->add_tokens != NULL)
		return k->ops->add_tokens(k, s, tok, ntok);
	if (k->cfg.mode != KVC_VLLM_V0 &&
	    q->ntok + ntok > k->cfg.max_model_len)
		return kvc__fail(k, KV_EINVAL, "%zu tokens is more than "
				 "max_model_len %u", q->ntok + ntok,
				 k->cfg.max_model_len);
	if (kvc__tok_push(q, tok, ntok) != KV_OK)
		return kvc__fail(k, KV_ENOMEM, "out of memory");
	return KV_OK;
}

kv_err
kvc_seq_release(kvc *k, int32_t s)
{
	kv_err e = kvc__enter(k, s);
	int32_t t;

	if (e != KV_OK)
		return e;
	for (t = k->seq[s].req; t >= 0; t = k->seq[t].next) {
		const struct kvc_seq *q = &k->seq[t];

		if (q->state != KVC_DEAD && q->state != KVC_WAITING)
			return kvc__fail(k, KV_ESTATE, "release of a request "
					 "that holds blocks");
		for (uint32_t g = 0; g < k->cfg.ngroups; g++)
			if (q->tab[g].n != 0)
				return kvc__fail(k, KV_ESTATE, "release of a "
						 "request that holds blocks");
	}
	{
		uint32_t n = 0;

		for (t = k->seq[s].req; t >= 0; t = k->seq[t].next)
			n++;
		if (k->nspare + n > k->capspare) {
			uint32_t cap = k->capspare ? k->capspare : 64;
			int32_t *p;

			while (cap < k->nspare + n)
				cap *= 2;
			p = realloc(k->spare, cap * sizeof(*p));
			if (p == NULL)
				return kvc__fail(k, KV_ENOMEM, "out of memory");
			k->spare = p;
			k->capspare = cap;
		}
	}
	for (t = k->seq[s].req; t >= 0;) {
		struct kvc_seq *q = &k->seq[t];
		int32_t next = q->next;

		if (k->ops->seq_release != NULL)
			k->ops->seq_release(k, t);
		free(q->tok);
		q->tok = NULL;
		q->ntok = q->captok = q->ncomp = 0;
		for (uint32_t g = 0; g < KVC_MAX_GROUPS; g++) {
			kvc__tab_pool(k, &q->tab[g]);
			memset(&q->tab[g], 0, sizeof(q->tab[g]));
		}
		q->state = KVC_DEAD;
		q->req = t;		/* detached: the slot stands alone */
		q->next = -1;
		k->spare[k->nspare++] = t;
		t = next;
	}
	return KV_OK;
}

kv_err
kvc_append_slots(kvc *k, int32_t s, uint32_t lookahead)
{
	KVC__OP(k->ops->append(k, s, NULL, 0, lookahead, lookahead > 0));
}

kv_err
kvc_can_append(kvc *k, int32_t s, uint32_t n, bool has_n, uint32_t lookahead,
	       bool *out)
{
	KVC__OP(k->ops->can_append(k, s, n, has_n, lookahead, out));
}

kv_err
kvc_computed(kvc *k, int32_t s, uint32_t n, bool has_n)
{
	KVC__OP(k->ops->computed(k, s, n, has_n));
}

kv_err
kvc_fork(kvc *k, int32_t s, int32_t *child)
{
	uint32_t before;
	int32_t c, last;
	kv_err e = kvc__enter(k, s);

	if (e != KV_OK)
		return e;
	if (k->ops->fork == NULL)
		return kvc__fail(k, KV_ENOTSUP, "fork is not supported in "
				 "mode %s", k->ops->name);
	before = k->nseq;
	e = kvc__seq_alloc(k, &c);
	if (e != KV_OK)
		return e;
	k->seq[c].req = k->seq[s].req;
	e = k->ops->fork(k, s, c);
	if (e != KV_OK) {
		kvc__seq_release(&k->seq[c]);
		k->nseq = before;
		return e;
	}
	/* Link the child last in the request's creation order. */
	for (last = k->seq[c].req; k->seq[last].next >= 0;
	     last = k->seq[last].next)
		;
	k->seq[last].next = c;
	*child = c;
	return KV_OK;
}

kv_err
kvc_can_swap_out(kvc *k, int32_t s, bool *out)
{
	KVC__OP(k->ops->can_swap_out ? k->ops->can_swap_out(k, s, out) :
		kvc__fail(k, KV_ENOTSUP, "no swap in mode %s", k->ops->name));
}

kv_err
kvc_swap_out(kvc *k, int32_t s)
{
	KVC__OP(k->ops->swap_out ? k->ops->swap_out(k, s) :
		kvc__fail(k, KV_ENOTSUP, "no swap in mode %s", k->ops->name));
}

kv_err
kvc_can_swap_in(kvc *k, int32_t s, uint32_t lookahead, kvc_verdict *out)
{
	KVC__OP(k->ops->can_swap_in ? k->ops->can_swap_in(k, s, lookahead, out)
		: kvc__fail(k, KV_ENOTSUP, "no swap in mode %s",
			    k->ops->name));
}

kv_err
kvc_swap_in(kvc *k, int32_t s, uint32_t lookahead)
{
	KVC__OP(k->ops->swap_in ? k->ops->swap_in(k, s, lookahead) :
		kvc__fail(k, KV_ENOTSUP, "no swap in mode %s", k->ops->name));
}

kv_err
kvc_free_seq(kvc *k, int32_t s)
{
	KVC__OP(k->ops->free_seq(k, s));
}

kv_err
kvc__free_final(kvc *k, int32_t s)
{
	kv_err e;

	k->final = true;
	e = kvc_free_seq(k, s);
	k->final = false;
	return e == KV_OK ? kvc_seq_release(k, s) : e;
}

kv_err
kvc_cached(kvc *k, int32_t s, size_t *tokens)
{
	KVC__OP(k->ops->cached(k, s, tokens));
}

kv_err
kvc_blocks_needed(kvc *k, int32_t s, uint32_t n, uint32_t lookahead,
		  uint32_t need[KVC_MAX_GROUPS])
{
	memset(need, 0, KVC_MAX_GROUPS * sizeof(*need));
	KVC__OP(k->ops->blocks_needed(k, s, n, lookahead, need));
}

const int32_t *
kvc_table(const kvc *k, int32_t s, uint32_t g, size_t *n)
{
	if (!kvc__valid(k, s) || g >= k->cfg.ngroups) {
		*n = 0;
		return NULL;
	}
	*n = k->seq[s].tab[g].n;
	return k->seq[s].tab[g].id;
}

uint32_t
kvc_free_blocks(const kvc *k, uint32_t g)
{
	return g < k->cfg.ngroups ? k->ops->free_blocks(k, g) : 0;
}

kv_err
kvc_block_state(kvc *k, bool cpu, int32_t id, struct kvc_block_state *out)
{
	uint32_t n = cpu ? k->cfg.cpu_blocks : k->cfg.gpu_blocks;

	k->msg[0] = '\0';
	if (k->ops->block_state == NULL)
		return kvc__fail(k, KV_ENOTSUP, "block state is not available "
				 "in mode %s", k->ops->name);
	if (id < 0 || (uint32_t)id >= n)
		return kvc__fail(k, KV_EINVAL, "no %s block %d", cpu ? "CPU" :
				 "GPU", (int)id);
	memset(out, 0, sizeof(*out));
	out->id = id;
	out->time = -1;
	return k->ops->block_state(k, cpu, id, out);
}

kv_err
kvc_evictor(kvc *k, struct kvc_block_state *out, size_t cap, size_t *n)
{
	k->msg[0] = '\0';
	*n = 0;
	if (k->ops->evictor == NULL)
		return kvc__fail(k, KV_ENOTSUP, "the evictor is not available "
				 "in mode %s", k->ops->name);
	return k->ops->evictor(k, out, cap, n);
}

uint32_t
kvc_free_cpu(const kvc *k)
{
	return k->ops->free_cpu(k);
}

int
kvc_audit(const kvc *k, char *why, size_t whylen)
{
	if (why != NULL && whylen > 0)
		why[0] = '\0';
	for (uint32_t i = 0; i < k->nseq; i++) {
		const struct kvc_seq *q = &k->seq[i];

		if (q->req < 0 || (uint32_t)q->req >= k->nseq ||
		    k->seq[q->req].req != q->req) {
			kvc__failbuf(why, whylen, KV_EINVAL,
				     "sequence %u: bad request link", i);
			return 100;
		}
		if (q->state != KVC_DEAD &&
		    q->state != k->seq[q->req].state) {
			kvc__failbuf(why, whylen, KV_EINVAL,
				     "sequence %u: state differs from its "
				     "request's", i);
			return 101;
		}
	}
	return k->ops->audit(k, why, whylen);
}
