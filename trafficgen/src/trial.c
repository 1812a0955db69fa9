/* SPDX-License-Identifier: Apache-2.0
 * The packet path: one paced, counted trial over one or two directions (docs/trafficgen.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_memcpy.h>

#include "hist.h"
#include "trafficgen.h"

#define TG_ABORT_SIGNAL 1
#define TG_ABORT_LINK 2
#define TG_LINK_CHECK_HZ 50		/* link checks per second during a trial */
#define TG_AUTO_BURST_S 4e-6		/* aim: one burst every 4 us */
#define TG_UNPACED_MAX_PPS 50e6		/* sizes the sequence space of unpaced trials */
#define TG_UNPACED_MAX_S 10.0
#define TG_FLUSH_MAX_S 0.05

/* What one lcore does during a trial: TX of the streams leaving its ports, RX on its ports. */
struct tg_job {
	struct tg_app *app;
	struct tg_stream *streams;
	unsigned int nb_streams;
	uint32_t port_mask;		/* bit i: app->ports[i] is served by this lcore */
	uint64_t start_tsc;
	uint64_t drain_cycles;
	bool drain_early_exit;
	uint8_t gen;
};

static int trial_abort;			/* atomic: TG_ABORT_* */
static int abort_port = -1;		/* port whose link went down */

bool
tg_link_up(uint16_t port_id)
{
	struct rte_eth_link link;

	memset(&link, 0, sizeof(link));
	if (rte_eth_link_get_nowait(port_id, &link) != 0)
		return false;
	return link.link_status == RTE_ETH_LINK_UP;
}

/* Write the outer headers of a tunnel frame of len bytes (without FCS) at d: Ethernet, IPv4, UDP
 * to port 4789 (VXLAN, RFC 7348 section 5) or 6081 (Geneve, RFC 8926 section 3: version 0, no
 * options, protocol type 0x6558 "Transparent Ethernet Bridging"), and the 8-byte tunnel header
 * with the VNI. The outer IPv4 checksum is left for the caller. */
static void
tunnel_headers(const struct tg_tunnel_cfg *tun, const struct rte_ether_addr *src_mac, uint8_t *d,
	       uint16_t len)
{
	struct rte_ether_hdr *eth = (struct rte_ether_hdr *)d;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
	uint8_t *hdr = (uint8_t *)(udp + 1);

	rte_ether_addr_copy(&tun->dst_mac, &eth->dst_addr);
	rte_ether_addr_copy(tun->src_mac_set ? &tun->src_mac : src_mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(len - RTE_ETHER_HDR_LEN));
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->src_addr = tun->src_ip;
	ip->dst_addr = tun->dst_ip;
	ip->hdr_checksum = 0;
	udp->src_port = rte_cpu_to_be_16(TG_TUNNEL_SRC_PORT_BASE);
	udp->dst_port = rte_cpu_to_be_16(tun->type == TG_TUNNEL_GENEVE ? TG_GENEVE_UDP_PORT :
					 TG_VXLAN_UDP_PORT);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(len - RTE_ETHER_HDR_LEN -
						     sizeof(struct rte_ipv4_hdr)));
	udp->dgram_cksum = 0;	/* allowed over IPv4 (RFC 768; RFC 7348 section 5) */
	memset(hdr, 0, TG_TUNNEL_HLEN);
	if (tun->type == TG_TUNNEL_GENEVE) {
		hdr[2] = 0x65;	/* protocol type 0x6558 */
		hdr[3] = 0x58;
	} else {
		hdr[0] = 0x08;	/* I flag: the VNI is valid */
	}
	hdr[4] = (uint8_t)(tun->vni >> 16);
	hdr[5] = (uint8_t)(tun->vni >> 8);
	hdr[6] = (uint8_t)tun->vni;
}

static void
stream_template(struct tg_app *app, struct tg_stream *s, uint32_t frame_size,
		const struct tg_tunnel_cfg *tun)
{
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *udp;

	s->pkt_len = (uint16_t)(frame_size - RTE_ETHER_CRC_LEN);
	s->inner_off = tun->type == TG_TUNNEL_NONE ? 0 : TG_TUNNEL_OVERHEAD;
	s->hdr_len = (uint16_t)(s->inner_off + TG_HDR_LEN);
	s->tunnel = *tun;
	memset(s->tmpl, 0, sizeof(s->tmpl));
	if (s->inner_off) {
		struct rte_ipv4_hdr *outer = (struct rte_ipv4_hdr *)(s->tmpl + RTE_ETHER_HDR_LEN);

		tunnel_headers(tun, &app->ports[s->tx_port].mac, s->tmpl, s->pkt_len);
		outer->hdr_checksum = rte_ipv4_cksum(outer);
	}
	eth = (struct rte_ether_hdr *)(s->tmpl + s->inner_off);
	ip = (struct rte_ipv4_hdr *)(eth + 1);
	udp = (struct rte_udp_hdr *)(ip + 1);
	rte_ether_addr_copy(&app->ports[s->rx_port].mac, &eth->dst_addr);
	rte_ether_addr_copy(&app->ports[s->tx_port].mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(s->pkt_len - s->inner_off -
						       RTE_ETHER_HDR_LEN));
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	/* RFC 2544 appendix C.2.2 benchmarking addresses: 198.18.0.0/15. */
	ip->src_addr = rte_cpu_to_be_32(RTE_IPV4(198, 18 + s->tx_port, 0, 1));
	ip->dst_addr = rte_cpu_to_be_32(RTE_IPV4(198, 18 + s->rx_port, 128, 1));
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	{
		/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'). Keep ~HC minus the words a frame may
		 * change (total length, both halves of the source address); each frame adds its own. */
		uint32_t src = ip->src_addr;

		s->cksum_base = (uint16_t)~ip->hdr_checksum + (uint16_t)~ip->total_length +
			(uint16_t)~src + (uint16_t)~(src >> 16);
	}
	udp->src_port = rte_cpu_to_be_16(TG_UDP_PORT_BASE);
	udp->dst_port = rte_cpu_to_be_16(TG_UDP_PORT_BASE);
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(s->pkt_len - s->inner_off - RTE_ETHER_HDR_LEN -
						     sizeof(struct rte_ipv4_hdr)));
	udp->dgram_cksum = 0;
}

/* Make frame d (its IPv4 header at ip, UDP at udp) belong to flow s->flow: the UDP source port,
 * the IPv4 source address, or (tuple) the source address's low 16 bits and the UDP destination
 * port (flow >> 16). Return true when the IPv4 header changed (its checksum is then stale). */
static inline bool
set_flow(const struct tg_stream *s, struct rte_ipv4_hdr *ip, struct rte_udp_hdr *udp)
{
	switch (s->flow_field) {
	case TG_FLOW_SRC_PORT:
		udp->src_port = rte_cpu_to_be_16((uint16_t)(TG_UDP_PORT_BASE + s->flow));
		return false;
	case TG_FLOW_SRC_IP:
		ip->src_addr = rte_cpu_to_be_32(rte_be_to_cpu_32(ip->src_addr) + s->flow);
		return true;
	case TG_FLOW_TUPLE:
	default:
		ip->src_addr = rte_cpu_to_be_32((rte_be_to_cpu_32(ip->src_addr) & 0xffff0000u) |
						(s->flow & 0xffffu));
		udp->dst_port = rte_cpu_to_be_16((uint16_t)(TG_UDP_PORT_BASE + (s->flow >> 16)));
		return true;
	}
}

/* The mix entry of a frame of len bytes (without FCS); nb_mix when none (not ours). */
static inline uint32_t
mix_entry(const struct tg_stream *s, uint32_t len)
{
	uint32_t k;

	for (k = 0; k < s->nb_mix; k++)
		if (s->mix_len[k] == len)
			break;
	return k;
}

static inline void
build_burst(struct tg_stream *s, struct rte_mbuf **m, uint8_t *q, uint16_t n, uint64_t tsc)
{
	uint16_t i;

	for (i = 0; i < n; i++) {
		uint8_t *d = rte_pktmbuf_mtod(m[i], uint8_t *);
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(d + s->inner_off +
								  RTE_ETHER_HDR_LEN);
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
		struct tg_trailer *t = (struct tg_trailer *)(d + s->hdr_len);
		uint16_t len = s->pkt_len;
		bool ip_changed = false;

		rte_memcpy(d, s->tmpl, s->hdr_len);
		q[i] = s->flow_q;
		if (s->nb_mix > 0) {
			/* The mix interleaved frame by frame: entry pattern[seq % pattern_len]. */
			uint8_t k = s->pattern[s->pattern_pos];

			if (++s->pattern_pos == s->pattern_len)
				s->pattern_pos = 0;
			len = s->mix_len[k];
			ip->total_length = rte_cpu_to_be_16((uint16_t)(len - s->inner_off -
								       RTE_ETHER_HDR_LEN));
			udp->dgram_len = rte_cpu_to_be_16((uint16_t)(len - s->inner_off -
								     RTE_ETHER_HDR_LEN -
								     sizeof(struct rte_ipv4_hdr)));
			ip_changed = true;
			if (s->inner_off) {
				/* Outer lengths follow the frame's (a mix: sum it all). */
				struct rte_ipv4_hdr *outer = (struct rte_ipv4_hdr *)
					(d + RTE_ETHER_HDR_LEN);

				tunnel_headers(&s->tunnel, &((struct rte_ether_hdr *)d)->src_addr,
					       d, len);
				outer->hdr_checksum = rte_ipv4_cksum(outer);
			}
			if (!s->warming)
				s->mix_tx[k]++;
		}
		if (s->flows > 1) {
			ip_changed |= set_flow(s, ip, udp);
			if (s->inner_off)	/* entropy for the underlay (RFC 7348 section 5) */
				((struct rte_udp_hdr *)(d + RTE_ETHER_HDR_LEN +
					sizeof(struct rte_ipv4_hdr)))->src_port =
					rte_cpu_to_be_16((uint16_t)(TG_TUNNEL_SRC_PORT_BASE +
								    (s->flow & 0x3fff)));
			if (++s->flow == s->flows) {
				s->flow = 0;
				s->flow_q = 0;
			} else if (++s->flow_q == s->nb_queues) {
				s->flow_q = 0;
			}
		}
		if (ip_changed) {
			/* Incremental update from the template (RFC 1624): three additions instead
			 * of summing the whole header. */
			uint32_t src = ip->src_addr;
			uint32_t sum = s->cksum_base + ip->total_length + (src & 0xffff) + (src >> 16);

			sum = (sum & 0xffff) + (sum >> 16);
			sum = (sum & 0xffff) + (sum >> 16);
			ip->hdr_checksum = (uint16_t)~sum;
		}
		t->magic = TG_MAGIC;
		t->tx_port = (uint8_t)s->tx_port;
		t->gen = s->gen_tx;
		t->seq = (uint32_t)s->seq++;
		t->tsc = tsc;
		m[i]->data_len = len;
		m[i]->pkt_len = len;
	}
}

static void
stream_start_phase(struct tg_stream *s, bool warmup, uint8_t gen, uint64_t origin,
		   uint64_t planned, uint64_t unpaced_cycles)
{
	s->warming = warmup;
	s->gen_tx = warmup ? (uint8_t)(gen | TG_WARMUP_GEN_BIT) : gen;
	s->origin_tsc = origin;
	s->phase_end_tsc = origin + unpaced_cycles;
	s->phase_planned = planned;
	/* A phase is cut short when it takes twice its nominal time plus the slack (far too slow),
	 * or when due frames have not moved for the slack ('retry' into a port that takes
	 * nothing, or no mbufs): a trial never hangs on its peer. */
	s->progress_tsc = origin;
	s->give_up_tsc = origin + s->slack_cycles + (s->pkts_per_cycle > 0 ?
		2 * (uint64_t)((double)planned / s->pkts_per_cycle) : unpaced_cycles);
	s->seq = 0;
	s->flow = 0;
	s->flow_q = 0;
	s->pattern_pos = 0;
	if (!warmup)
		s->tx_start_tsc = origin;
}

/* Send frames m[0..n), frame i on TX queue q[i] (a flow stays on one queue, as with RSS). The
 * unsent frames are moved to the front of m and q; return the number sent. */
static inline uint16_t
tx_queues(const struct tg_stream *s, struct rte_mbuf **m, uint8_t *q, uint16_t n)
{
	struct rte_mbuf *grp[TG_BURST], *unsent[TG_BURST];
	uint8_t unsent_q[TG_BURST];
	uint16_t sent, total = 0, nu = 0, k, i;
	unsigned int qq;

	if (s->nb_queues == 1) {
		sent = rte_eth_tx_burst(s->tx_port, 0, m, n);
		memmove(m, m + sent, (n - sent) * sizeof(m[0]));
		return sent;
	}
	for (qq = 0; qq < s->nb_queues; qq++) {
		for (i = 0, k = 0; i < n; i++)
			if (q[i] == qq)
				grp[k++] = m[i];
		if (k == 0)
			continue;
		sent = rte_eth_tx_burst(s->tx_port, (uint16_t)qq, grp, k);
		total += sent;
		for (i = sent; i < k; i++) {
			unsent[nu] = grp[i];
			unsent_q[nu++] = (uint8_t)qq;
		}
	}
	memcpy(m, unsent, nu * sizeof(m[0]));
	memcpy(q, unsent_q, nu);
	return total;
}

/* Offer the frames that are due; return true once the counted phase is over. */
static bool
stream_tx(struct tg_stream *s, uint64_t now, uint8_t gen)
{
	struct rte_mbuf *m[TG_BURST];
	uint8_t q[TG_BURST];
	uint64_t due, n;
	uint16_t sent, i;

	if ((s->seq < s->phase_planned || s->n_pending) &&
	    (now >= s->give_up_tsc || now > s->progress_tsc + s->slack_cycles)) {
		/* Cut the phase short: too slow overall (tx_pps shows it), or stalled. */
		if (!s->warming && now > s->progress_tsc + s->slack_cycles)
			s->tx_stalled = true;
		if (!s->warming && s->nb_mix > 0) {
			/* Abandoned frames were counted as offered: neither sent nor refused. */
			for (i = 0; i < s->n_pending; i++) {
				uint32_t k = mix_entry(s, s->pending[i]->pkt_len);

				if (k < s->nb_mix)
					s->mix_tx[k]--;
			}
		}
		if (s->n_pending)
			rte_pktmbuf_free_bulk(s->pending, s->n_pending);
		s->n_pending = 0;
		s->phase_planned = s->seq;
	}
	if (s->n_pending) {
		for (i = 0; i < s->n_pending; i++)
			rte_pktmbuf_mtod_offset(s->pending[i], struct tg_trailer *,
						s->hdr_len)->tsc = now;
		sent = tx_queues(s, s->pending, s->pending_q, s->n_pending);
		if (sent > 0)
			s->progress_tsc = now;
		if (!s->warming)
			s->tx_sent += sent;
		if (sent < s->n_pending) {
			s->n_pending -= sent;
			return false;
		}
		s->n_pending = 0;
		s->tx_end_tsc = now;
	}
	if (s->pkts_per_cycle > 0) {
		due = now <= s->origin_tsc ? 0 :
			(uint64_t)((double)(now - s->origin_tsc) * s->pkts_per_cycle);
		if (due > s->phase_planned)
			due = s->phase_planned;
	} else {
		if (now >= s->phase_end_tsc && s->phase_planned > s->seq)
			s->phase_planned = s->seq;
		due = s->phase_planned;
	}
	n = due > s->seq ? due - s->seq : 0;
	if (n > 0 && (n >= s->burst || due == s->phase_planned)) {
		if (n > TG_BURST)
			n = TG_BURST;
		if (rte_pktmbuf_alloc_bulk(s->pool, m, (unsigned int)n) != 0)
			return false;	/* pool exhausted: we fall behind; tx_pps shows it */
		build_burst(s, m, q, (uint16_t)n, now);
		sent = tx_queues(s, m, q, (uint16_t)n);
		if (sent > 0 || !s->retry_on_full)
			s->progress_tsc = now;	/* frames left (sent, or lost) */
		if (s->warming) {
			s->warmup_offered += n;
		} else {
			s->tx_sent += sent;
			s->tx_end_tsc = now;
		}
		if (sent < n) {
			if (s->retry_on_full) {
				s->n_pending = (uint16_t)(n - sent);
				memcpy(s->pending, m, s->n_pending * sizeof(m[0]));
				memcpy(s->pending_q, q, s->n_pending);
				return false;
			}
			if (!s->warming)
				s->tx_refused += n - sent;
			rte_pktmbuf_free_bulk(m, (unsigned int)(n - sent));
		}
	} else {
		s->progress_tsc = now;	/* nothing due yet: not stalled */
	}
	if (s->seq < s->phase_planned || s->n_pending)
		return false;
	if (s->warming) {
		uint64_t origin = now;

		if (s->pkts_per_cycle > 0)
			origin = s->origin_tsc +
				(uint64_t)((double)s->phase_planned / s->pkts_per_cycle);

		stream_start_phase(s, false, gen, origin, s->measure_planned,
				   s->measure_unpaced_cycles);
		return false;
	}
	return true;
}

/* Return the offset of the IPv4 header of the Ethernet frame at d + off (after up to two VLAN
 * tags a DUT may push), or 0 when it carries no IPv4 within len bytes. */
static inline uint32_t
ipv4_offset(const uint8_t *d, uint32_t len, uint32_t off)
{
	uint16_t et;
	int tags;

	if (len < off + RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr))
		return 0;
	et = ((const struct rte_ether_hdr *)(d + off))->ether_type;
	off += RTE_ETHER_HDR_LEN;
	for (tags = 0; tags < 2 && (et == rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN) ||
				   et == rte_cpu_to_be_16(RTE_ETHER_TYPE_QINQ)); tags++) {
		if (len < off + sizeof(struct rte_vlan_hdr))
			return 0;
		et = ((const struct rte_vlan_hdr *)(d + off))->eth_proto;
		off += sizeof(struct rte_vlan_hdr);
	}
	if (et != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
	    len < off + sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr))
		return 0;
	return off;
}

/* Return our trailer in frame m, or NULL when m is not one of our frames. A frame a DUT
 * encapsulated (outer IPv4/UDP to port 4789, VXLAN, or 6081, Geneve with its options) is looked
 * into: the trailer of the inner frame counts. Up to two VLAN tags are skipped on each level. */
static inline const struct tg_trailer *
find_trailer(const struct rte_mbuf *m)
{
	const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = rte_pktmbuf_data_len(m);
	uint32_t off = ipv4_offset(d, len, 0);
	const struct rte_ipv4_hdr *ip;
	const struct tg_trailer *t;

	if (off == 0)
		return NULL;
	ip = (const struct rte_ipv4_hdr *)(d + off);
	if (ip->next_proto_id != IPPROTO_UDP)
		return NULL;
	{
		uint32_t l4 = off + (uint32_t)(ip->version_ihl & 0x0f) * 4;
		const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(d + l4);
		uint32_t inner = l4 + sizeof(struct rte_udp_hdr);

		if (len < inner)
			return NULL;
		if (udp->dst_port == rte_cpu_to_be_16(TG_VXLAN_UDP_PORT) ||
		    udp->dst_port == rte_cpu_to_be_16(TG_GENEVE_UDP_PORT)) {
			if (len < inner + TG_TUNNEL_HLEN)
				return NULL;
			if (udp->dst_port == rte_cpu_to_be_16(TG_GENEVE_UDP_PORT))
				inner += (uint32_t)(d[inner] & 0x3f) * 4;	/* options */
			off = ipv4_offset(d, len, inner + TG_TUNNEL_HLEN);
			if (off == 0)
				return NULL;
			ip = (const struct rte_ipv4_hdr *)(d + off);
			if (ip->next_proto_id != IPPROTO_UDP)
				return NULL;
		}
	}
	if (len < off + TG_MIN_PKT_LEN - RTE_ETHER_HDR_LEN)
		return NULL;
	t = (const struct tg_trailer *)(d + off + TG_HDR_LEN - RTE_ETHER_HDR_LEN);
	if (t->magic != TG_MAGIC || t->tx_port >= TG_MAX_PORTS)
		return NULL;
	return t;
}

static inline void
port_rx(struct tg_job *job, unsigned int pi, uint16_t qid, struct tg_stream **by_tx_port)
{
	struct tg_port *p = &job->app->ports[pi];
	struct rte_mbuf *m[TG_BURST];
	uint16_t nb, i;
	uint64_t now;

	nb = rte_eth_rx_burst(p->port_id, qid, m, TG_BURST);
	if (nb == 0)
		return;
	now = rte_rdtsc();
	for (i = 0; i < nb; i++) {
		const struct tg_trailer *t = find_trailer(m[i]);
		struct tg_stream *s;
		uint64_t seq, lat, word, bit;

		if (t == NULL) {
			p->rx_foreign++;
			continue;
		}
		if (t->gen != job->gen)
			continue;	/* warm-up or an earlier trial: ours, not counted */
		s = by_tx_port[t->tx_port];
		seq = t->seq;
		if (s == NULL || s->rx_port != pi || seq >= s->bitmap_bits) {
			p->rx_foreign++;
			continue;
		}
		word = seq >> 6;
		bit = UINT64_C(1) << (seq & 63);
		if (s->bitmap[word] & bit) {
			s->rx_duplicate++;
			continue;
		}
		s->bitmap[word] |= bit;
		s->rx_distinct++;
		if (s->nb_mix > 0)
			s->mix_rx[s->pattern[seq % s->pattern_len]]++;
		if (seq + 1 < s->rx_next_expected)
			s->rx_reordered++;
		else
			s->rx_next_expected = seq + 1;
		lat = now > t->tsc ? now - t->tsc : 0;
		if (lat < s->lat_min)
			s->lat_min = lat;
		if (lat > s->lat_max)
			s->lat_max = lat;
		s->lat_sum += lat;
		s->hist[tg_hist_index(tg_hist_ns(lat, s->ns_mult))]++;
	}
	rte_pktmbuf_free_bulk(m, nb);
}

static int
lcore_trial(void *arg)
{
	struct tg_job *job = arg;
	struct tg_app *app = job->app;
	struct tg_stream *by_tx_port[TG_MAX_PORTS] = { NULL };
	bool tx_over[TG_MAX_STREAMS] = { false };
	uint64_t link_period = app->tsc_hz / TG_LINK_CHECK_HZ;
	uint64_t next_link_check, now;
	unsigned int i;

	for (i = 0; i < job->nb_streams; i++)
		by_tx_port[job->streams[i].tx_port] = &job->streams[i];
	while (rte_rdtsc() < job->start_tsc)
		rte_pause();
	next_link_check = job->start_tsc + link_period;

	for (;;) {
		bool tx_all_over = true, rx_all_over = true;

		if (force_quit) {
			__atomic_store_n(&trial_abort, TG_ABORT_SIGNAL, __ATOMIC_RELAXED);
			break;
		}
		if (__atomic_load_n(&trial_abort, __ATOMIC_RELAXED))
			break;
		now = rte_rdtsc();
		for (i = 0; i < job->nb_streams; i++) {
			struct tg_stream *s = &job->streams[i];

			if (!(job->port_mask & (1u << s->tx_port)) || tx_over[i])
				continue;
			tx_over[i] = stream_tx(s, now, job->gen);
			if (tx_over[i])
				__atomic_store_n(&s->tx_done, 1, __ATOMIC_RELEASE);
			else
				tx_all_over = false;
		}
		for (i = 0; i < app->nb_ports; i++) {
			uint16_t qid;

			if (!(job->port_mask & (1u << i)))
				continue;
			for (qid = 0; qid < app->nb_queues; qid++)
				port_rx(job, i, qid, by_tx_port);
		}
		if (now >= next_link_check) {
			next_link_check = now + link_period;
			for (i = 0; i < app->nb_ports; i++) {
				if (!(job->port_mask & (1u << i)) ||
				    tg_link_up(app->ports[i].port_id))
					continue;
				abort_port = (int)i;
				__atomic_store_n(&trial_abort, TG_ABORT_LINK, __ATOMIC_RELAXED);
			}
		}
		if (!tx_all_over)
			continue;
		for (i = 0; i < job->nb_streams; i++) {
			struct tg_stream *s = &job->streams[i];

			if (!(job->port_mask & (1u << s->rx_port)))
				continue;
			if (!__atomic_load_n(&s->tx_done, __ATOMIC_ACQUIRE) ||
			    ((s->rx_distinct < s->tx_sent || !job->drain_early_exit) &&
			     now < s->tx_end_tsc + job->drain_cycles))
				rx_all_over = false;
		}
		if (rx_all_over)
			break;
	}
	return 0;
}

static int
wait_links(struct tg_app *app, double timeout_s, char *err, size_t errlen)
{
	uint64_t deadline = rte_rdtsc() + (uint64_t)(timeout_s * (double)app->tsc_hz);
	unsigned int i;

	for (;;) {
		bool all_up = true;

		for (i = 0; i < app->nb_ports; i++) {
			if (!tg_link_up(app->ports[i].port_id)) {
				all_up = false;
				break;
			}
		}
		if (all_up)
			return 0;
		if (force_quit) {
			snprintf(err, errlen, "Interrupted while waiting for the links.");
			return -EINTR;
		}
		if (rte_rdtsc() >= deadline) {
			snprintf(err, errlen, "Port %u link still down after %.1f s.", i,
				 timeout_s);
			return -ETIMEDOUT;
		}
		rte_delay_us_sleep(10000);
	}
}

/* Free the frames still queued on RX (earlier trials, warm-up of nothing) for a short while. */
static void
flush_rx(struct tg_app *app)
{
	uint64_t end = rte_rdtsc() + (uint64_t)(TG_FLUSH_MAX_S * (double)app->tsc_hz);
	struct rte_mbuf *m[TG_BURST];
	unsigned int i;

	for (;;) {
		uint16_t total = 0;

		for (i = 0; i < app->nb_ports; i++) {
			uint16_t qid;

			for (qid = 0; qid < app->nb_queues; qid++) {
				uint16_t nb = rte_eth_rx_burst(app->ports[i].port_id, qid, m,
							       TG_BURST);

				rte_pktmbuf_free_bulk(m, nb);
				total += nb;
			}
		}
		if (total == 0 || rte_rdtsc() >= end)
			return;
	}
}

int
tg_link_wait(struct tg_app *app, double timeout_s, char *err, size_t errlen)
{
	return wait_links(app, timeout_s, err, errlen);
}

void
tg_trial_free(struct tg_stream *streams, unsigned int nb_streams)
{
	unsigned int i;

	for (i = 0; i < nb_streams; i++) {
		free(streams[i].bitmap);
		free(streams[i].hist);
		free(streams[i].pattern);
		streams[i].bitmap = NULL;
		streams[i].hist = NULL;
		streams[i].pattern = NULL;
	}
}

/* Interleave the mix frame by frame (smooth weighted round robin): every period of
 * sum(weights) frames holds weight[k] frames of entry k, spread as evenly as the weights allow,
 * so a mix is never sent in blocks of one size. */
static int
mix_pattern(const struct tg_trial_cfg *cfg, struct tg_stream *s)
{
	int64_t current[TG_MAX_MIX] = { 0 };
	uint32_t total = 0, k, pos;

	for (k = 0; k < cfg->nb_mix; k++) {
		total += cfg->mix_weight[k];
		s->mix_len[k] = (uint16_t)(cfg->mix_size[k] - RTE_ETHER_CRC_LEN);
	}
	s->nb_mix = cfg->nb_mix;
	s->pattern_len = total;
	s->pattern = malloc(total);
	if (s->pattern == NULL)
		return -ENOMEM;
	for (pos = 0; pos < total; pos++) {
		uint32_t best = 0;

		for (k = 0; k < cfg->nb_mix; k++) {
			current[k] += cfg->mix_weight[k];
			if (current[k] > current[best])
				best = k;
		}
		current[best] -= total;
		s->pattern[pos] = (uint8_t)best;
	}
	return 0;
}

static int
streams_init(struct tg_app *app, const struct tg_trial_cfg *cfg, struct tg_stream *streams,
	     unsigned int *nb_streams, char *err, size_t errlen)
{
	unsigned int n = 0, i;
	double planned, warm;
	uint64_t bits;

	for (i = 0; i < app->nb_ports && i < TG_MAX_STREAMS; i++) {
		struct tg_stream *s = &streams[n];

		if (i > 0 && !cfg->bidirectional)
			break;
		memset(s, 0, sizeof(*s));
		s->tx_port = (uint16_t)i;
		s->rx_port = (uint16_t)((cfg->loopback || app->nb_ports == 1) ? i : 1 - i);
		s->pool = app->ports[i].pool;
		s->flows = cfg->flows;
		s->flow_field = cfg->flow_field;
		s->retry_on_full = cfg->retry_on_full;
		s->nb_queues = app->nb_queues;
		s->lat_min = UINT64_MAX;
		s->ns_mult = tg_hist_ns_mult(app->tsc_hz);
		s->slack_cycles = app->tsc_hz;
		stream_template(app, s, cfg->nb_mix > 0 ? cfg->mix_size[0] : cfg->frame_size,
				&cfg->tunnel);
		if (cfg->nb_mix > 0 && mix_pattern(cfg, s) != 0) {
			*nb_streams = n + 1;
			snprintf(err, errlen, "Cannot allocate the frame-size pattern.");
			return -ENOMEM;
		}
		if (cfg->rate_pps > 0) {
			s->pkts_per_cycle = cfg->rate_pps / (double)app->tsc_hz;
			planned = llround(cfg->rate_pps * cfg->duration_s);
			warm = llround(cfg->rate_pps * cfg->warmup_s);
			bits = (uint64_t)planned;
			s->burst = cfg->burst ? (uint16_t)cfg->burst :
				(uint16_t)RTE_MIN(TG_BURST, RTE_MAX(1.0, ceil(cfg->rate_pps *
									TG_AUTO_BURST_S)));
		} else {
			s->pkts_per_cycle = 0;
			bits = (uint64_t)ceil(RTE_MIN(cfg->duration_s, TG_UNPACED_MAX_S) *
					      TG_UNPACED_MAX_PPS);
			planned = (double)bits;
			warm = (double)UINT32_MAX;
			s->burst = TG_BURST;
		}
		if (planned < 1 || planned > (double)UINT32_MAX) {
			snprintf(err, errlen, "Field 'rate_pps' x 'duration_s' gives %.0f frames; "
				 "expected 1 to %u.", planned, UINT32_MAX);
			return -EINVAL;
		}
		s->measure_planned = (uint64_t)planned;
		if (bits < s->measure_planned && cfg->rate_pps > 0)
			bits = s->measure_planned;
		s->bitmap_bits = bits;
		s->bitmap = calloc((bits + 63) / 64, sizeof(uint64_t));
		s->hist = calloc(TG_HIST_BUCKETS, sizeof(uint64_t));
		n++;
		*nb_streams = n;
		if (s->bitmap == NULL || s->hist == NULL) {
			snprintf(err, errlen, "Cannot allocate %" PRIu64 " bytes for the sequence "
				 "bitmap; shorten the trial.", (bits + 63) / 64 * 8);
			return -ENOMEM;
		}
		s->phase_planned = cfg->warmup_s > 0 ? (uint64_t)warm : 0;
	}
	return 0;
}

/* Run one trial; on success fill streams[0..*nb_streams) (caller frees with tg_trial_free). */
int
tg_trial_run(struct tg_app *app, const struct tg_trial_cfg *cfg, char *err, size_t errlen,
	     struct tg_stream *streams, unsigned int *nb_streams, uint64_t *warmup_tx)
{
	struct tg_job job, jobs[RTE_MAX_LCORE];
	unsigned int lcores[RTE_MAX_LCORE];
	unsigned int nb_workers = 0, i, lcore_id;
	uint64_t start, warm_cycles, meas_cycles;
	uint8_t gen;
	int ret;

	*nb_streams = 0;
	*warmup_tx = 0;
	ret = wait_links(app, cfg->link_timeout_s, err, errlen);
	if (ret < 0)
		return ret;
	ret = streams_init(app, cfg, streams, nb_streams, err, errlen);
	if (ret < 0)
		return ret;
	app->trial_gen = (uint8_t)((app->trial_gen + 1) & ~TG_WARMUP_GEN_BIT);
	gen = app->trial_gen;
	flush_rx(app);
	for (i = 0; i < app->nb_ports; i++)
		app->ports[i].rx_foreign = 0;

	start = rte_rdtsc() + app->tsc_hz / 1000;
	warm_cycles = (uint64_t)(cfg->warmup_s * (double)app->tsc_hz);
	meas_cycles = (uint64_t)(RTE_MIN(cfg->duration_s, TG_UNPACED_MAX_S) * (double)app->tsc_hz);
	for (i = 0; i < *nb_streams; i++) {
		struct tg_stream *s = &streams[i];

		s->measure_unpaced_cycles = meas_cycles;
		if (cfg->warmup_s > 0)
			stream_start_phase(s, true, gen, start, s->phase_planned, warm_cycles);
		else
			stream_start_phase(s, false, gen, start, s->measure_planned, meas_cycles);
	}
	__atomic_store_n(&trial_abort, 0, __ATOMIC_RELAXED);
	abort_port = -1;

	RTE_LCORE_FOREACH_WORKER(lcore_id)
		lcores[nb_workers++] = lcore_id;
	job = (struct tg_job){ .app = app, .streams = streams, .nb_streams = *nb_streams,
		.port_mask = (1u << app->nb_ports) - 1, .start_tsc = start,
		.drain_cycles = (uint64_t)(cfg->drain_s * (double)app->tsc_hz),
		.drain_early_exit = cfg->drain_early_exit, .gen = gen };
	if (nb_workers == 0) {
		lcore_trial(&job);
	} else {
		for (i = 0; i < nb_workers; i++) {
			unsigned int p;

			jobs[i] = job;
			jobs[i].port_mask = 0;
			for (p = i; p < app->nb_ports; p += nb_workers)
				jobs[i].port_mask |= 1u << p;
			if (jobs[i].port_mask)
				rte_eal_remote_launch(lcore_trial, &jobs[i], lcores[i]);
		}
		/* Wait without spinning: the main lcore may share a CPU with a worker. */
		for (i = 0; i < nb_workers; i++) {
			while (rte_eal_get_lcore_state(lcores[i]) != WAIT)
				rte_delay_us_sleep(1000);
			rte_eal_wait_lcore(lcores[i]);
		}
	}

	for (i = 0; i < *nb_streams; i++) {
		*warmup_tx += streams[i].warmup_offered;
		if (streams[i].n_pending) {
			rte_pktmbuf_free_bulk(streams[i].pending, streams[i].n_pending);
			streams[i].n_pending = 0;
		}
	}
	switch (__atomic_load_n(&trial_abort, __ATOMIC_RELAXED)) {
	case TG_ABORT_SIGNAL:
		snprintf(err, errlen, "Trial interrupted by a signal.");
		return -EINTR;
	case TG_ABORT_LINK:
		snprintf(err, errlen, "Port %d link went down during the trial; "
			 "did the peer (DUT or forwarder) stop?", abort_port);
		return -ENOLINK;
	default:
		break;
	}
	return 0;
}
