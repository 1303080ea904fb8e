/*
 * delayshim: userspace fixed delay for kernels without netem.
 * Binds NFQUEUE queue Q, receives packet metadata only (NFQNL_COPY_META), and issues
 * NF_ACCEPT for each packet DELAY microseconds after it arrived, strictly in arrival order.
 * usage: delayshim -q QUEUE -d DELAY_US [-l LIMIT -m shared|delayline]
 * Runs SCHED_FIFO when permitted. Queue is configured fail-open.
 * SIGUSR1 (and exit): one line on stderr, packets released and how many were released > 1 ms and > 5 ms after their
 * due time (the host did not schedule us), packets dropped at the limit and the most packets held for one output
 * interface, then the counters restart.
 *
 * NetEm's queue limit (docs/netem-semantics.md, sections 2 and 6). netem_enqueue() drops a packet on ARRIVAL, before
 * its delay, when `sch->q.qlen >= sch->limit`; what that counter holds depends on how netem is chained with the rate
 * limiter. Per output interface (the packet's outdev), with LIMIT > 0:
 *   -m shared     recipe A (TBF at the root, netem its child; this repo's VM switches, Mininet's TCLink): the packets
 *                 in their delay here PLUS the packets queued in the interface's egress qdisc (its root qdisc's
 *                 qlen, read from the kernel over rtnetlink at each arrival) count towards LIMIT: one shared
 *                 100-packet buffer for delay line and standing queue.
 *   -m delayline  recipe B (netem at the root, the rate limiter its child), kernels before the 2026 "include
 *                 reordered packets" fix: only the packets in their delay count; the egress qdisc's own limit bounds
 *                 the standing queue behind.
 * A packet dropped here gets NF_DROP at once (netem's drop at arrival). Random loss stays where netem draws it:
 * before the limit check (the iptables statistic DROP that precedes the NFQUEUE rule). Without -l nothing is
 * dropped (the "fifo after delay" of earlier recordings).
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
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/gen_stats.h>
#include <linux/pkt_sched.h>
#include <sys/socket.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

#define RING 65536
#define NDEV 64                      /* output interfaces tracked (a switch has two) */

static uint32_t ids[RING];
static uint64_t due[RING];
static uint32_t outdev[RING];        /* output interface of each held packet (0: unknown) */
static unsigned head, tail; /* pending = tail - head */
static uint64_t delay_ns;
static volatile sig_atomic_t stop, report;
/* lateness of each release (release time - due time): how faithful the emulated delay was; on SIGUSR1 and at exit one
 * line on stderr, then the counters restart (a caller brackets a measurement with SIGUSR1) */
static uint64_t n_rel, n_late1, n_late5, max_late_ns;
/* the netem limit: LIMIT packets per output interface, counted as MODE says (see the header) */
enum { MODE_NONE, MODE_SHARED, MODE_DELAYLINE };
static int mode = MODE_NONE;
static long limit_pkts;
static uint32_t dev_key[NDEV];       /* ifindex of slot i (0: free) */
static unsigned held[NDEV];          /* packets of that interface in their delay here */
static uint64_t n_limit_drop, max_count;
static int rtnl = -1;                /* rtnetlink socket for the egress qdisc's qlen */
static unsigned rtnl_seq;
static void account(uint64_t t, uint64_t d) {
    uint64_t late = t > d ? t - d : 0;
    n_rel++;
    if (late > 1000000ull) n_late1++;
    if (late > 5000000ull) n_late5++;
    if (late > max_late_ns) max_late_ns = late;
}
static void print_report(void) {
    fprintf(stderr, "delayshim: released %llu late_over_1ms %llu late_over_5ms %llu max_late_us %llu "
            "dropped_at_limit %llu max_counted %llu\n",
            (unsigned long long)n_rel, (unsigned long long)n_late1, (unsigned long long)n_late5,
            (unsigned long long)(max_late_ns / 1000ull), (unsigned long long)n_limit_drop,
            (unsigned long long)max_count);
    fflush(stderr);
    n_rel = n_late1 = n_late5 = max_late_ns = 0;
    n_limit_drop = max_count = 0;
}

/* slot of interface ifindex in held[] (allocated on first use); -1 when the table is full or ifindex is 0 */
static int dev_slot(uint32_t ifindex) {
    if (!ifindex) return -1;
    for (int i = 0; i < NDEV; i++) {
        unsigned k = (ifindex + (unsigned)i) % NDEV;
        if (dev_key[k] == ifindex) return (int)k;
        if (!dev_key[k]) { dev_key[k] = ifindex; return (int)k; }
    }
    return -1;
}

/* qlen of the root qdisc of interface ifindex (packets in it and its children: tbf counts its child's packets),
 * from an RTM_GETQDISC dump of this namespace; -1 on error (the packet is then judged on the delay line alone) */
static long egress_qlen(uint32_t ifindex) {
    struct { struct nlmsghdr nh; struct tcmsg tc; } req;
    memset(&req, 0, sizeof req);
    req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct tcmsg));
    req.nh.nlmsg_type = RTM_GETQDISC;
    req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.nh.nlmsg_seq = ++rtnl_seq;
    req.tc.tcm_family = AF_UNSPEC;
    req.tc.tcm_ifindex = (int)ifindex;
    if (send(rtnl, &req, req.nh.nlmsg_len, 0) < 0) return -1;
    long qlen = -1;
    char buf[32768] __attribute__((aligned(4)));
    for (;;) {
        ssize_t n = recv(rtnl, buf, sizeof buf, 0);
        if (n < 0) { if (errno == EINTR) continue; return -1; }
        for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (unsigned)n); nh = NLMSG_NEXT(nh, n)) {
            if (nh->nlmsg_seq != rtnl_seq) continue;
            if (nh->nlmsg_type == NLMSG_DONE) return qlen;
            if (nh->nlmsg_type == NLMSG_ERROR) return -1;
            if (nh->nlmsg_type != RTM_NEWQDISC) continue;
            struct tcmsg *tc = NLMSG_DATA(nh);
            if ((uint32_t)tc->tcm_ifindex != ifindex || tc->tcm_parent != TC_H_ROOT) continue;
            int alen = (int)(nh->nlmsg_len - NLMSG_LENGTH(sizeof *tc));
            for (struct rtattr *a = (struct rtattr *)((char *)tc + NLMSG_ALIGN(sizeof *tc)); RTA_OK(a, alen);
                 a = RTA_NEXT(a, alen)) {
                if (a->rta_type == TCA_STATS2) {
                    int slen = (int)RTA_PAYLOAD(a);
                    for (struct rtattr *b = RTA_DATA(a); RTA_OK(b, slen); b = RTA_NEXT(b, slen))
                        if (b->rta_type == TCA_STATS_QUEUE && RTA_PAYLOAD(b) >= sizeof(struct gnet_stats_queue))
                            qlen = ((struct gnet_stats_queue *)RTA_DATA(b))->qlen;
                } else if (a->rta_type == TCA_STATS && qlen < 0 && RTA_PAYLOAD(a) >= sizeof(struct tc_stats)) {
                    qlen = ((struct tc_stats *)RTA_DATA(a))->qlen;
                }
            }
        }
    }
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
    uint32_t dev = nfq_get_outdev(nfa);
    int slot = mode != MODE_NONE ? dev_slot(dev) : -1;
    if (slot >= 0) {
        long count = (long)held[slot];
        if (mode == MODE_SHARED) {
            long q = egress_qlen(dev);
            if (q > 0) count += q;
        }
        if ((uint64_t)count > max_count) max_count = (uint64_t)count;
        if (count >= limit_pkts) { /* netem_enqueue(): qlen >= limit -> drop at arrival */
            nfq_set_verdict(qh, id, NF_DROP, 0, NULL);
            n_limit_drop++;
            return 0;
        }
        held[slot]++;
    }
    ids[tail % RING] = id;
    due[tail % RING] = now_ns() + delay_ns;
    outdev[tail % RING] = slot >= 0 ? dev : 0;
    tail++;
    return 0;
}

/* a held packet leaves its delay: the interface's count drops by one */
static void release_one(struct nfq_q_handle *qh) {
    unsigned i = head % RING;
    if (outdev[i]) {
        int slot = dev_slot(outdev[i]);
        if (slot >= 0 && held[slot]) held[slot]--;
    }
    nfq_set_verdict(qh, ids[i], NF_ACCEPT, 0, NULL);
    head++;
}

static void on_sig(int s) { (void)s; stop = 1; }
static void on_usr1(int s) { (void)s; report = 1; }

int main(int argc, char **argv) {
    int qnum = 0, opt;
    long delay_us = -1;
    const char *use = "usage: delayshim -q QUEUE -d DELAY_US [-l LIMIT_PKTS -m shared|delayline]\n";
    while ((opt = getopt(argc, argv, "q:d:l:m:")) != -1) {
        if (opt == 'q') qnum = atoi(optarg);
        else if (opt == 'd') delay_us = atol(optarg);
        else if (opt == 'l') limit_pkts = atol(optarg);
        else if (opt == 'm') {
            if (!strcmp(optarg, "shared")) mode = MODE_SHARED;
            else if (!strcmp(optarg, "delayline")) mode = MODE_DELAYLINE;
            else { fputs(use, stderr); return 2; }
        } else { fputs(use, stderr); return 2; }
    }
    if (delay_us < 0 || limit_pkts < 0 || (mode != MODE_NONE) != (limit_pkts > 0)) { fputs(use, stderr); return 2; }
    delay_ns = (uint64_t)delay_us * 1000ull;
    if (mode == MODE_SHARED) {
        rtnl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        if (rtnl < 0) { perror("delayshim: rtnetlink socket"); return 1; }
    }

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
            release_one(qh);
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
    while (head != tail) release_one(qh);
    print_report();
    nfq_destroy_queue(qh);
    nfq_close(h);
    return 0;
}
