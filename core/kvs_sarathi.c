/* Placeholder until the policy lands: kvs_new() refuses it. */
#include "kvsched.h"

static kv_err
kvs__sarathi_configure(struct kvs_config *c, const struct kvc_config *kc,
		    char *why, size_t whylen)
{
	(void)c;
	(void)kc;
	if (why != NULL && whylen > 0)
		why[0] = '\0';
	return KV_ENOTSUP;
}

static kv_err
kvs__sarathi_schedule(kvs *s, void *state)
{
	(void)s;
	(void)state;
	return KV_ENOTSUP;
}

const struct kvs_policy kvs__sarathi_policy = {
	.abi = KVS_ABI,
	.name = "sarathi",
	.configure = kvs__sarathi_configure,
	.schedule = kvs__sarathi_schedule,
};
