/*
 * postproc/resolve/resolve_disk.h: the resolver's persistent cache, one text file
 * per module key (docs/resolve.md, "The cache"): address -> the frame texts
 * it resolves to. Internal to the resolver; the file format is private to
 * this module and versioned.
 *
 * Everything here is an optimisation: a file that is missing, unreadable,
 * malformed, of another version or of another key is treated as empty, and
 * a directory that cannot be created or written is skipped without a word.
 */
#ifndef AT_RESOLVE_DISK_H
#define AT_RESOLVE_DISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The frame texts one address resolves to, innermost inline frame first. */
typedef struct at_rtexts {
    uint32_t n;
    char *texts[];
} at_rtexts;

/* n texts, all NULL (the caller fills them). */
at_rtexts *at_rtexts_new(uint32_t n);
at_rtexts *at_rtexts_copy(const at_rtexts *e);
/* Frees e and its texts; takes void * to serve as a table's free_value. */
void at_rtexts_free(void *e);

/* Entries one file may hold: more are not kept (so a file cannot grow
 * without bound on programs that leak from ever new addresses). */
#define AT_RDISK_MAX_ENTRIES 100000

typedef struct at_rdisk at_rdisk;

/* The cache of one module key in dir, read now (once). label (the
 * module's name) only makes the file name readable; cap bounds the entries
 * kept and written (AT_RDISK_MAX_ENTRIES in the resolver). */
at_rdisk *at_rdisk_open(const char *dir, const char *label, const char *key, size_t cap);

/* The entry of addr, or NULL. */
const at_rtexts *at_rdisk_get(const at_rdisk *d, uint64_t addr);

/* Adds a new entry (copied) unless addr has one or the cap is reached. */
void at_rdisk_put(at_rdisk *d, uint64_t addr, const at_rtexts *e);

/* Entries held (read and new). */
size_t at_rdisk_count(const at_rdisk *d);

/* When there are new entries: merges them with the file as it is now,
 * writes a temporary file in the directory (created 0755 with its parents
 * when missing) and renames it over the file, so a reader never sees half
 * a file; another writer's entries merged in between are lost, which only
 * costs a lookup. 0, or -1 when nothing could be written. */
int at_rdisk_save(at_rdisk *d);

void at_rdisk_free(at_rdisk *d);

/* The file of a key in dir (a new string): DIR/LABEL-HASH.cache, LABEL
 * the label's base name in safe characters, HASH the key's. */
char *at_rdisk_file_name(const char *dir, const char *label, const char *key);

/* Parses a cache file's text for key into d, all of it or nothing: 0, or
 * -1 when the text is not a whole, well-formed file of this version and
 * key (d is then unchanged). For the tests and the fuzz target. */
int at_rdisk_parse(at_rdisk *d, const char *text, size_t len);

/* The text of d's file as at_rdisk_save writes it (a new string), without
 * merging; for the tests. */
char *at_rdisk_format(const at_rdisk *d);

/* The default directory, or NULL for none: $ALLOCTRACE_CACHE_DIR (empty:
 * none), else $XDG_CACHE_HOME/alloctrace, else $HOME/.cache/alloctrace. */
char *at_rdisk_default_dir(void);

/* What identifies this build of the resolver in keys: its build id, else
 * its version (a new string). A changed resolver never reads an old
 * resolver's answers. */
char *at_rdisk_program_id(void);

#endif
