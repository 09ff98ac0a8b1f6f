/* sim.c — the CPU simulation device. */
#include "sim.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define SIM_HUGE (UINT64_C(2) << 20)

typedef struct sim {
  uint32_t cores;
  uint64_t page;
} sim_t;

static int sim_open(const dev_options_t *opts, void **ret_impl, pto_error_t *err) {
  sim_t *s;
  uint32_t cores = opts->cores ? opts->cores : DEV_SIM_DEFAULT_CORES;
  long page = sysconf(_SC_PAGESIZE);

  if (cores > DEV_SIM_MAX_CORES)
    return pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "The sim device supports at most %u cores, got %u; lower cores.",
                         DEV_SIM_MAX_CORES, cores);
  s = calloc(1, sizeof *s);
  if (!s) return pto_error_set(err, PTO_E_INTERNAL, "Out of host memory opening the sim device.");
  s->cores = cores;
  s->page = page > 0 ? (uint64_t)page : 4096;
  *ret_impl = s;
  return 0;
}

static void sim_close(void *impl) { free(impl); }

static uint32_t sim_core_count(void *impl) { return ((sim_t *)impl)->cores; }

static uint64_t sim_round(uint64_t bytes, uint64_t granule) {
  if (bytes > UINT64_MAX - granule) return UINT64_MAX;
  return (bytes + granule - 1) / granule * granule;
}

static uint64_t sim_mem_round(void *impl, uint64_t bytes) {
  sim_t *s = impl;
  return sim_round(bytes, bytes >= SIM_HUGE ? SIM_HUGE : s->page);
}

/* Touch one byte per page: the fallback where MADV_POPULATE_WRITE is missing
 * (kernels before 5.14). */
static void sim_touch(char *p, uint64_t bytes, uint64_t page) {
  for (uint64_t off = 0; off < bytes; off += page) ((volatile char *)p)[off] = 0;
}

static int sim_mem_commit(void *impl, uint64_t bytes, void **ret_ptr) {
  sim_t *s = impl;
  uint64_t size = sim_mem_round(impl, bytes);
  int huge = size >= SIM_HUGE;
  uint64_t extra = huge ? SIM_HUGE : 0;
  char *raw, *p;

  if (size == UINT64_MAX || size > SIZE_MAX - extra) return -ENOMEM;
  /* Over-map by one huge page so the region can start on a 2 MiB boundary:
   * THP only backs aligned 2 MiB ranges. */
  raw = mmap(NULL, size + extra, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return -ENOMEM;
  p = raw;
  if (huge) {
    uint64_t lead = (SIM_HUGE - (uintptr_t)raw % SIM_HUGE) % SIM_HUGE;
    p = raw + lead;
    if (lead) munmap(raw, lead);
    if (extra - lead) munmap(p + size, extra - lead);
    (void)madvise(p, size, MADV_HUGEPAGE);
  }
  if (madvise(p, size, MADV_POPULATE_WRITE) != 0) {
    if (errno == ENOMEM) {
      munmap(p, size);
      return -ENOMEM;
    }
    sim_touch(p, size, s->page);
  }
  *ret_ptr = p;
  return 0;
}

static void sim_mem_release(void *impl, void *ptr, uint64_t bytes) {
  munmap(ptr, sim_mem_round(impl, bytes));
}

static int sim_copy(void *impl, void *dst, const void *src, uint64_t bytes) {
  (void)impl;
  if (bytes) memcpy(dst, src, bytes);
  return 0;
}

const dev_ops_t dev_sim_ops = {
    .name = "sim",
    .open = sim_open,
    .close = sim_close,
    .core_count = sim_core_count,
    .mem_round = sim_mem_round,
    .mem_commit = sim_mem_commit,
    .mem_release = sim_mem_release,
    .copy_to_device = sim_copy,
    .copy_from_device = sim_copy,
};
