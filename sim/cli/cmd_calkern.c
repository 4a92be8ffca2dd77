/*
 * cmd_calkern.c -- `kvsim calibrate kernels`: the shapes a device bench
 * should time, and the efficiencies fitted from what it timed
 * (sim/calkern.h; docs/cost-model.md §5.3, docs/gpu.md §5.2).
 *
 *   kvsim calibrate kernels --emit-shapes MODEL[@TP]... [--out FILE]
 *   kvsim calibrate kernels STEPBENCH.csv... [--out FILE] [--gpu G]
 *                           [--device NAME] [--date DATE]
 *                           [--holdout-model M]
 *
 * The first writes the shapes CSV gpu/tools/kvsim-stepbench reads (so the
 * device needs no catalog or YAML); the second writes a calibration file
 * for cost.calibration with eff_compute, eff_weights, eff_kv_read and
 * eff_interconnect, each with its held-out error in its source.  The file
 * goes through FILE.tmp and a rename: bad input (exit 2) and a failed fit
 * (exit 1) write nothing.
 */
#include "config.h"

#include "sim/cli/cmd_calkern.h"
#include "sim/cli/opts.h"

#include "sim/calkern.h"
#include "sim/model/catalog.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK_PROG "kvsim calibrate kernels"

struct ck_cmd {
	struct cli_opts o;	/* --out */
	bool shapes;
	const char *gpu, *device, *date, *hold_model;
};

static void
ck_usage(FILE *f)
{
	fprintf(f,
"usage: kvsim calibrate kernels --emit-shapes MODEL[@TP]... [--out FILE]\n"
"       kvsim calibrate kernels STEPBENCH.csv... [--out FILE] [--gpu G]\n"
"                               [--device NAME] [--date DATE]\n"
"                               [--holdout-model M]\n"
"\n"
"--emit-shapes writes the per-rank shapes of each model's step (GEMMs,\n"
"KV read, all-reduce buffer) for gpu/tools/kvsim-stepbench (default: to\n"
"standard output).  Otherwise fit eff_compute, eff_weights, eff_kv_read\n"
"and eff_interconnect to the bench's CSVs against G's catalog peaks and\n"
"write a calibration file (docs/cost-model.md 5.3).\n"
"\n"
"  -o, --out FILE       the output (default calibration.yaml)\n"
"      --gpu G          the catalog GPU measured (default h200)\n"
"      --device NAME    recorded in meta.device (default: G's name)\n"
"      --date DATE      recorded in meta.date (default \"unknown\")\n"
"      --holdout-model M  hold out model M instead of every other shape\n"
"\n"
"Exit status: 0 ok, 1 a term could not be fitted or is above 1 (nothing\n"
"written), 2 bad usage or input.\n");
}

static int
ck_parse(struct ck_cmd *x, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "emit-shapes", no_argument, NULL, 'S' },
		CLI_LO_OUT,
		{ "gpu", required_argument, NULL, 'g' },
		{ "device", required_argument, NULL, 'D' },
		{ "date", required_argument, NULL, 'd' },
		{ "holdout-model", required_argument, NULL, 'H' },
		CLI_LO_HELP,
		CLI_LO_END
	};
	int c;

	optind = 1;
	while ((c = cli_getopt(&x->o, argc, argv, "o:h", lo)) != -1) {
		switch (c) {
		case 'S':
			x->shapes = true;
			break;
		case 'g':
			x->gpu = optarg;
			break;
		case 'D':
			x->device = optarg;
			break;
		case 'd':
			x->date = optarg;
			break;
		case 'H':
			x->hold_model = optarg;
			break;
		case 'h':
			ck_usage(stdout);
			return -1;
		case CLI_OPT_BAD:
			return KVSIM_EXIT_USAGE;
		default:
			ck_usage(stderr);
			return KVSIM_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		ck_usage(stderr);
		return KVSIM_EXIT_USAGE;
	}
	return KVSIM_EXIT_OK;
}

/* Open path.tmp for writing (path NULL: standard output). */
static FILE *
ck_open(const char *path, char *tmp, size_t tmplen)
{
	FILE *f;

	if (path == NULL)
		return stdout;
	snprintf(tmp, tmplen, "%s.tmp", path);
	f = fopen(tmp, "w");
	if (f == NULL)
		fprintf(stderr, CK_PROG ": %s: %s\n", tmp, strerror(errno));
	return f;
}

/* Close f and rename it to path; the exit status. */
static int
ck_commit(FILE *f, const char *path, const char *tmp)
{
	if (path == NULL)
		return fflush(f) == 0 ? KVSIM_EXIT_OK : KVSIM_EXIT_FAIL;
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		fprintf(stderr, CK_PROG ": %s: %s\n", path, strerror(errno));
		remove(tmp);
		return KVSIM_EXIT_USAGE;
	}
	return KVSIM_EXIT_OK;
}

/* MODEL[@TP] -> the catalog entry (or a config.json) and tp. */
static int
ck_model(cat *c, const char *arg, struct cat_model **own,
	 const struct cat_model **m, unsigned *tp)
{
	char name[512], *at, *end;
	struct cat_err ce;
	unsigned long v = 1;

	snprintf(name, sizeof(name), "%s", arg);
	at = strrchr(name, '@');
	if (at != NULL) {
		*at++ = '\0';
		errno = 0;
		v = strtoul(at, &end, 10);
		if (errno != 0 || end == at || *end != '\0' || v == 0 ||
		    v > 64) {
			fprintf(stderr, CK_PROG ": %s: TP must be a whole "
				"number from 1 to 64\n", arg);
			return KVSIM_EXIT_USAGE;
		}
	}
	*tp = (unsigned)v;
	*m = cat_find_model(c, name);
	if (*m != NULL)
		return KVSIM_EXIT_OK;
	if (cat_model_from_hf(own, name, &ce) != KV_OK) {
		fprintf(stderr, CK_PROG ": %s: not a catalog model, and %s\n",
			name, ce.msg);
		return KVSIM_EXIT_USAGE;
	}
	*m = *own;
	return KVSIM_EXIT_OK;
}

/* --emit-shapes: one CSV of every model's shapes. */
static int
ck_emit(const struct ck_cmd *x, int argc, char **argv)
{
	struct calkern_shape sh[16];
	struct cat_err ce;
	char tmp[1100], why[512];
	cat *c = NULL;
	FILE *f = NULL;
	int rc = KVSIM_EXIT_USAGE;

	if (cat_load(&c, NULL, &ce) != KV_OK) {
		fprintf(stderr, CK_PROG ": %s\n", ce.msg);
		return KVSIM_EXIT_USAGE;
	}
	if ((f = ck_open(x->o.out, tmp, sizeof(tmp))) == NULL)
		goto out;
	fprintf(f, "model,tp,op,name,n,k,count,elem_bytes\n");
	for (int i = optind; i < argc; i++) {
		struct cat_model *own = NULL;
		const struct cat_model *m;
		unsigned tp;
		size_t n;
		kv_err e;

		if (ck_model(c, argv[i], &own, &m, &tp) != 0)
			goto out;
		e = calkern_shapes(m, tp, sh, sizeof(sh) / sizeof(sh[0]), &n,
				   why, sizeof(why));
		for (size_t j = 0; e == KV_OK && j < n; j++)
			fprintf(f, "%s,%u,%s,%s,%lu,%lu,%lu,%u\n",
				sh[j].model, sh[j].tp,
				calkern_kind_name(sh[j].kind), sh[j].name,
				sh[j].n, sh[j].k, sh[j].count,
				sh[j].elem_bytes);
		cat_model_free(own);
		if (e != KV_OK) {
			fprintf(stderr, CK_PROG ": %s\n", why);
			goto out;
		}
	}
	rc = ck_commit(f, x->o.out, tmp);
	f = NULL;
out:
	if (f != NULL && f != stdout) {
		fclose(f);
		remove(tmp);
	}
	cat_free(c);
	return rc;
}

/* A YAML double-quoted scalar of s (our own texts: quotes and
 * backslashes escaped, newlines as spaces). */
static void
ck_quoted(FILE *f, const char *s)
{
	putc('"', f);
	for (const char *p = s; *p != '\0'; p++) {
		if (strchr("\"\\", *p) != NULL)
			putc('\\', f);
		putc(*p == '\n' ? ' ' : *p, f);
	}
	putc('"', f);
}

/* The held-out sentence of term t into buf. */
static void
ck_held(const struct calkern_term *t, const char *how, char *buf,
	size_t len)
{
	if (t->held > 0)
		snprintf(buf, len, "held out (%s): median %.1f%%, p90 %.1f%% "
			 "over %zu points", how, 100 * t->med_rel,
			 100 * t->p90_rel, t->held);
	else
		snprintf(buf, len, "no held-out error (%s: too few points)",
			 how);
}

struct ck_meta {
	const char *device, *date, *how;
	char data[1024];
	bool measured;
};

static void
ck_write(FILE *f, const struct calkern_fit *fit, const struct ck_meta *mt)
{
	static const char *const what[CALKERN_NTERMS] = {
		"compute-bound GEMMs", "weight-read-bound GEMMs",
		"paged KV reads", "device-to-device copies (a proxy: one "
		"GPU's copy, not its links)"
	};
	char buf[512], held[160], all[600] = "";

	fprintf(f, "# Efficiencies fitted by kvsim calibrate kernels "
		"(docs/cost-model.md 5.3)\n# to device measurements of the "
		"step's parts (gpu/tools/kvsim-stepbench).\n");
	for (int t = 0; t < CALKERN_NTERMS; t++) {
		const struct calkern_term *x = &fit->term[t];

		if (!x->ok)
			continue;
		ck_held(x, mt->how, held, sizeof(held));
		snprintf(buf, sizeof(buf), "kvsim calibrate kernels: %zu %s, "
			 "in-sample median %.1f%%; %s%s", x->points, what[t],
			 100 * x->fit_med_rel, held, mt->measured ? "" :
			 "; not a device measurement");
		fprintf(f, "%s: {value: %.6g, source: ", calkern_term_key(t),
			x->eff);
		ck_quoted(f, buf);
		fprintf(f, "}\n");
		snprintf(all + strlen(all), sizeof(all) - strlen(all),
			 "%s%s %.1f%%/%.1f%%", all[0] ? "; " : "",
			 calkern_term_key(t), 100 * x->med_rel,
			 100 * x->p90_rel);
	}
	fprintf(f, "meta:\n  device: ");
	ck_quoted(f, mt->device);
	fprintf(f, "\n  date: ");
	ck_quoted(f, mt->date);
	fprintf(f, "\n  measured: %s\n  data: ", mt->measured ? "true" :
		"false");
	ck_quoted(f, mt->data);
	snprintf(buf, sizeof(buf), "held out (%s), median/p90 relative error: "
		 "%s", mt->how, all);
	fprintf(f, "\n  holdout: ");
	ck_quoted(f, buf);
	snprintf(buf, sizeof(buf), "ridge %.0f FLOP/B; copy fixed term "
		 "%.0f ns", fit->ridge,
		 fit->term[CALKERN_INTERCONNECT].alpha_ns);
	fprintf(f, "\n  note: ");
	ck_quoted(f, buf);
	fprintf(f, "\n");
}

/* The fit's table on standard output; 0, or 1 when no term could be
 * fitted or one is above 1 (message printed).  A term without points is
 * a note: the file leaves it at its default. */
static int
ck_report(const struct calkern_fit *fit)
{
	int rc = KVSIM_EXIT_FAIL;

	printf("%-17s %7s %8s %9s %8s %8s %9s\n", "term", "points", "eff",
	       "fit_med", "held", "held_med", "held_p90");
	for (int t = 0; t < CALKERN_NTERMS; t++) {
		const struct calkern_term *x = &fit->term[t];

		if (!x->ok) {
			fprintf(stderr, CK_PROG ": %s: no points to fit "
				"(left out of the file)\n",
				calkern_term_key(t));
			continue;
		}
		if (rc != 2)
			rc = KVSIM_EXIT_OK;
		printf("%-17s %7zu %8.4f %8.1f%% %8zu %7.1f%% %8.1f%%\n",
		       calkern_term_key(t), x->points, x->eff,
		       100 * x->fit_med_rel, x->held, 100 * x->med_rel,
		       100 * x->p90_rel);
		if (x->eff > 1) {
			fprintf(stderr, CK_PROG ": %s fitted at %.4f, above "
				"1: the catalog's peak for this GPU is below "
				"what was measured\n", calkern_term_key(t),
				x->eff);
			rc = 2;	/* stays a failure */
		}
	}
	if (rc == KVSIM_EXIT_FAIL)
		fprintf(stderr, CK_PROG ": no term could be fitted\n");
	return rc == 2 ? KVSIM_EXIT_FAIL : rc;
}

/* The GPU's bf16 peak and memory bandwidth from the catalog; its name
 * into name when name is empty. */
static int
ck_peaks(const char *gpu, struct calkern_peaks *pk, char *name, size_t len)
{
	const struct cat_gpu *g;
	struct cat_err ce;
	cat *c = NULL;

	if (cat_load(&c, NULL, &ce) != KV_OK) {
		fprintf(stderr, CK_PROG ": %s\n", ce.msg);
		return KVSIM_EXIT_USAGE;
	}
	g = cat_find_gpu(c, gpu);
	if (g == NULL) {
		fprintf(stderr, CK_PROG ": unknown GPU '%s'\n", gpu);
		cat_free(c);
		return KVSIM_EXIT_USAGE;
	}
	pk->flops = g->flops[CAT_BF16];
	pk->hbm = g->hbm_bw;
	if (name[0] == '\0')
		snprintf(name, len, "%s", g->name != NULL ? g->name : g->id);
	cat_free(c);
	return KVSIM_EXIT_OK;
}

/* Read every CSV, fit, print, write. */
static int
ck_fit(const struct ck_cmd *x, int argc, char **argv)
{
	const char *out = x->o.out != NULL ? x->o.out : "calibration.yaml";
	struct ck_meta mt = { NULL, x->date, NULL, "", false };
	char device[256];
	struct calkern_peaks pk;
	struct calkern_fit fit;
	struct calkern_set s;
	char why[600], tmp[1100];
	size_t used = 0;
	FILE *f;
	int rc;

	calkern_set_init(&s);
	snprintf(device, sizeof(device), "%s", x->device ? x->device : "");
	mt.device = device;
	if ((rc = ck_peaks(x->gpu, &pk, device, sizeof(device))) != 0)
		goto out;
	rc = KVSIM_EXIT_USAGE;
	for (int i = optind; i < argc; i++) {
		if (calkern_read(argv[i], &s, why, sizeof(why)) != KV_OK) {
			fprintf(stderr, "%s\n", why);
			goto out;
		}
		used += (size_t)snprintf(mt.data + used, used < sizeof(mt.data)
					 ? sizeof(mt.data) - used : 0, "%s%s",
					 used ? " " : "", argv[i]);
		if (used >= sizeof(mt.data))
			used = sizeof(mt.data) - 1;
	}
	snprintf(mt.data + used, sizeof(mt.data) - used, " (%zu rows)",
		 s.rows);
	mt.measured = s.unmeasured == 0;
	mt.how = x->hold_model != NULL ? x->hold_model : "every other shape";
	if (calkern_fit(&s, &pk, x->hold_model, &fit, why, sizeof(why)) !=
	    KV_OK) {
		fprintf(stderr, CK_PROG ": %s\n", why);
		goto out;
	}
	if ((rc = ck_report(&fit)) != KVSIM_EXIT_OK) {
		fprintf(stderr, CK_PROG ": %s not written\n", out);
		goto out;
	}
	rc = KVSIM_EXIT_USAGE;
	if ((f = ck_open(out, tmp, sizeof(tmp))) == NULL)
		goto out;
	ck_write(f, &fit, &mt);
	if ((rc = ck_commit(f, out, tmp)) == KVSIM_EXIT_OK)
		printf("wrote %s (%s)\n", out, mt.measured ? "measured" :
		       "not a device measurement");
out:
	calkern_set_release(&s);
	return rc;
}

int
calkern_main(int argc, char **argv)
{
	struct ck_cmd x = { .gpu = "h200", .date = "unknown" };
	int rc;

	if (cli_opts_init(&x.o, CK_PROG, CLI_OUT, argc) != 0) {
		cli_opts_release(&x.o);
		return KVSIM_EXIT_FAIL;
	}
	rc = ck_parse(&x, argc, argv);
	if (rc == KVSIM_EXIT_OK)
		rc = x.shapes ? ck_emit(&x, argc, argv) :
		     ck_fit(&x, argc, argv);
	else if (rc < 0)
		rc = KVSIM_EXIT_OK;
	cli_opts_release(&x.o);
	return rc;
}
