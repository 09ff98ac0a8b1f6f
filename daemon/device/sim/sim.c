/* SPDX-License-Identifier: Apache-2.0 */
/* sim.c — the CPU simulation device. */
#include "sim.h"
#include "quiet_thread.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define SIM_HUGE (UINT64_C(2) << 20)

/* Commits of less than this per thread use fewer threads. */
#define SIM_MIN_PART (UINT64_C(64) << 20)
#define SIM_MAX_COMMIT_THREADS 16u

typedef struct sim {
  uint32_t cores;
  uint32_t commit_threads; /* cores, at most the CPUs online */
  uint64_t page;
  /* The CPUs of the thread that opened the device, for the commit threads:
   * a thread inherits its creator's mask, and the device thread may be
   * pinned to one CPU for its wake-up (daemon/dispatch.c) when it commits,
   * which put both commit threads on one vCPU (measured: prewarm with 2
   * threads 0.33 s instead of 0.17 s). */
  cpu_set_t cpus;
  bool have_cpus;
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
  s->have_cpus = pthread_getaffinity_np(pthread_self(), sizeof s->cpus, &s->cpus) == 0;
  {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t n = cores;
    if (online > 0 && (uint64_t)online < n) n = (uint32_t)online;
    if (n > SIM_MAX_COMMIT_THREADS) n = SIM_MAX_COMMIT_THREADS;
    s->commit_threads = n ? n : 1;
  }
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

/* One commit thread's part of a region. */
typedef struct sim_part {
  char *p;
  uint64_t bytes, page;
  int err; /* 0 or an errno */
  pthread_t thread;
} sim_part_t;

/* Have the kernel fault every page of the part in (MADV_POPULATE_WRITE: no
 * trap per page, unlike touching them). */
static void *sim_populate(void *arg) {
  sim_part_t *part = arg;
  part->err = 0;
  if (madvise(part->p, part->bytes, MADV_POPULATE_WRITE) != 0) {
    if (errno == ENOMEM || errno == EFAULT || errno == EHWPOISON)
      part->err = ENOMEM;
    else
      sim_touch(part->p, part->bytes, part->page); /* EINVAL: an older kernel */
  }
  return NULL;
}

/* Commit [p, p + size) with up to s->commit_threads threads, each taking a
 * disjoint part: most of a cold commit is page faults in the hypervisor,
 * and those run in parallel on the vCPUs.  0 or -ENOMEM. */
static int sim_populate_parallel(sim_t *s, char *p, uint64_t size) {
  sim_part_t parts[SIM_MAX_COMMIT_THREADS];
  bool started[SIM_MAX_COMMIT_THREADS];
  pthread_attr_t attr;
  uint32_t n = s->commit_threads;
  uint64_t per, off = 0;
  int rc = 0;

  if (size / SIM_MIN_PART < n) n = (uint32_t)(size / SIM_MIN_PART);
  if (n < 1) n = 1;
  per = (size / n + SIM_HUGE - 1) / SIM_HUGE * SIM_HUGE;
  for (uint32_t i = 0; i < n; i++) {
    parts[i].p = p + off;
    parts[i].bytes = i == n - 1 || size - off < per ? size - off : per;
    parts[i].page = s->page;
    off += parts[i].bytes;
  }
  /* Parts 0..n-2 on threads of their own (or here, if one cannot start),
   * the last one here. */
  pthread_attr_init(&attr);
  if (s->have_cpus) pthread_attr_setaffinity_np(&attr, sizeof s->cpus, &s->cpus);
  for (uint32_t i = 0; i < n; i++) {
    started[i] = i < n - 1 && quiet_thread_create(&parts[i].thread, &attr, sim_populate, &parts[i]) == 0;
    if (!started[i]) sim_populate(&parts[i]);
  }
  pthread_attr_destroy(&attr);
  for (uint32_t i = 0; i < n; i++) {
    if (started[i]) pthread_join(parts[i].thread, NULL);
    if (parts[i].err) rc = -ENOMEM;
  }
  return rc;
}

static int sim_mem_commit(void *impl, uint64_t bytes, void **ret_ptr) {
  sim_t *s = impl;
  uint64_t size = sim_mem_round(impl, bytes);
  int huge = size >= SIM_HUGE;
  uint64_t extra = huge ? SIM_HUGE : 0;
  char *raw, *p;

  if (size == UINT64_MAX || size > SIZE_MAX - extra) return -ENOMEM;
  /* Over-map by one huge page so the region can start on a 2 MiB boundary
   * (the granule that mem_round promises). */
  raw = mmap(NULL, size + extra, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return -ENOMEM;
  p = raw;
  if (huge) {
    uint64_t lead = (SIM_HUGE - (uintptr_t)raw % SIM_HUGE) % SIM_HUGE;
    p = raw + lead;
    if (lead) munmap(raw, lead);
    if (extra - lead) munmap(p + size, extra - lead);
  }
  /* 4 KiB pages: measured cold (a fresh process after seconds of idle, the
   * VM having reported the free memory to the host), committing huge pages
   * is several times slower here (docs/runtime.md, "Committing the
   * arena"). */
  (void)madvise(p, size, MADV_NOHUGEPAGE);
  if (sim_populate_parallel(s, p, size) < 0) {
    munmap(p, size);
    return -ENOMEM;
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
