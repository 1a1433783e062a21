/*
 * postproc/maps.h: the trace's memory map lines (": PATH => 0xSTART-0xEND")
 * and build-id comments, and which object covers an address. A later map
 * line that covers an address replaces an earlier one from that point on
 * (dlclose, then another object loaded at the same range).
 */
#ifndef AT_MAPS_H
#define AT_MAPS_H

#include <stddef.h>
#include <stdint.h>

typedef struct at_map {
    const char *path;
    uint64_t start;       /* load base: address - start is the ELF file's own address
                             for PIE and shared objects (TEXT_FORMAT.md section 3) */
    uint64_t end;
    const char *build_id; /* lower-case hex from "## build-id:", NULL if none */
    uint32_t seq;         /* order of appearance in the trace, from 0 */
} at_map;

typedef struct at_maps at_maps;

at_maps *at_maps_new(void);
void at_maps_free(at_maps *m);

/* Adds a map line's object; returns its entry. */
const at_map *at_maps_add(at_maps *m, const char *path, uint64_t start, uint64_t end);

/* Records "## build-id: PATH => HEX" for the newest map of PATH, or for
 * the next one added with that path if none is there yet. */
void at_maps_set_build_id(at_maps *m, const char *path, const char *hex);

/* The newest map covering addr, or NULL. */
const at_map *at_maps_find(const at_maps *m, uint64_t addr);

size_t at_maps_count(const at_maps *m);
const at_map *at_maps_get(const at_maps *m, size_t i); /* in order of appearance */

/* Parses the part of a map line after ": " ("PATH => 0xSTART-0xEND"),
 * splitting at the last " => " so that paths may contain spaces. Returns 0
 * on success and fills the out-parameters (path is a view into line). */
int at_maps_parse_line(const char *line, size_t len, const char **path, size_t *path_len,
                       uint64_t *start, uint64_t *end);

#endif
