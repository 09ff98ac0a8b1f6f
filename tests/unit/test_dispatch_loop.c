/* SPDX-License-Identifier: Apache-2.0 */
/* test_dispatch_loop — the dispatcher's run on the loop (dispatch.h): a
 * short job with the device free runs inside dsp_submit on the loop,
 * completion included, after a gap as back to back; a job that is not
 * short, one submitted while another is in flight, the second of one turn
 * of the loop and one submitted from a completion go to the device
 * thread; a job run on the loop is still dropped past its deadline; a
 * draining dispatcher refuses it; dsp_create returns with its thread up. */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pto/errors.h>

#include "check_main.h"
#include "dispatch.h"

typedef struct test_job {
  dsp_job_t job; /* first: the callbacks cast back */
  bool short_job;
  sem_t *hold; /* run waits on it (NULL: none) */
  bool ran, completed;
  pthread_t ran_on;
  /* Submitted from this job's completion (back to back). */
  struct test_job *then;
  dsp_t *dsp;
} test_job_t;

static void run_job(dsp_job_t *job) {
  test_job_t *t = (test_job_t *)job;
  if (t->hold) sem_wait(t->hold);
  t->ran = true;
  t->ran_on = pthread_self();
}

static void complete_job(dsp_job_t *job) {
  test_job_t *t = (test_job_t *)job;
  t->completed = true;
  if (t->then) ck_assert_int_eq(dsp_submit(t->dsp, &t->then->job), 0);
}

static bool job_is_short(dsp_job_t *job) { return ((test_job_t *)job)->short_job; }

static void init_job(test_job_t *t, dsp_t *dsp, bool short_job) {
  memset(t, 0, sizeof(*t));
  t->job.run = run_job;
  t->job.complete = complete_job;
  t->job.is_short = job_is_short;
  t->short_job = short_job;
  t->dsp = dsp;
}

/* Run the loop until `t` is completed. */
static void wait_completed(uv_loop_t *loop, const test_job_t *t) {
  while (!t->completed) uv_run(loop, UV_RUN_ONCE);
}

/* Past the gap of a back-to-back client at the default spin window. */
static void idle_a_while(void) {
  struct timespec ts = {0, 20 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

/* Submit a short job: it runs and completes inside dsp_submit, on this
 * thread. */
static void runs_on_the_loop(dsp_t *dsp, test_job_t *t) {
  init_job(t, dsp, true);
  ck_assert_int_eq(dsp_submit(dsp, &t->job), 0);
  ck_assert(t->completed && t->ran);
  ck_assert_int_eq(t->job.outcome, DSP_RAN);
  ck_assert(pthread_equal(t->ran_on, pthread_self()));
}

/* One turn of the loop, as between two reads of a client's requests. */
static void next_turn(uv_loop_t *loop) { uv_run(loop, UV_RUN_NOWAIT); }

static void destroy(uv_loop_t *loop, dsp_t *dsp) {
  dsp_destroy(dsp);
  uv_run(loop, UV_RUN_DEFAULT);
  ck_assert_int_eq(uv_loop_close(loop), 0);
}

/* After a gap, and back to back: a client that sends its next request as
 * soon as it has the answer, in the next turn of the loop, well within the
 * widest spin window (10 ms). */
START_TEST(short_job_with_the_device_free_runs_on_the_loop) {
  uv_loop_t loop;
  dsp_t *dsp;
  test_job_t first, after_gap, back_to_back;
  uv_loop_init(&loop);
  ck_assert_int_eq(dsp_create(&loop, 16, &dsp), 0);
  runs_on_the_loop(dsp, &first);
  idle_a_while();
  next_turn(&loop);
  runs_on_the_loop(dsp, &after_gap);
  dsp_set_spin_us(dsp, DSP_MAX_SPIN_US);
  next_turn(&loop);
  runs_on_the_loop(dsp, &back_to_back);
  destroy(&loop, dsp);
}
END_TEST

START_TEST(long_or_unmarked_job_goes_to_the_device_thread) {
  uv_loop_t loop;
  dsp_t *dsp;
  test_job_t long_job, unmarked;
  uv_loop_init(&loop);
  ck_assert_int_eq(dsp_create(&loop, 16, &dsp), 0);
  init_job(&long_job, dsp, false);
  ck_assert_int_eq(dsp_submit(dsp, &long_job.job), 0);
  ck_assert(!long_job.completed); /* completions run on the loop, later */
  wait_completed(&loop, &long_job);
  ck_assert(long_job.ran && !pthread_equal(long_job.ran_on, pthread_self()));
  idle_a_while();
  init_job(&unmarked, dsp, true);
  unmarked.job.is_short = NULL;
  ck_assert_int_eq(dsp_submit(dsp, &unmarked.job), 0);
  wait_completed(&loop, &unmarked);
  ck_assert(!pthread_equal(unmarked.ran_on, pthread_self()));
  destroy(&loop, dsp);
}
END_TEST

START_TEST(short_job_waits_behind_a_running_one) {
  uv_loop_t loop;
  dsp_t *dsp;
  sem_t hold;
  test_job_t running, queued;
  uv_loop_init(&loop);
  sem_init(&hold, 0, 0);
  ck_assert_int_eq(dsp_create(&loop, 16, &dsp), 0);
  init_job(&running, dsp, false);
  running.hold = &hold;
  ck_assert_int_eq(dsp_submit(dsp, &running.job), 0);
  idle_a_while();
  init_job(&queued, dsp, true);
  ck_assert_int_eq(dsp_submit(dsp, &queued.job), 0);
  ck_assert(!queued.ran); /* not on the loop: the device is busy */
  sem_post(&hold);
  wait_completed(&loop, &queued);
  ck_assert(running.completed);
  ck_assert(!pthread_equal(queued.ran_on, pthread_self()));
  destroy(&loop, dsp);
  sem_destroy(&hold);
}
END_TEST

/* Requests read together (a pipelining client): the loop runs the first
 * and hands the next to the device thread. */
START_TEST(second_short_job_of_a_turn_goes_to_the_device_thread) {
  uv_loop_t loop;
  dsp_t *dsp;
  test_job_t first, second;
  uv_loop_init(&loop);
  ck_assert_int_eq(dsp_create(&loop, 16, &dsp), 0);
  runs_on_the_loop(dsp, &first);
  init_job(&second, dsp, true);
  ck_assert_int_eq(dsp_submit(dsp, &second.job), 0);
  ck_assert(!second.completed); /* its completion comes back through the loop */
  wait_completed(&loop, &second);
  ck_assert(second.ran && !pthread_equal(second.ran_on, pthread_self()));
  destroy(&loop, dsp);
}
END_TEST

/* Submitted from the completion of a job the loop ran: it waits for the
 * device thread rather than running inside that completion. */
START_TEST(short_job_submitted_from_a_completion_goes_to_the_device_thread) {
  uv_loop_t loop;
  dsp_t *dsp;
  test_job_t first, next;
  uv_loop_init(&loop);
  ck_assert_int_eq(dsp_create(&loop, 16, &dsp), 0);
  init_job(&first, dsp, true);
  init_job(&next, dsp, true);
  first.then = &next;
  ck_assert_int_eq(dsp_submit(dsp, &first.job), 0);
  ck_assert(first.completed && pthread_equal(first.ran_on, pthread_self()));
  ck_assert(!next.completed);
  wait_completed(&loop, &next);
  ck_assert(!pthread_equal(next.ran_on, pthread_self()));
  destroy(&loop, dsp);
}
END_TEST

START_TEST(expired_short_job_is_not_run_on_the_loop) {
  uv_loop_t loop;
  dsp_t *dsp;
  test_job_t late;
  uv_loop_init(&loop);
  ck_assert_int_eq(dsp_create(&loop, 16, &dsp), 0);
  init_job(&late, dsp, true);
  late.job.deadline_ns = 1; /* long past */
  ck_assert_int_eq(dsp_submit(dsp, &late.job), 0);
  ck_assert(late.completed && !late.ran);
  ck_assert_int_eq(late.job.outcome, DSP_EXPIRED);
  destroy(&loop, dsp);
}
END_TEST

START_TEST(draining_refuses_a_short_job) {
  uv_loop_t loop;
  dsp_t *dsp;
  test_job_t refused;
  uv_loop_init(&loop);
  ck_assert_int_eq(dsp_create(&loop, 16, &dsp), 0);
  dsp_drain(dsp);
  init_job(&refused, dsp, true);
  ck_assert_int_eq(dsp_submit(dsp, &refused.job), -PTO_E_SHUTTING_DOWN);
  ck_assert(!refused.ran && !refused.completed);
  destroy(&loop, dsp);
}
END_TEST

/* Whether a thread of this process is named `name` (the device thread
 * names itself first thing). */
static bool thread_named(const char *name) {
  char path[64], comm[32];
  bool found = false;
  struct dirent *e;
  DIR *dir = opendir("/proc/self/task");
  ck_assert_ptr_nonnull(dir);
  while (!found && (e = readdir(dir))) {
    FILE *f;
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "/proc/self/task/%.16s/comm", e->d_name);
    if (!(f = fopen(path, "r"))) continue;
    found = fgets(comm, sizeof comm, f) && strncmp(comm, name, strlen(name)) == 0 &&
            comm[strlen(name)] == '\n';
    fclose(f);
  }
  closedir(dir);
  return found;
}

/* dsp_create returns once the device thread has started and warmed up:
 * nothing of its start-up runs beside the first requests.  On one CPU the
 * new thread cannot run before this one blocks, so without the wait it
 * has not even named itself yet. */
START_TEST(create_returns_with_the_device_thread_up) {
  uv_loop_t loop;
  dsp_t *dsp;
  cpu_set_t one, all;
  ck_assert_int_eq(sched_getaffinity(0, sizeof all, &all), 0);
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &all)) {
      CPU_SET(c, &one);
      break;
    }
  ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
  uv_loop_init(&loop);
  ck_assert_int_eq(dsp_create(&loop, 16, &dsp), 0);
  ck_assert_msg(thread_named("ptod-device"), "dsp_create returned before its thread started");
  ck_assert_int_eq(sched_setaffinity(0, sizeof all, &all), 0);
  destroy(&loop, dsp);
}
END_TEST

static Suite *dispatch_loop_suite(void) {
  Suite *s = suite_create("dispatch_loop");
  TCase *tc = tcase_create("dispatch_loop");
  tcase_add_test(tc, create_returns_with_the_device_thread_up);
  tcase_add_test(tc, short_job_with_the_device_free_runs_on_the_loop);
  tcase_add_test(tc, long_or_unmarked_job_goes_to_the_device_thread);
  tcase_add_test(tc, short_job_waits_behind_a_running_one);
  tcase_add_test(tc, second_short_job_of_a_turn_goes_to_the_device_thread);
  tcase_add_test(tc, short_job_submitted_from_a_completion_goes_to_the_device_thread);
  tcase_add_test(tc, expired_short_job_is_not_run_on_the_loop);
  tcase_add_test(tc, draining_refuses_a_short_job);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(dispatch_loop_suite)
