/* Placeholder until the policy lands: kvs_new() refuses it. */
#include "kvsched.h"

static kv_err
kvs__fastgen_configure(struct kvs_config *c, const struct kvc_config *kc,
		    char *why, size_t whylen)
{
	(void)c;
	(void)kc;
	if (why != NULL && whylen > 0)
		why[0] = '\0';
	return KV_ENOTSUP;
}

static kv_err
kvs__fastgen_schedule(kvs *s, void *state)
{
	(void)s;
	(void)state;
	return KV_ENOTSUP;
}

const struct kvs_policy kvs__fastgen_policy = {
	.abi = KVS_ABI,
	.name = "fastgen",
	.configure = kvs__fastgen_configure,
	.schedule = kvs__fastgen_schedule,
};
