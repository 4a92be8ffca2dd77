/*
 * fuzz_workload.c -- the `workload:` section (workloads/wl_config.c):
 * wl_config_load on the input as a YAML file, then the round trip
 * wl_config_write_yaml documents: what it writes reads back, and a
 * generator read back gives the same first requests.  Configurations
 * naming a trace (or a lengths trace) are not opened: the path is the
 * input's, and the trace readers have their own harness; nor are those
 * whose stream is drawn whole first without a bound (fz_wl_bounded).
 */
#include "tests/fuzz/fuzz.h"

#include "workloads/wl.h"

#include <stdlib.h>
#include <string.h>

#define NREQ 32

void
fz_setup(void)
{
}

/* The first n requests of c's generator into out; how many it gave, or
 * -1 when it does not open. */
static int
draw(const struct wl_config *c, struct wl_request *out, int n)
{
	struct wl_error e;
	wl_stream *s = NULL;
	int i = 0;

	if (wl_open(c, &s, &e) != WL_OK) {
		wl_stream_free(s);
		return -1;
	}
	while (i < n && wl_stream_next(s, &out[i]) == WL_OK) {
		out[i].segs = NULL;	/* borrowed: not kept */
		out[i].tokens = NULL;
		if (wl_stream_check(s) != WL_CHECK_OK)
			abort();
		i++;
	}
	wl_stream_free(s);
	return i;
}

/* Write c, read it back, and compare the two generators' requests. */
static void
round_trip(const struct wl_config *c)
{
	struct wl_request a[NREQ], b[NREQ];
	struct wl_config back;
	struct wl_error e;
	char *text = NULL, path[4200];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int na, nb;

	if (f == NULL)
		return;
	fputs("workload:\n", f);
	wl_config_write_yaml(c, f, 2);
	if (fclose(f) != 0 || text == NULL) {
		free(text);
		return;
	}
	if (fz_write("back.yaml", text, len, path, sizeof(path)) == NULL) {
		free(text);
		return;
	}
	free(text);
	wl_config_init(&back);
	if (wl_config_load(path, &back, &e) != WL_OK)
		abort();	/* what it wrote, it must read */
	if (!fz_wl_bounded(c) || !fz_wl_bounded(&back)) {
		wl_config_release(&back);
		return;		/* read back; too long to draw */
	}
	na = draw(c, a, NREQ);
	nb = draw(&back, b, NREQ);
	if (na != nb)
		abort();
	for (int i = 0; i < na; i++)
		if (a[i].arrival_ns != b[i].arrival_ns ||
		    a[i].prompt_tokens != b[i].prompt_tokens ||
		    a[i].output_tokens != b[i].output_tokens ||
		    a[i].priority != b[i].priority || a[i].n != b[i].n ||
		    a[i].session != b[i].session || a[i].turn != b[i].turn)
			abort();
	wl_config_release(&back);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wl_config c;
	struct wl_error e;
	char path[4200], msg[2048];

	if (fz_write("workload.yaml", data, size, path, sizeof(path)) == NULL)
		return 0;
	wl_config_init(&c);
	if (wl_config_load(path, &c, &e) != WL_OK)
		wl_error_format(&e, msg, sizeof(msg));
	else if (c.trace == NULL && c.gen.lengths_trace == NULL)
		round_trip(&c);
	wl_config_release(&c);
	return 0;
}
