/*
 * plugin.c -- load a user policy from a shared object, and find a policy
 * by name or path for the run configuration and the replay interpreter
 * alike (plugin.h).
 *
 * dlopen with RTLD_NOW, so a plugin that calls a function kvsim does not
 * export fails here, with the loader's message, instead of at its first
 * step; RTLD_LOCAL, so two plugins may use the same internal names.
 */
#include "sim/plugin.h"

#include "core/kvsched.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static const struct kvs_policy *
sim_plugin_fail(void *h, void **handle, char *why, size_t whylen,
		const char *path, const char *what)
{
	(void)path;	/* the caller's message names it */
	if (why != NULL && whylen > 0)
		snprintf(why, whylen, "%s", what);
	if (h != NULL)
		dlclose(h);
	*handle = NULL;
	return NULL;
}

const struct kvs_policy *
sim_plugin_load(const char *path, void **handle, char *why, size_t whylen)
{
	union {
		void *obj;
		kvs_policy_entry_fn fn;
	} sym;
	const struct kvs_policy *p;
	char msg[200];
	const char *err;
	void *h;

	*handle = NULL;
	(void)dlerror();
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		err = dlerror();
		return sim_plugin_fail(NULL, handle, why, whylen, path,
				       err != NULL ? err : "cannot load");
	}
	(void)dlerror();
	sym.obj = dlsym(h, KVS_POLICY_ENTRY);
	if (sym.obj == NULL)
		return sim_plugin_fail(h, handle, why, whylen, path,
				       "no " KVS_POLICY_ENTRY "() symbol (is "
				       "it a kvsim policy plugin?)");
	p = sym.fn();
	if (p == NULL)
		return sim_plugin_fail(h, handle, why, whylen, path,
				       KVS_POLICY_ENTRY "() returned NULL");
	if (p->abi != KVS_ABI) {
		snprintf(msg, sizeof(msg), "built for policy ABI %u, this "
			 "kvsim speaks ABI %u (rebuild it against this "
			 "kvsched.h)", p->abi, KVS_ABI);
		return sim_plugin_fail(h, handle, why, whylen, path, msg);
	}
	if (p->name == NULL || p->name[0] == '\0' || p->schedule == NULL)
		return sim_plugin_fail(h, handle, why, whylen, path,
				       "the policy has no name or no "
				       "schedule()");
	if (p->mode != KVC_EXACT && p->mode != KVC_VLLM_V0 &&
	    p->mode != KVC_VLLM_V1 && p->mode != KVC_DEEPSPEED)
		return sim_plugin_fail(h, handle, why, whylen, path,
				       "the policy names an unknown "
				       "allocator mode");
	*handle = h;
	return p;
}

void
sim_plugin_unload(void *handle)
{
	if (handle != NULL)
		dlclose(handle);
}

/* The names kvs_builtin_policy() knows, for the message that lists them. */
#define SIM_POLICY_NAMES "vllm-v0, vllm-v1, sarathi, deepspeed-fastgen, kvsim"

kv_err
sim_policy_find(const char *name, const struct kvs_policy **pol,
		void **handle, char *why, size_t whylen)
{
	char msg[768];

	*handle = NULL;
	if (strchr(name, '/') != NULL) {
		*pol = sim_plugin_load(name, handle, msg, sizeof(msg));
		if (*pol == NULL) {
			snprintf(why, whylen, "cannot load '%s': %s", name,
				 msg);
			return KV_EINVAL;
		}
		return KV_OK;
	}
	*pol = kvs_builtin_policy(name);
	if (*pol == NULL) {
		snprintf(why, whylen, "unknown policy '%s' (" SIM_POLICY_NAMES
			 ", or the path of a plugin)", name);
		return KV_ENOENT;
	}
	return KV_OK;
}
