/*
 * wl_bench.c -- vLLM's benchmark datasets as settings of the generator.
 *
 * `vllm bench serve --dataset-name random|sharegpt|prefix_repetition`
 * describe their requests by a few numbers; each maps onto the generator
 * of wl_gen.c (docs/workloads.md, section 5, "vLLM's benchmark datasets"):
 *
 *   random: prompt and output lengths uniform on
 *     [floor(len * (1 - r)), ceil(len * (1 + r))] (the output's lower
 *     bound at least 1), after one shared prefix of prefix_len tokens;
 *   prefix_repetition: num_prefixes prefixes of prefix_len tokens, each
 *     request one of them (uniformly) and suffix_len tokens of its own,
 *     output_len output tokens;
 *   sharegpt: (prompt, output) pairs of a ShareGPT JSON file, resampled;
 *     kvsim has no tokenizer, so a text's length in tokens is estimated
 *     as ceil(code points / 4), and vLLM's filters are applied to the
 *     estimates.
 *
 * kvsim's requests carry no text, so "random" tokens are the generator's
 * token identities: unique per request unless shared on purpose.
 */
#include "config.h"

#include "workloads/wl_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/ydoc.h"

#define BENCH_LEN_MAX ((int64_t)INT32_MAX)

/* vLLM's is_valid_sequence defaults (benchmarks/datasets.py). */
#define SHAREGPT_MIN_LEN 4
#define SHAREGPT_MAX_PROMPT 1024
#define SHAREGPT_MAX_TOTAL 2048
#define SHAREGPT_CHARS_PER_TOKEN 4

static const char *const ds_names[] = { "none", "random", "sharegpt",
	"prefix_repetition", NULL };

bool
wl__dataset_parse(const char *name, enum wl_dataset_kind *out)
{
	for (int i = 1; ds_names[i] != NULL; i++)
		if (strcmp(name, ds_names[i]) == 0) {
			*out = (enum wl_dataset_kind)i;
			return true;
		}
	return false;
}

const char *
wl__dataset_name(enum wl_dataset_kind k)
{
	return (unsigned)k < 4 ? ds_names[k] : "?";
}

/* vLLM's defaults for the dataset's own flags. */
void
wl__dataset_defaults(struct wl_dataset *ds, enum wl_dataset_kind k)
{
	memset(ds, 0, sizeof(*ds));
	ds->kind = k;
	ds->output_len = 128;
	if (k == WL_DS_RANDOM) {
		ds->input_len = 1024;
	} else if (k == WL_DS_PREFIX_REP) {
		ds->prefix_len = 256;
		ds->suffix_len = 256;
		ds->num_prefixes = 10;
	} else if (k == WL_DS_SHAREGPT) {
		ds->output_len = 0;	/* the reply's own length */
	}
}

static void
set_range(struct wl_dist *d, int64_t lo, int64_t hi)
{
	free(d->values);
	free(d->weights);
	memset(d, 0, sizeof(*d));
	d->s = 1.0;
	d->kind = lo == hi ? WL_DIST_FIXED : WL_DIST_UNIFORM;
	d->value = (double)lo;
	d->min = lo == hi ? 1 : lo;
	d->max = lo == hi ? BENCH_LEN_MAX : hi;
}

static void
set_prefix(struct wl_gen_config *g, uint32_t systems, uint32_t len,
    double zipf_s)
{
	g->systems = len > 0 ? systems : 0;
	set_range(&g->system_len, len > 0 ? len : 256, len > 0 ? len : 256);
	g->system_zipf_s = zipf_s;
	g->system_fraction = 1.0;
}

static wl_err
apply_random(const struct wl_dataset *ds, struct wl_gen_config *g,
    char *why, size_t len)
{
	double r = ds->range_ratio;
	int64_t ilo, ihi, olo, ohi;

	if (!(r >= 0 && r < 1)) {
		snprintf(why, len, "range_ratio must be in [0, 1) (vLLM's "
		    "--random-range-ratio)");
		return WL_ECONFIG;
	}
	ilo = (int64_t)floor((double)ds->input_len * (1 - r));
	ihi = (int64_t)ceil((double)ds->input_len * (1 + r));
	olo = (int64_t)floor((double)ds->output_len * (1 - r));
	ohi = (int64_t)ceil((double)ds->output_len * (1 + r));
	olo = olo < 1 ? 1 : olo;
	ohi = ohi < 1 ? 1 : ohi;
	if (ilo < 1) {
		snprintf(why, len, "input_len %u with range_ratio %g can draw "
		    "%" PRId64 " tokens; each request needs at least one of "
		    "its own", ds->input_len, r, ilo);
		return WL_ECONFIG;
	}
	if (ihi > BENCH_LEN_MAX || ohi > BENCH_LEN_MAX ||
	    ihi + ds->prefix_len > BENCH_LEN_MAX) {
		snprintf(why, len, "lengths of 2^31 tokens or more");
		return WL_ECONFIG;
	}
	set_range(&g->prompt, ilo, ihi);
	set_range(&g->output, olo, ohi);
	set_prefix(g, 1, ds->prefix_len, 1.0);
	return WL_OK;
}

static wl_err
apply_prefix_rep(const struct wl_dataset *ds, struct wl_gen_config *g,
    char *why, size_t len)
{
	if (ds->suffix_len < 1 || ds->output_len < 1 ||
	    ds->num_prefixes < 1) {
		snprintf(why, len, "suffix_len, output_len and num_prefixes "
		    "must be at least 1");
		return WL_ECONFIG;
	}
	if ((int64_t)ds->prefix_len + ds->suffix_len > BENCH_LEN_MAX) {
		snprintf(why, len, "prompts of 2^31 tokens or more");
		return WL_ECONFIG;
	}
	set_range(&g->prompt, ds->suffix_len, ds->suffix_len);
	set_range(&g->output, ds->output_len, ds->output_len);
	/* zipf_s 0: every prefix equally likely */
	set_prefix(g, ds->num_prefixes, ds->prefix_len, 0.0);
	return WL_OK;
}

/*
 * Set g as `ds` describes (the sharegpt file, if any, is already in
 * g->lengths_trace).  WL_ECONFIG with `why` for impossible numbers.
 */
wl_err
wl__dataset_apply(const struct wl_dataset *ds, struct wl_gen_config *g,
    char *why, size_t len)
{
	switch (ds->kind) {
	case WL_DS_RANDOM:
		free(g->lengths_trace);
		g->lengths_trace = NULL;
		g->lengths_sharegpt = false;
		return apply_random(ds, g, why, len);
	case WL_DS_PREFIX_REP:
		free(g->lengths_trace);
		g->lengths_trace = NULL;
		g->lengths_sharegpt = false;
		return apply_prefix_rep(ds, g, why, len);
	case WL_DS_SHAREGPT:
		/* the path may come later (--set one key at a time);
		 * wl_open refuses a sharegpt dataset without one */
		g->lengths_sharegpt = true;
		g->lengths_output = ds->output_len;
		set_prefix(g, 0, 0, 1.0);
		return WL_OK;
	default:
		return WL_OK;
	}
}

/* A text's length in tokens: ceil(code points / 4), at least 1. */
uint64_t
wl__text_tokens(const char *s)
{
	uint64_t cp = 0;

	for (; *s != '\0'; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			cp++;
	cp = (cp + SHAREGPT_CHARS_PER_TOKEN - 1) / SHAREGPT_CHARS_PER_TOKEN;
	return cp;
}

/* vLLM's is_valid_sequence with its defaults. */
static bool
sharegpt_valid(uint64_t prompt, uint64_t output, bool fixed_output)
{
	if (prompt < SHAREGPT_MIN_LEN)
		return false;
	if (!fixed_output && output < SHAREGPT_MIN_LEN)
		return false;
	return prompt <= SHAREGPT_MAX_PROMPT &&
	    prompt + output <= SHAREGPT_MAX_TOTAL;
}

static wl_err
nfail(struct wl_error *err, const char *path, const struct yd_node *n,
    const char *what)
{
	wl__error_set(err, path, n != NULL ? n->line : 0,
	    n != NULL ? (uint32_t)n->col : 0, "%s", what);
	return WL_EPARSE;
}

/* The text of turn `i` of a conversation, or NULL after an error. */
static const char *
turn_text(const struct yd_node *conv, size_t i, const char *path,
    struct wl_error *err)
{
	const struct yd_node *t = conv->kid[i], *v;

	if (t->type != YD_MAP) {
		nfail(err, path, t, "a turn must be an object with \"from\" "
		    "and \"value\"");
		return NULL;
	}
	v = yd_get(t, "value");
	if (v == NULL || v->type != YD_SCALAR) {
		nfail(err, path, t, "a turn needs \"value\", a string");
		return NULL;
	}
	return v->str;
}

/* One entry: a pair appended when it passes the filters. */
static wl_err
sharegpt_entry(const struct yd_node *e, const char *path,
    uint32_t output_len, uint32_t (**pairs)[2], size_t *n, size_t *cap,
    struct wl_error *err)
{
	const struct yd_node *conv;
	const char *p, *o;
	uint64_t pl, ol;

	if (e->type != YD_MAP)
		return nfail(err, path, e, "an entry must be an object with "
		    "\"conversations\"");
	conv = yd_get(e, "conversations");
	if (conv == NULL || conv->type != YD_SEQ)
		return nfail(err, path, e, "an entry needs \"conversations\", "
		    "a list of turns");
	if (conv->n < 2)
		return WL_OK;	/* vLLM keeps conversations of 2+ turns */
	if ((p = turn_text(conv, 0, path, err)) == NULL ||
	    (o = turn_text(conv, 1, path, err)) == NULL)
		return WL_EPARSE;
	pl = wl__text_tokens(p);
	ol = output_len > 0 ? output_len : wl__text_tokens(o);
	if (!sharegpt_valid(pl, ol, output_len > 0))
		return WL_OK;
	if (!wl__grow((void **)pairs, cap, *n + 1, sizeof(**pairs))) {
		wl__error_set(err, path, 0, 0, "out of memory");
		return WL_ENOMEM;
	}
	(*pairs)[*n][0] = (uint32_t)pl;
	(*pairs)[*n][1] = (uint32_t)ol;
	(*n)++;
	return WL_OK;
}

/*
 * The (prompt, output) pairs of a ShareGPT file (a JSON list of
 * {"conversations": [{"from", "value"}, ...]}): the first two turns of
 * each conversation of two or more, lengths estimated, vLLM's filters
 * applied (prompt >= 4, output >= 4 unless output_len is given, prompt
 * <= 1024, prompt + output <= 2048).  *pairs is malloc'ed.
 */
wl_err
wl__sharegpt_pairs(const char *path, uint32_t output_len,
    uint32_t (**pairs)[2], size_t *npairs, struct wl_error *err)
{
	struct yd_doc doc;
	char msg[600];
	size_t cap = 0, n = 0;
	wl_err rc = WL_OK;

	*pairs = NULL;
	*npairs = 0;
	if (yd_read_path(&doc, path, 0, msg, sizeof(msg)) != KV_OK) {
		wl__error_set(err, "", 0, 0, "%s", msg);
		return WL_EPARSE;
	}
	if (doc.root == NULL || doc.root->type != YD_SEQ) {
		rc = nfail(err, path, doc.root, "not a ShareGPT file: "
		    "expected a JSON list of conversations");
		goto out;
	}
	for (size_t i = 0; i < doc.root->n && rc == WL_OK; i++)
		rc = sharegpt_entry(doc.root->kid[i], path, output_len, pairs,
		    &n, &cap, err);
	if (rc == WL_OK && n == 0)
		rc = nfail(err, path, doc.root, "no conversation passes "
		    "vLLM's filters (2+ turns; estimated prompt 4 to 1024 "
		    "tokens, output at least 4, together at most 2048)");
out:
	yd_release(&doc);
	if (rc != WL_OK) {
		free(*pairs);
		*pairs = NULL;
		return rc;
	}
	*npairs = n;
	return WL_OK;
}
