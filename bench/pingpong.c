/* pingpong.c: the busy-poll reference for bench/peers.sh — a
 * minimal spinning TCP ping-pong, 1-byte messages, one connection, both
 * sides spinning on non-blocking recv (no epoll, no clock in the loop).
 *   pingpong server PORT CPU                one connection, echoes until EOF
 *   pingpong client HOST PORT CPU SECONDS   prints the rate after SECONDS
 * Each side prints its CPU µs per transaction (getrusage; ~1 CPU by design).
 * Build: cc -O2 -o pingpong pingpong.c */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what) { perror(what); exit(1); }

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu_s(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/* Spins on a non-blocking recv of one byte; 0 at EOF. */
static int spin_recv(int fd, char *c) {
    for (;;) {
        ssize_t n = recv(fd, c, 1, MSG_DONTWAIT);
        if (n == 1) return 1;
        if (n == 0) return 0;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) die("recv");
    }
}

int main(int argc, char **argv) {
    int server = argc == 4 && !strcmp(argv[1], "server");
    if (!server && !(argc == 6 && !strcmp(argv[1], "client"))) {
        fprintf(stderr, "usage: %s server PORT CPU | client HOST PORT CPU SECONDS\n", argv[0]);
        return 2;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[server ? 3 : 4]), &set);
    if (sched_setaffinity(0, sizeof set, &set)) die("sched_setaffinity");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[server ? 2 : 3]))};
    inet_pton(AF_INET, server ? "0.0.0.0" : argv[2], &a.sin_addr);
    int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (server) {
        if (bind(fd, (void *)&a, sizeof a) || listen(fd, 1)) die("listen");
        fd = accept(fd, NULL, NULL);
    } else if (connect(fd, (void *)&a, sizeof a)) die("connect");
    if (fd < 0) die("accept");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char c = 0;
    long n = 0;
    double cpu0 = cpu_s(), t0 = now_s(), end = t0 + (server ? 0 : atof(argv[5]));
    if (server) {
        while (spin_recv(fd, &c) && send(fd, &c, 1, 0) == 1) n++;
        printf("server transactions=%ld cpu_us_per_tr=%.3f\n", n, 1e6 * (cpu_s() - cpu0) / (n ? n : 1));
        return 0;
    }
    /* Check the clock every 1024 round trips only: the loop is send + spin. */
    while ((n & 1023) || now_s() < end) {
        if (send(fd, &c, 1, 0) != 1) die("send");
        if (!spin_recv(fd, &c)) die("server closed");
        n++;
    }
    double s = now_s() - t0;
    printf("client transactions=%ld seconds=%.3f rate_tps=%.1f cpu_us_per_tr=%.3f\n", n, s, n / s,
           1e6 * (cpu_s() - cpu0) / n);
    return 0;
}
