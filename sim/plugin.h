/*
 * plugin.h -- user scheduler policies loaded from shared objects.
 *
 * A plugin is a shared object that exports kvs_policy_entry() (kvsched.h,
 * C linkage) returning its struct kvs_policy.  It is compiled against the
 * installed headers (`pkg-config --cflags kvcore`: kvsched.h, kvcore.h) and
 * is NOT linked with libkvcore: the kvs_* and kvc_* functions it calls
 * resolve to the kvsim executable's own (kvsim is linked with
 * -export-dynamic), so the plugin and kvsim share one copy of every
 * scheduler and allocator structure.  examples/plugin/ is a complete one.
 *
 * Checks before a policy is returned: the entry symbol exists, it returns
 * a descriptor, the descriptor's abi is KVS_ABI, it has a name and a
 * schedule function, and its allocator mode is one libkvcore knows.  Any
 * failure closes the object again and says why.
 */
#ifndef SIM_PLUGIN_H
#define SIM_PLUGIN_H

#include "core/kvcore.h"

#include <stddef.h>

struct kvs_policy;

/*
 * The policy a configuration or a replay script names, the one place that
 * tells the two kinds apart: a value with a '/' is a plugin's path, loaded
 * by sim_plugin_load() (*handle then owns it); any other is a built-in
 * policy's name (kvs_builtin_policy; *handle stays NULL).
 * KV_OK with *pol set; KV_ENOENT, no built-in policy of that name, why
 * "unknown policy 'NAME' (vllm-v0, ..., or the path of a plugin)";
 * KV_EINVAL, the plugin did not load, why "cannot load 'PATH': reason".
 */
kv_err sim_policy_find(const char *name, const struct kvs_policy **pol,
		       void **handle, char *why, size_t whylen);

/*
 * dlopen(path) and resolve its policy.  On success *handle owns the
 * object (sim_plugin_unload() closes it; the policy is valid until then).
 * On failure NULL, *handle NULL and a message in why[0..whylen).
 * A path with no '/' is looked up by the dynamic loader's own rules
 * (LD_LIBRARY_PATH, ...): name it "./libx.so" to load from the current
 * directory.
 */
const struct kvs_policy *sim_plugin_load(const char *path, void **handle,
					 char *why, size_t whylen);

/* Close a plugin (NULL: nothing). */
void sim_plugin_unload(void *handle);

#endif
