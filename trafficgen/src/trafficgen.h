/* SPDX-License-Identifier: Apache-2.0
 * Shared definitions of ovsperf-trafficgen: ports, trial configuration and per-direction state.
 */
#ifndef OVSPERF_TRAFFICGEN_H
#define OVSPERF_TRAFFICGEN_H

#include <signal.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_udp.h>

#define RTE_LOGTYPE_TRAFFICGEN RTE_LOGTYPE_USER1
#define TG_LOG(level, ...) RTE_LOG(level, TRAFFICGEN, __VA_ARGS__)

#define TG_MAX_PORTS 2
#define TG_MAX_QUEUES 8
#define TG_MAX_STREAMS 2
#define TG_BURST 32
#define TG_MAGIC 0x4f565047u	/* "OVPG" */
#define TG_HDR_LEN (RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr))
#define TG_JUMBO_FRAME_LEN 9018
#define TG_MAX_FLOWS_SRC_PORT 64000	/* UDP source ports 1024..65023 */
#define TG_MAX_FLOWS_SRC_IP 65536	/* the low 16 bits of the IPv4 source address */
#define TG_MAX_FLOWS (1u << 20)		/* "tuple": 65536 source addresses x 16 UDP destination ports */
#define TG_MAX_MIX 16			/* frame sizes in one mix */
#define TG_MAX_MIX_PERIOD 4096		/* sum of a mix's weights: the interleaving pattern's length */
#define TG_UDP_PORT_BASE 1024
#define TG_WARMUP_GEN_BIT 0x80
#define TG_VXLAN_UDP_PORT 4789		/* RFC 7348 section 5 */
#define TG_GENEVE_UDP_PORT 6081		/* RFC 8926 section 3.3 */
#define TG_TUNNEL_HLEN 8		/* VXLAN header; Geneve base header without options */
#define TG_TUNNEL_SRC_PORT_BASE 49152	/* outer UDP source ports 49152 + (flow & 0x3fff) */
/* Outer Ethernet + IPv4 + UDP + tunnel header: 50 B in front of the inner frame. */
#define TG_TUNNEL_OVERHEAD (RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr) + \
			    sizeof(struct rte_udp_hdr) + TG_TUNNEL_HLEN)

/* The 18-byte trailer right after the UDP header; it fits a 64 B frame (60 B without FCS). */
struct tg_trailer {
	uint32_t magic;
	uint8_t tx_port;
	uint8_t gen;
	uint32_t seq;
	uint64_t tsc;
} __rte_packed;

#define TG_MIN_PKT_LEN (TG_HDR_LEN + sizeof(struct tg_trailer))

enum tg_tunnel_type {
	TG_TUNNEL_NONE,
	TG_TUNNEL_VXLAN,
	TG_TUNNEL_GENEVE,
};

/* Outer headers of tunnel-encapsulated frames (trial field 'tunnel'): what a remote VTEP sends. */
struct tg_tunnel_cfg {
	enum tg_tunnel_type type;	/* TG_TUNNEL_NONE: plain frames */
	uint32_t vni;			/* 24-bit VXLAN/Geneve network identifier */
	struct rte_ether_addr dst_mac;	/* the DUT's VTEP (its underlay bridge) */
	struct rte_ether_addr src_mac;
	bool src_mac_set;		/* else the sending port's MAC */
	uint32_t src_ip;		/* network order: the remote VTEP's address */
	uint32_t dst_ip;		/* network order: the DUT's VTEP address */
};

enum tg_flow_field {
	TG_FLOW_SRC_PORT,
	TG_FLOW_SRC_IP,
	TG_FLOW_TUPLE,
};

/* One trial as requested on the protocol (docs/trafficgen.md). */
struct tg_trial_cfg {
	uint32_t frame_size;		/* [B] including FCS; 0 with a mix */
	uint32_t nb_mix;		/* frame sizes in the mix; 0 = one size */
	uint32_t mix_size[TG_MAX_MIX];	/* [B] including FCS */
	uint32_t mix_weight[TG_MAX_MIX];	/* frames of this size per mix period */
	double rate_pps;		/* per direction; 0 = unpaced */
	double duration_s;
	double warmup_s;
	double drain_s;
	double link_timeout_s;
	double tx_tolerance;		/* [1] */
	uint32_t flows;
	uint32_t burst;			/* 0 = from rate */
	enum tg_flow_field flow_field;
	bool bidirectional;
	bool loopback;
	bool retry_on_full;
	bool drain_early_exit;		/* end the drain once every sent frame arrived */
	bool latency_histogram;		/* reply with each direction's latency histogram */
	struct tg_tunnel_cfg tunnel;	/* send every frame encapsulated (decap tests) */
};

/* One direction of a trial. TX fields are written by the lcore that owns tx_port, RX fields by
 * the lcore that owns rx_port; tx_done publishes the TX counters to the RX lcore. */
struct tg_stream {
	uint16_t tx_port;
	uint16_t rx_port;
	struct rte_mempool *pool;
	uint8_t tmpl[TG_TUNNEL_OVERHEAD + TG_HDR_LEN];
	uint16_t inner_off;		/* offset of the inner frame: 0, or TG_TUNNEL_OVERHEAD */
	uint16_t hdr_len;		/* inner_off + TG_HDR_LEN: the trailer follows */
	struct tg_tunnel_cfg tunnel;	/* outer headers when inner_off > 0 */
	uint32_t cksum_base;		/* template's IPv4 checksum sum without length and source */
	uint16_t pkt_len;		/* frame size without FCS [B] */
	uint16_t burst;
	uint32_t flows;
	enum tg_flow_field flow_field;
	bool retry_on_full;
	bool warming;
	uint8_t gen_tx;			/* generation in the frames of the current phase */
	double pkts_per_cycle;		/* 0 = unpaced */
	uint64_t origin_tsc;		/* schedule origin of the current phase */
	uint64_t phase_end_tsc;		/* unpaced only: when the phase ends */
	uint64_t measure_unpaced_cycles;	/* unpaced only: length of the counted phase */
	uint64_t give_up_tsc;		/* the phase stops offering frames at this time */
	uint64_t progress_tsc;		/* last time frames left us or none were due */
	uint64_t slack_cycles;		/* stall limit; grace after 2x nominal time */
	bool tx_stalled;		/* due frames did not move for slack_cycles */
	uint64_t phase_planned;		/* frames to offer in the current phase */
	uint64_t measure_planned;	/* frames to offer in the counted phase */
	uint64_t seq;			/* next sequence number in the current phase */
	uint32_t flow;			/* seq % flows, kept incrementally */
	uint32_t nb_mix;		/* 0 = every frame is pkt_len */
	uint16_t mix_len[TG_MAX_MIX];	/* frame size without FCS [B] per mix entry */
	uint8_t *pattern;		/* mix entry of the frame with seq % pattern_len */
	uint32_t pattern_len;
	uint32_t pattern_pos;		/* seq % pattern_len, kept incrementally */
	uint64_t mix_tx[TG_MAX_MIX];	/* counted frames offered per mix entry (sent or refused) */
	uint64_t mix_rx[TG_MAX_MIX];	/* distinct counted frames received per mix entry */
	uint8_t flow_q;			/* flow % nb_queues, kept incrementally */
	struct rte_mbuf *pending[TG_BURST];
	uint8_t pending_q[TG_BURST];	/* TX queue of each pending frame */
	uint16_t n_pending;
	uint16_t nb_queues;		/* frame of flow f goes to TX queue f % nb_queues */
	/* TX results */
	uint64_t warmup_offered;
	uint64_t tx_sent;
	uint64_t tx_refused;
	uint64_t tx_start_tsc;
	uint64_t tx_end_tsc;
	int tx_done;			/* atomic */
	/* RX state and results */
	uint64_t *bitmap;
	uint64_t bitmap_bits;
	uint64_t rx_distinct;
	uint64_t rx_duplicate;
	uint64_t rx_reordered;
	uint64_t rx_next_expected;	/* highest sequence number seen + 1 */
	uint64_t lat_min;
	uint64_t lat_max;
	uint64_t lat_sum;
	uint64_t ns_mult;		/* ns per TSC cycle, 32.32 fixed point (hist.h) */
	uint64_t *hist;			/* latency histogram [ns], HdrHistogram layout (hist.h) */
};

struct tg_port {
	uint16_t port_id;
	struct rte_ether_addr mac;
	struct rte_mempool *pool;
	uint16_t nb_rxd;		/* RX descriptors per queue, as configured */
	uint16_t nb_txd;		/* TX descriptors per queue, as configured */
	uint64_t rx_foreign;		/* frames not ours, or ours on the wrong port */
	int link_down_seen;		/* atomic: link went down during the trial */
};

struct tg_app {
	struct tg_port ports[TG_MAX_PORTS];
	uint16_t nb_ports;
	uint16_t nb_queues;		/* RX and TX queues per port */
	bool jumbo;
	uint64_t tsc_hz;
	uint8_t trial_gen;
};

extern volatile sig_atomic_t force_quit;

/* trial.c */
int tg_trial_run(struct tg_app *app, const struct tg_trial_cfg *cfg, char *err, size_t errlen,
		 struct tg_stream *streams, unsigned int *nb_streams, uint64_t *warmup_tx);
void tg_trial_free(struct tg_stream *streams, unsigned int nb_streams);
bool tg_link_up(uint16_t port_id);
int tg_link_wait(struct tg_app *app, double timeout_s, char *err, size_t errlen);

/* protocol.c */
int tg_protocol_loop(struct tg_app *app);
void tg_print_ready(struct tg_app *app);

#endif /* OVSPERF_TRAFFICGEN_H */
