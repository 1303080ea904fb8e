/*
 * delayshim: userspace fixed delay for kernels without netem.
 * Binds NFQUEUE queue Q, receives packet metadata only (NFQNL_COPY_META), and issues
 * NF_ACCEPT for each packet DELAY microseconds after it arrived, strictly in arrival order.
 * usage: delayshim -q QUEUE -d DELAY_US
 * Runs SCHED_FIFO when permitted. Queue is configured fail-open.
 * SIGUSR1 (and exit): one line on stderr, packets released and how many were released > 1 ms and > 5 ms after their
 * due time (the host did not schedule us), then the counters restart.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

#define RING 65536

static uint32_t ids[RING];
static uint64_t due[RING];
static unsigned head, tail; /* pending = tail - head */
static uint64_t delay_ns;
static volatile sig_atomic_t stop, report;
/* lateness of each release (release time - due time): how faithful the emulated delay was; on SIGUSR1 and at exit one
 * line on stderr, then the counters restart (a caller brackets a measurement with SIGUSR1) */
static uint64_t n_rel, n_late1, n_late5, max_late_ns;
static void account(uint64_t t, uint64_t d) {
    uint64_t late = t > d ? t - d : 0;
    n_rel++;
    if (late > 1000000ull) n_late1++;
    if (late > 5000000ull) n_late5++;
    if (late > max_late_ns) max_late_ns = late;
}
static void print_report(void) {
    fprintf(stderr, "delayshim: released %llu late_over_1ms %llu late_over_5ms %llu max_late_us %llu\n",
            (unsigned long long)n_rel, (unsigned long long)n_late1, (unsigned long long)n_late5,
            (unsigned long long)(max_late_ns / 1000ull));
    fflush(stderr);
    n_rel = n_late1 = n_late5 = max_late_ns = 0;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int cb(struct nfq_q_handle *qh, struct nfgenmsg *m, struct nfq_data *nfa, void *data) {
    (void)m; (void)data;
    struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
    if (!ph) return 0;
    uint32_t id = ntohl(ph->packet_id);
    if (tail - head >= RING) { /* full: pass immediately rather than stall */
        nfq_set_verdict(qh, id, NF_ACCEPT, 0, NULL);
        return 0;
    }
    ids[tail % RING] = id;
    due[tail % RING] = now_ns() + delay_ns;
    tail++;
    return 0;
}

static void on_sig(int s) { (void)s; stop = 1; }
static void on_usr1(int s) { (void)s; report = 1; }

int main(int argc, char **argv) {
    int qnum = 0, opt;
    long delay_us = -1;
    while ((opt = getopt(argc, argv, "q:d:")) != -1) {
        if (opt == 'q') qnum = atoi(optarg);
        else if (opt == 'd') delay_us = atol(optarg);
        else { fprintf(stderr, "usage: delayshim -q QUEUE -d DELAY_US\n"); return 2; }
    }
    if (delay_us < 0) { fprintf(stderr, "usage: delayshim -q QUEUE -d DELAY_US\n"); return 2; }
    delay_ns = (uint64_t)delay_us * 1000ull;

    struct sched_param sp = { .sched_priority = 50 };
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
        fprintf(stderr, "delayshim: SCHED_FIFO not available: %s\n", strerror(errno));

    struct nfq_handle *h = nfq_open();
    if (!h) { perror("nfq_open"); return 1; }
    struct nfq_q_handle *qh = nfq_create_queue(h, (uint16_t)qnum, &cb, NULL);
    if (!qh) { perror("nfq_create_queue"); return 1; }
    if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) { perror("nfq_set_mode"); return 1; }
    nfq_set_queue_maxlen(qh, RING);
    nfq_set_queue_flags(qh, NFQA_CFG_F_FAIL_OPEN, NFQA_CFG_F_FAIL_OPEN);
    int fd = nfq_fd(h);
    int rcv = 8 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof rcv);

    signal(SIGTERM, on_sig);
    signal(SIGINT, on_sig);
    signal(SIGUSR1, on_usr1);
    char buf[65536] __attribute__((aligned));
    while (!stop) {
        if (report) { report = 0; print_report(); }
        uint64_t t = now_ns();
        while (head != tail && due[head % RING] <= t) {
            account(t, due[head % RING]);
            nfq_set_verdict(qh, ids[head % RING], NF_ACCEPT, 0, NULL);
            head++;
        }
        int timeout = -1;
        if (head != tail) {
            uint64_t wait = due[head % RING] - t;
            timeout = (int)(wait / 1000000ull); /* ms; 0 → busy-ish poll for sub-ms */
        }
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int r = poll(&p, 1, timeout);
        if (r < 0) { if (errno == EINTR) continue; perror("poll"); break; }
        if (r == 0 && head != tail) {
            /* sub-millisecond remainder: sleep precisely */
            uint64_t d = due[head % RING];
            struct timespec ts = { .tv_sec = (time_t)(d / 1000000000ull), .tv_nsec = (long)(d % 1000000000ull) };
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
            continue;
        }
        if (p.revents & POLLIN) {
            int n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n > 0) nfq_handle_packet(h, buf, n);
            else if (n < 0 && errno == ENOBUFS) fprintf(stderr, "delayshim: ENOBUFS (packets lost)\n");
        }
    }
    /* release everything still held */
    while (head != tail) { nfq_set_verdict(qh, ids[head % RING], NF_ACCEPT, 0, NULL); head++; }
    print_report();
    nfq_destroy_queue(qh);
    nfq_close(h);
    return 0;
}
