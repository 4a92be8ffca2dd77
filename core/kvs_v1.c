/* Placeholder until the policy lands: kvs_new() refuses it. */
#include "kvsched.h"

static kv_err
kvs__v1_configure(struct kvs_config *c, const struct kvc_config *kc,
		    char *why, size_t whylen)
{
	(void)c;
	(void)kc;
	if (why != NULL && whylen > 0)
		why[0] = '\0';
	return KV_ENOTSUP;
}

static kv_err
kvs__v1_schedule(kvs *s, void *state)
{
	(void)s;
	(void)state;
	return KV_ENOTSUP;
}

const struct kvs_policy kvs__v1_policy = {
	.abi = KVS_ABI,
	.name = "v1",
	.configure = kvs__v1_configure,
	.schedule = kvs__v1_schedule,
};
