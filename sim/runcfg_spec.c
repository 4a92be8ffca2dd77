/*
 * runcfg_spec.c -- engine.speculative_config (runcfg_spec.h): the keys,
 * their checks and their resolved text.
 *
 * vLLM v0.15.1's SpeculativeConfig takes num_speculative_tokens > 0,
 * draft_tensor_parallel_size >= 1, prompt_lookup_max/min >= 1 and
 * min <= max, defaults both lookups to 5 when neither is given (one given:
 * the other takes its value), and needs a model for every method but
 * ngram.  kvsim has no draft-model config to read n_predict from, so it
 * always needs num_speculative_tokens.
 */
#include "config.h"

#include "sim/runcfg_spec.h"
#include "sim/pdcfg.h"
#include "util/csv.h"
#include "workloads/wl.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define PFX "engine.speculative_config."

static const char *const method_names[] = { "off", "ngram", "eagle",
	"eagle3", "draft_model" };

void
sim_spec_config_init(struct sim_spec_config *s)
{
	memset(s, 0, sizeof(*s));
	s->ngram_match = -1;
}

const char *
sim_spec_method_name(enum sim_spec_method m)
{
	return (unsigned)m <= SIM_SPEC_DRAFT ? method_names[m] : "?";
}

#define spec_fail sim_config_fail

static bool
spec_null(const char *v)
{
	return v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
	       strcmp(v, "auto") == 0;
}

/* An acceptance value: a number in [0, 1]. */
static bool
spec_prob(const char *v, double *out)
{
	return sim_config_parse_dbl(v, 0.0, 1.0, out);
}

/* "0.8,0.6" or "[0.8, 0.6]": the list form of --set.  False if any item
 * is not in [0, 1] or there are more than SIM_SPEC_MAX_K. */
static bool
spec_list(struct sim_spec_config *s, const char *v)
{
	char buf[1024], *p, *tok, *save = NULL;
	size_t n = strlen(v);

	if (n >= sizeof(buf))
		return false;
	memcpy(buf, v, n + 1);
	p = buf;
	if (p[0] == '[' && n > 1 && p[n - 1] == ']') {
		p[n - 1] = '\0';
		p++;
	}
	s->nacc = 0;
	for (tok = strtok_r(p, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		for (char *e = tok + strlen(tok); e > tok && e[-1] == ' ';)
			*--e = '\0';
		if (s->nacc == SIM_SPEC_MAX_K || !spec_prob(tok, &s->acc[
		    s->nacc]))
			return false;
		s->nacc++;
	}
	return s->nacc > 0;
}

/* acceptance: a number, a list, or a file (relative to `file`). */
static kv_err
spec_set_acceptance(struct sim_config *c, const char *key, const char *v,
		    const char *where, const char *file, char *err,
		    size_t errlen)
{
	struct sim_spec_config *s = &c->spec;

	snprintf(s->acc_where, sizeof(s->acc_where), "%s", where);
	s->acc_file[0] = '\0';
	s->acc_const = false;
	s->nacc = 0;
	if (spec_null(v))
		return KV_OK;
	if (spec_prob(v, &s->acc[0])) {
		s->acc_const = true;
		s->nacc = 1;
		return KV_OK;
	}
	if (strchr(v, ',') != NULL || v[0] == '[') {
		if (spec_list(s, v))
			return KV_OK;
		s->nacc = 0;
		return spec_fail(err, errlen, where, "%s: expected numbers in "
				 "[0, 1], at most %d, got '%s'", key,
				 SIM_SPEC_MAX_K, v);
	}
	if ((v[0] >= '0' && v[0] <= '9') || v[0] == '-' || v[0] == '.')
		return spec_fail(err, errlen, where, "%s: expected a number "
				 "in [0, 1], a list or a file, got '%s'", key,
				 v);
	if (!sim_config_resolve_path(s->acc_file, sizeof(s->acc_file), v,
				     file))
		return spec_fail(err, errlen, where, "%s: path too long", key);
	return KV_OK;
}

static kv_err
spec_seq(struct sim_spec_config *s, const struct yd_node *seq,
	 const char *file, char *err, size_t errlen)
{
	char where[SIM_WHERE_LEN];

	snprintf(s->acc_where, sizeof(s->acc_where), "%s:%lu:%lu", file,
		 seq->line, seq->col);
	s->acc_file[0] = '\0';
	s->acc_const = false;
	s->nacc = 0;
	for (size_t i = 0; i < seq->n; i++) {
		const struct yd_node *it = seq->kid[i];

		snprintf(where, sizeof(where), "%s:%lu:%lu", file, it->line,
			 it->col);
		if (i == SIM_SPEC_MAX_K)
			return spec_fail(err, errlen, where, PFX "acceptance: "
					 "more than %d positions",
					 SIM_SPEC_MAX_K);
		if (it->type != YD_SCALAR || !spec_prob(it->str, &s->acc[i]))
			return spec_fail(err, errlen, where, PFX "acceptance: "
					 "expected a number in [0, 1], got "
					 "'%s'", it->type == YD_SCALAR ?
					 it->str : "(not a scalar)");
		s->nacc++;
	}
	if (s->nacc == 0)
		return spec_fail(err, errlen, s->acc_where, PFX "acceptance: "
				 "an empty list");
	return KV_OK;
}

kv_err
sim_spec_config_seq(struct sim_config *c, const struct yd_node *seq,
		    const char *file, char *err, size_t errlen)
{
	return spec_seq(&c->spec, seq, file, err, errlen);
}

static kv_err
spec_set_method(struct sim_spec_config *s, const char *key, const char *v,
		const char *where, char *err, size_t errlen)
{
	snprintf(s->method_where, sizeof(s->method_where), "%s", where);
	if (spec_null(v)) {
		s->method = SIM_SPEC_OFF;
		return KV_OK;
	}
	for (int m = SIM_SPEC_NGRAM; m <= SIM_SPEC_DRAFT; m++) {
		if (strcmp(v, method_names[m]) == 0) {
			s->method = (enum sim_spec_method)m;
			return KV_OK;
		}
	}
	return spec_fail(err, errlen, where, "%s: expected ngram, eagle, "
			 "eagle3 or draft_model (vLLM's names; kvsim models "
			 "these), got '%s'", key, v);
}

/* An integer key: 0 (unset) for auto, else in [lo, hi]. */
static kv_err
spec_set_u32(uint32_t *dst, char *wdst, size_t wlen, const char *key,
	     const char *v, const char *where, uint64_t hi, char *err,
	     size_t errlen)
{
	uint64_t u;

	snprintf(wdst, wlen, "%s", where);
	if (spec_null(v)) {
		*dst = 0;
		return KV_OK;
	}
	if (!sim_config_parse_u64(v, 1, hi, &u))
		return spec_fail(err, errlen, where, "%s: expected an integer "
				 "from 1 to %" PRIu64 ", got '%s'", key, hi,
				 v);
	*dst = (uint32_t)u;
	return KV_OK;
}

kv_err
sim_spec_config_set(struct sim_config *c, const char *key, const char *v,
		    const char *where, const char *file, char *err,
		    size_t errlen)
{
	struct sim_spec_config *s = &c->spec;
	const char *k = key + strlen(PFX);
	double d;

	if (strcmp(k, "method") == 0)
		return spec_set_method(s, key, v, where, err, errlen);
	if (strcmp(k, "num_speculative_tokens") == 0)
		return spec_set_u32(&s->k, s->k_where, sizeof(s->k_where),
				    key, v, where, SIM_SPEC_MAX_K, err,
				    errlen);
	if (strcmp(k, "draft_tensor_parallel_size") == 0)
		return spec_set_u32(&s->draft_tp, s->tp_where,
				    sizeof(s->tp_where), key, v, where, 1024,
				    err, errlen);
	if (strcmp(k, "prompt_lookup_max") == 0)
		return spec_set_u32(&s->lookup_max, s->lookup_where,
				    sizeof(s->lookup_where), key, v, where,
				    1u << 20, err, errlen);
	if (strcmp(k, "prompt_lookup_min") == 0)
		return spec_set_u32(&s->lookup_min, s->lookup_where,
				    sizeof(s->lookup_where), key, v, where,
				    1u << 20, err, errlen);
	if (strcmp(k, "acceptance") == 0)
		return spec_set_acceptance(c, key, v, where, file, err,
					   errlen);
	if (strcmp(k, "ngram_match_rate") == 0) {
		if (spec_null(v))
			s->ngram_match = -1;
		else if (!spec_prob(v, &d))
			return spec_fail(err, errlen, where, "%s: expected a "
					 "number in [0, 1], got '%s'", key, v);
		else
			s->ngram_match = d;
		return KV_OK;
	}
	/* model: a catalog model (draft_model) or an EAGLE head's name */
	snprintf(s->model_where, sizeof(s->model_where), "%s", where);
	if (spec_null(v))
		s->model[0] = '\0';
	else if (snprintf(s->model, sizeof(s->model), "%s", v) >=
		 (int)sizeof(s->model))
		return spec_fail(err, errlen, where, "%s: too long", key);
	return KV_OK;
}

/*
 * The file of measured acceptance: vLLM's per-position acceptance rates
 * (SpecDecodingLogging's "Per-position acceptance rate": accepted at
 * position i / drafts, so non-increasing), a CSV with columns position
 * and acceptance, or a YAML/JSON list; made conditional here (rate i /
 * rate i-1).  At least k positions; more are cut to k.
 */
static kv_err
spec_read_csv(struct sim_spec_config *s, char *err, size_t errlen)
{
	struct csv_table t;
	struct csv_error ce;
	char where[SIM_WHERE_LEN + 64];
	long pc, ac;
	kv_err e;

	if ((e = csv_table_read(&t, s->acc_file, &ce)) != KV_OK) {
		csv_error_format(&ce, s->acc_file, err, errlen);
		return e == KV_ENOENT ? KV_EINVAL : e;
	}
	pc = csv_table_col(&t, "position");
	ac = csv_table_col(&t, "acceptance");
	if (pc < 0 || ac < 0) {
		csv_table_release(&t);
		return spec_fail(err, errlen, s->acc_file, "expected columns "
				 "position and acceptance");
	}
	s->nacc = 0;
	for (size_t i = 0; i < t.nrow && s->nacc < SIM_SPEC_MAX_K; i++) {
		uint64_t pos;

		snprintf(where, sizeof(where), "%s:%lu", s->acc_file,
			 t.line[i]);
		if (!sim_config_parse_u64(t.row[i][pc], i + 1, i + 1, &pos) ||
		    !spec_prob(t.row[i][ac], &s->acc[s->nacc])) {
			csv_table_release(&t);
			return spec_fail(err, errlen, where, "expected position "
					 "%zu and an acceptance rate in "
					 "[0, 1]", i + 1);
		}
		s->nacc++;
	}
	csv_table_release(&t);
	return KV_OK;
}

static kv_err
spec_read_yaml(struct sim_spec_config *s, char *err, size_t errlen)
{
	struct yd_doc doc;
	const struct yd_node *r;
	kv_err e;

	if ((e = yd_read_path(&doc, s->acc_file, YD_LOADER, err, errlen)) !=
	    KV_OK)
		return e == KV_ENOENT ? KV_EINVAL : e;
	r = doc.root;
	if (r != NULL && r->type == YD_MAP)
		r = yd_get(r, "acceptance");
	if (r == NULL || r->type != YD_SEQ)
		e = spec_fail(err, errlen, s->acc_file, "expected a list of "
			      "per-position acceptance rates (or a mapping "
			      "with one under acceptance)");
	else
		e = spec_seq(s, r, s->acc_file, err, errlen);
	yd_release(&doc);
	return e;
}

static kv_err
spec_read_file(struct sim_spec_config *s, char *err, size_t errlen)
{
	char where[SIM_WHERE_LEN];
	size_t n = strlen(s->acc_file);
	kv_err e;

	memcpy(where, s->acc_where, sizeof(where));
	if (n > 4 && strcmp(s->acc_file + n - 4, ".csv") == 0)
		e = spec_read_csv(s, err, errlen);
	else
		e = spec_read_yaml(s, err, errlen);
	memcpy(s->acc_where, where, sizeof(where));
	if (e != KV_OK)
		return e;
	if (s->nacc < s->k)
		return spec_fail(err, errlen, s->acc_file, "%u positions of "
				 "acceptance, num_speculative_tokens is %u",
				 s->nacc, s->k);
	for (uint32_t i = s->nacc - 1; i > 0; i--) {
		if (s->acc[i] > s->acc[i - 1])
			return spec_fail(err, errlen, s->acc_file, "position "
					 "%u's rate %g is above position %u's: "
					 "expected vLLM's per-position rates "
					 "(accepted / drafts, non-increasing)",
					 i + 1, s->acc[i], i);
		s->acc[i] = s->acc[i - 1] > 0 ? s->acc[i] / s->acc[i - 1] : 0;
	}
	s->nacc = s->k;
	s->acc_file[0] = '\0';	/* resolved: written as the list */
	return KV_OK;
}

/* The acceptance per position, k of them. */
static kv_err
spec_finish_acceptance(struct sim_spec_config *s, char *err, size_t errlen)
{
	kv_err e;

	if (s->acc_file[0] != '\0' &&
	    (e = spec_read_file(s, err, errlen)) != KV_OK)
		return e;
	if (s->nacc == 0 || s->acc_const) {
		double a = s->nacc == 0 ? SIM_SPEC_ACC_DEFAULT : s->acc[0];

		for (uint32_t i = 0; i < s->k; i++)
			s->acc[i] = a;
		s->nacc = s->k;
		s->acc_const = false;
		return KV_OK;
	}
	if (s->nacc != s->k)
		return spec_fail(err, errlen, s->acc_where, PFX "acceptance: "
				 "%u values, expected one per speculative "
				 "token (num_speculative_tokens %u)", s->nacc,
				 s->k);
	return KV_OK;
}

kv_err
sim_spec_config_finish(struct sim_config *c, char *err, size_t errlen)
{
	struct sim_spec_config *s = &c->spec;

	if (s->method == SIM_SPEC_OFF) {
		const char *w = s->k ? s->k_where : s->model[0] ?
				s->model_where : NULL;

		if (w != NULL)
			return spec_fail(err, errlen, w, PFX "method: "
					 "required (ngram, eagle, eagle3 or "
					 "draft_model)");
		return KV_OK;
	}
	if (s->k == 0)
		return spec_fail(err, errlen, s->method_where, PFX
				 "num_speculative_tokens: required, an "
				 "integer >= 1");
	if (s->method != SIM_SPEC_NGRAM && s->model[0] == '\0')
		return spec_fail(err, errlen, s->method_where, PFX "model: "
				 "method %s needs the draft model (or EAGLE "
				 "head) it runs", method_names[s->method]);
	if (s->method == SIM_SPEC_NGRAM) {
		if (s->lookup_max == 0 && s->lookup_min == 0)
			s->lookup_max = s->lookup_min = 5;
		else if (s->lookup_min == 0)
			s->lookup_min = s->lookup_max;
		else if (s->lookup_max == 0)
			s->lookup_max = s->lookup_min;
		if (s->lookup_min > s->lookup_max)
			return spec_fail(err, errlen, s->lookup_where, PFX
					 "prompt_lookup_min %u must be <= "
					 "prompt_lookup_max %u", s->lookup_min,
					 s->lookup_max);
		if (s->ngram_match < 0)
			s->ngram_match = SIM_SPEC_NGRAM_MATCH_DEFAULT;
	}
	return spec_finish_acceptance(s, err, errlen);
}

void
sim_spec_config_write(const struct sim_config *c, FILE *f)
{
	const struct sim_spec_config *s = &c->spec;

	if (s->method == SIM_SPEC_OFF)
		return;
	fprintf(f, "  speculative_config:\n    method: %s\n"
		"    num_speculative_tokens: %" PRIu32 "\n",
		method_names[s->method], s->k);
	if (s->model[0] != '\0') {
		fputs("    model: \"", f);
		wl_yaml_escape(f, s->model);
		fputs("\"\n", f);
	}
	if (s->draft_tp != 0)
		fprintf(f, "    draft_tensor_parallel_size: %" PRIu32 "\n",
			s->draft_tp);
	if (s->method == SIM_SPEC_NGRAM) {
		fprintf(f, "    prompt_lookup_max: %" PRIu32 "\n"
			"    prompt_lookup_min: %" PRIu32 "\n"
			"    ngram_match_rate: ", s->lookup_max,
			s->lookup_min);
		wl_yaml_num(f, s->ngram_match);
		fputc('\n', f);
	}
	fputs("    acceptance: [", f);
	for (uint32_t i = 0; i < s->nacc; i++) {
		if (i > 0)
			fputs(", ", f);
		wl_yaml_num(f, s->acc[i]);
	}
	fputs("]\n", f);
}
