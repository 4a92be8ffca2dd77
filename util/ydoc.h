/*
 * ydoc.h -- a YAML (or JSON) document read whole into a tree of nodes that
 * remember where they came from.
 *
 * Why a tree: catalogs and configuration files are small, and every error a
 * user sees must name FILE:LINE:COL of the offending value (DESIGN.md "Bad
 * input").  libyaml's event stream carries the marks; the tree keeps them
 * next to each value, keys included, so a checker can complain about a node
 * long after the parser has moved on.  JSON is YAML flow syntax, so the same
 * loader reads a Hugging Face config.json (no second parser, no new
 * dependency).  This is the one place that calls libyaml's reader.
 *
 * Two ways to read (enum yd_flags):
 *
 *   strict (0): catalogs, sweeps, suites, calibration files.  Rejected:
 *   anchors' aliases (a catalog has no use for them and they make "where did
 *   this value come from" ambiguous), non-scalar keys, duplicate keys (YAML
 *   says they are an error; libyaml lets them through; refused as the
 *   repeat is read), more than one document per file, nesting deeper than
 *   256.  Syntax errors read "PROBLEM CONTEXT started at LINE:COL".
 *
 *   YD_LOADER: as libyaml's own document loader (yaml_parser_load) reads a
 *   file, which run configurations and workload files were read with and
 *   whose messages they keep: an alias is the very node its anchor names
 *   (so a tree may share nodes, even contain a cycle), any node may be a
 *   key, a repeated key is kept (both pairs), reading stops at the end of
 *   the first document, and errors are libyaml's problem alone ("found
 *   undefined alias", "second occurrence" for a repeated anchor).  With
 *   YD_UNIQUE, the document once read is searched for a repeated scalar key
 *   (document order, 64 levels deep); with YD_NEXTDOC, the next document is
 *   read too and its root kept in `next`, for the caller to refuse.
 *
 * Ownership: yd_load*() and yd_read*() fill a caller-owned struct yd_doc;
 * everything it points to is freed by yd_release().  Nodes are read-only
 * to callers.  Cost: O(bytes + keys^2 per map) (the duplicate-key check is
 * a linear scan, fine for maps of tens of keys).
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
	int unique_depth;	/* YD_UNIQUE searched it from this depth + 1
				 * (0: not yet; an alias can reach a node
				 * many times) */
};

enum yd_flags {
	YD_LOADER = 1u << 0,	/* as yaml_parser_load (top comment) */
	YD_UNIQUE = 1u << 1,	/* with YD_LOADER: refuse repeated keys */
	YD_NEXTDOC = 1u << 2	/* with YD_LOADER: read the next document */
};

struct yd_doc {
	const char *name;	/* as given to yd_load() */
	struct yd_node *root;	/* NULL for an empty document */
	struct yd_node *next;	/* YD_NEXTDOC: the next document's root,
				 * NULL when there is none */
	/*
	 * After a failure: the error's 1-based mark (0, 0 when it has none)
	 * and where its text starts in err, after "NAME:LINE:COL: " (or
	 * "PATH: "), for callers that word the location their own way.
	 */
	unsigned long err_line, err_col;
	size_t err_what;
	/* private: everything allocated, freed by yd_release() */
	void **mem;
	size_t nmem, capmem;
};

/*
 * Read one document from `in`; `name` (borrowed until yd_release) is what
 * error messages call the file.  KV_OK, or KV_EINVAL with `err` set to
 * "NAME:LINE:COL: what" for bad syntax, KV_ENOMEM.  On failure the doc is
 * released (yd_release is still safe to call).  yd_load is yd_read with
 * flags 0 (strict).
 */
kv_err yd_load(struct yd_doc *d, FILE *in, const char *name, char *err,
	       size_t errlen);
kv_err yd_read(struct yd_doc *d, FILE *in, const char *name, unsigned flags,
	       char *err, size_t errlen);

/* As yd_load/yd_read on the file at `path`; KV_ENOENT (err "PATH:
 * strerror") if it cannot be opened. */
kv_err yd_load_path(struct yd_doc *d, const char *path, char *err,
		    size_t errlen);
kv_err yd_read_path(struct yd_doc *d, const char *path, unsigned flags,
		    char *err, size_t errlen);

void yd_release(struct yd_doc *d);

/* YD_MAP lookups (NULL if `map` is not a map or has no such key; the
 * first of repeated keys; keys that are not scalars never match). */
const struct yd_node *yd_get(const struct yd_node *map, const char *key);
const struct yd_node *yd_key(const struct yd_node *map, size_t i);
const struct yd_node *yd_val(const struct yd_node *map, size_t i);

/* A plain scalar spelling YAML/JSON null: "", "~", "null", "Null", "NULL". */
bool yd_is_null(const struct yd_node *n);

#endif
