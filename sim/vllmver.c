/*
 * vllmver.c -- vLLM release numbers and their engine-loop defaults
 * (vllmver.h).
 */
#include "config.h"

#include "sim/vllmver.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each series kvsim knows, with the last patch release it knows. */
static const struct sim_vllm_ver vllm_series[] = {
	{ 0, 6, 6 }, { 0, 7, 3 }, { 0, 8, 5 }, { 0, 9, 2 }, { 0, 10, 2 },
	{ 0, 11, 2 }, { 0, 12, 0 }, { 0, 13, 0 }, { 0, 14, 1 }, { 0, 15, 1 },
};

#define NSERIES (sizeof(vllm_series) / sizeof(vllm_series[0]))

/* One decimal field of at most 6 digits; *p moves past it. */
static bool
vllmver__field(const char **p, uint32_t *out)
{
	const char *s = *p;
	uint32_t x = 0;
	size_t n = 0;

	while (s[n] >= '0' && s[n] <= '9') {
		if (n == 6)
			return false;
		x = x * 10 + (uint32_t)(s[n] - '0');
		n++;
	}
	if (n == 0)
		return false;
	*out = x;
	*p = s + n;
	return true;
}

/* MAJOR.MINOR.PATCH[.postN] */
static bool
vllmver__syntax(const char *s, struct sim_vllm_ver *v)
{
	uint32_t post;

	if (!vllmver__field(&s, &v->major) || *s++ != '.' ||
	    !vllmver__field(&s, &v->minor) || *s++ != '.' ||
	    !vllmver__field(&s, &v->patch))
		return false;
	if (*s == '\0')
		return true;
	if (strncmp(s, ".post", 5) != 0)
		return false;
	s += 5;
	return vllmver__field(&s, &post) && *s == '\0';
}

kv_err
sim_vllm_parse(const char *text, struct sim_vllm_ver *v, char *why,
	       size_t whylen)
{
	const struct sim_vllm_ver *lo = &vllm_series[0];
	const struct sim_vllm_ver *hi = &vllm_series[NSERIES - 1];

	if (vllmver__syntax(text, v))
		for (size_t i = 0; i < NSERIES; i++)
			if (vllm_series[i].major == v->major &&
			    vllm_series[i].minor == v->minor &&
			    v->patch <= vllm_series[i].patch)
				return KV_OK;
	snprintf(why, whylen, "unknown vLLM version; kvsim knows %u.%u.0 to "
		 "%u.%u.%u", lo->major, lo->minor, hi->major, hi->minor,
		 hi->patch);
	return KV_EINVAL;
}

static int
vllmver__cmp(const struct sim_vllm_ver *a, uint32_t major, uint32_t minor)
{
	if (a->major != major)
		return a->major < major ? -1 : 1;
	if (a->minor != minor)
		return a->minor < minor ? -1 : 1;
	return 0;
}

bool
sim_vllm_has_async(const struct sim_vllm_ver *v)
{
	return vllmver__cmp(v, 0, 10) >= 0;
}

bool
sim_vllm_async_default(const struct sim_vllm_ver *v)
{
	return vllmver__cmp(v, 0, 14) >= 0;
}
