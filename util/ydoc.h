/*
 * ydoc.h -- a YAML (or JSON) document read whole into a tree of nodes that
 * remember where they came from.
 *
 * Why a tree: catalogs and configuration files are small, and every error a
 * user sees must name FILE:LINE:COL of the offending value (DESIGN.md "Bad
 * input").  libyaml's event stream carries the marks; the tree keeps them
 * next to each value so a checker can complain about a node long after the
 * parser has moved on.  JSON is YAML flow syntax, so the same loader reads a
 * Hugging Face config.json (no second parser, no new dependency).
 *
 * Rejected: anchors and aliases (a catalog has no use for them and they
 * make "where did this value come from" ambiguous), non-scalar keys,
 * duplicate keys (YAML says they are an error; libyaml lets them through),
 * and more than one document per file.
 *
 * Ownership: yd_load*() fill a caller-owned struct yd_doc; everything it
 * points to is freed by yd_release().  Nodes are read-only to callers.
 */
#ifndef UTIL_YDOC_H
#define UTIL_YDOC_H

#include "core/kvcore.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum yd_type { YD_SCALAR = 0, YD_MAP, YD_SEQ };

struct yd_node {
	enum yd_type type;
	unsigned long line, col;	/* 1-based position of the value */
	const char *str;	/* YD_SCALAR: the text, NUL-terminated */
	bool plain;		/* YD_SCALAR: written without quotes */
	size_t n;		/* YD_MAP: pairs; YD_SEQ: items */
	struct yd_node **kid;	/* SEQ: n items; MAP: 2n, key then value */
};

struct yd_doc {
	const char *name;	/* as given to yd_load() */
	struct yd_node *root;	/* NULL for an empty document */
	/* private: everything allocated, freed by yd_release() */
	void **mem;
	size_t nmem, capmem;
};

/*
 * Read one document from `in`; `name` (borrowed until yd_release) is what
 * error messages call the file.  KV_OK, or KV_EINVAL with `err` set to
 * "NAME:LINE:COL: what" for bad syntax, KV_ENOMEM.  On failure the doc is
 * released (yd_release is still safe to call).
 */
kv_err yd_load(struct yd_doc *d, FILE *in, const char *name, char *err,
	       size_t errlen);

/* As yd_load on the file at `path`; KV_ENOENT (err "PATH: strerror") if it
 * cannot be opened. */
kv_err yd_load_path(struct yd_doc *d, const char *path, char *err,
		    size_t errlen);

void yd_release(struct yd_doc *d);

/* YD_MAP lookups (NULL if `map` is not a map or has no such key). */
const struct yd_node *yd_get(const struct yd_node *map, const char *key);
const struct yd_node *yd_key(const struct yd_node *map, size_t i);
const struct yd_node *yd_val(const struct yd_node *map, size_t i);

/* A plain scalar spelling YAML/JSON null: "", "~", "null", "Null", "NULL". */
bool yd_is_null(const struct yd_node *n);

#endif
