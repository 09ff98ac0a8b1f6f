/* SPDX-License-Identifier: Apache-2.0 */
/* conn_fds.c — a connection's passed file descriptors: those that came
 * with its bytes (SCM_RIGHTS), queued oldest first until a shm.register
 * takes them (srv_conn_take_fd, server.h). */
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "closer.h"
#include "server_internal.h"

static int pop_fd(srv_conn_t *conn, unsigned *ret_batch) {
  int fd = conn->fds[0];
  *ret_batch = conn->fd_batch[0];
  conn->nfds--;
  if (fd >= 0) conn->srv->parked_fds--;
  memmove(conn->fds, conn->fds + 1, conn->nfds * sizeof(conn->fds[0]));
  memmove(conn->fd_batch, conn->fd_batch + 1, conn->nfds * sizeof(conn->fd_batch[0]));
  return fd;
}

int srv_conn_take_fd(srv_conn_t *conn, unsigned *ret_together) {
  unsigned batch, other;
  int fd;
  *ret_together = 0;
  if (conn->nfds == 0) return -1;
  fd = pop_fd(conn, &batch);
  *ret_together = 1;
  while (conn->nfds > 0 && conn->fd_batch[0] == batch) {
    int extra = pop_fd(conn, &other);
    if (extra >= 0) close(extra); /* a memfd: its close never waits */
    (*ret_together)++;
  }
  return fd;
}

/* Queue a received fd.  Only a memfd is kept: any other kind is closed
 * now, off the loop (closer.h: its close may wait on the client), and its
 * place in the queue holds SRV_FD_REFUSED so the request it came with is
 * answered as if it had been taken. */
static void park_fd(srv_conn_t *conn, int fd) {
  if (!closer_is_memfd(fd)) {
    closer_close(fd);
    fd = SRV_FD_REFUSED;
  }
  conn->fd_batch[conn->nfds] = conn->batches;
  conn->fds[conn->nfds++] = fd;
  if (fd >= 0) conn->srv->parked_fds++;
}

void conn_drop_parked_fds(srv_conn_t *conn) {
  while (conn->nfds > 0) {
    int fd = conn->fds[--conn->nfds];
    if (fd < 0) continue;
    close(fd);
    conn->srv->parked_fds--;
  }
}

const char *conn_park_rights(srv_conn_t *conn, struct msghdr *mh) {
  const char *bad = NULL;
  conn->batches++;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
    size_t n;
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (conn->nfds < SRV_MAX_FDS) {
        park_fd(conn, fd);
      } else {
        closer_close(fd);
        bad = "it passed more than 8 file descriptors that no shm.register took";
      }
    }
  }
  if (mh->msg_flags & MSG_CTRUNC)
    bad = "the daemon could not take the file descriptors it passed (MSG_CTRUNC: more "
          "than 253 at once, or the daemon is out of file descriptors); pass one per "
          "shm.register";
  return bad;
}
