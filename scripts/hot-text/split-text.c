/* Preloaded into a profiled host by scripts/hot-text.sh, never shipped.
 *
 * Splits the executable's code mappings into one mapping per page (alternate pages get
 * MADV_RANDOM, a per-mapping flag). The kernel's fault-around maps up to 64 KiB around a
 * faulting page, but never across a mapping, so after the host releases its code each page it
 * runs again faults on its own, and the fault's instruction address names a function the host
 * runs between events. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((constructor)) static void split_text(void) {
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len < 0) return;
    exe[len] = '\0';
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps) return;
    unsigned long ranges[64][2];
    int count = 0;
    char line[PATH_MAX + 256];
    while (count < 64 && fgets(line, sizeof line, maps)) {
        unsigned long lo, hi;
        char perms[8], path[PATH_MAX];
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %4095s", &lo, &hi, perms, path) == 4 &&
            perms[2] == 'x' && strcmp(path, exe) == 0) {
            ranges[count][0] = lo;
            ranges[count][1] = hi;
            count++;
        }
    }
    fclose(maps);
    long page = sysconf(_SC_PAGESIZE);
    int split = 0;
    for (int i = 0; i < count; i++)
        for (unsigned long at = ranges[i][0]; at + page <= ranges[i][1]; at += 2 * page)
            if (madvise((void *)at, page, MADV_RANDOM) == 0) split++;
    fprintf(stderr, "split-text: %d pages of %s marked, %d ranges\n", split, exe, count);
}
