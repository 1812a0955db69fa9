/* SPDX-License-Identifier: Apache-2.0
 * The stdin/stdout protocol: one JSON command per line in, one JSON reply per line out
 * (docs/trafficgen.md). Nothing here touches packets.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "hist.h"
#include "trafficgen.h"

#define TG_LINE_MAX 65536
#define TG_ERR_MAX 512
#define TG_POLL_MS 200

static const char *const trial_fields[] = {
	"cmd", "id", "frame_size_bytes", "frame_mix", "rate_pps", "duration_s", "bidirectional", "loopback",
	"flows", "flow_field", "warmup_s", "drain_s", "link_timeout_s", "tx_tolerance_ratio",
	"on_tx_full", "burst_packets", "drain_early_exit", "latency_histogram", "tunnel", NULL,
};

static const char *const tunnel_fields[] = {
	"type", "vni", "dst_mac", "src_mac", "src_ip", "dst_ip", NULL,
};

static void
reply(json_t *obj, json_t *id)
{
	if (id != NULL)
		json_object_set(obj, "id", id);
	json_dumpf(obj, stdout, JSON_COMPACT | JSON_REAL_PRECISION(10));
	fputc('\n', stdout);
	fflush(stdout);
	json_decref(obj);
}

static void
reply_error(json_t *id, const char *msg)
{
	json_t *obj = json_object();

	json_object_set_new(obj, "ok", json_false());
	json_object_set_new(obj, "error", json_string(msg));
	TG_LOG(WARNING, "Error reply: %s\n", msg);
	reply(obj, id);
}

/* Return the descriptors of queue 0 of port p: what the driver reports, else what was configured
 * (a virtio_user ring holds min(queue_size devarg, configured) descriptors). */
static uint16_t
ring_size(const struct tg_port *p, bool rx)
{
	struct rte_eth_rxq_info rq;
	struct rte_eth_txq_info tq;

	if (rx && rte_eth_rx_queue_info_get(p->port_id, 0, &rq) == 0 && rq.nb_desc > 0)
		return rq.nb_desc;
	if (!rx && rte_eth_tx_queue_info_get(p->port_id, 0, &tq) == 0 && tq.nb_desc > 0)
		return tq.nb_desc;
	return rx ? p->nb_rxd : p->nb_txd;
}

static json_t *
ports_json(struct tg_app *app)
{
	json_t *arr = json_array();
	unsigned int i;

	for (i = 0; i < app->nb_ports; i++) {
		struct rte_eth_link link;
		struct rte_eth_dev_info info;
		char mac[RTE_ETHER_ADDR_FMT_SIZE];
		char name[RTE_ETH_NAME_MAX_LEN];
		json_t *p = json_object();

		memset(&link, 0, sizeof(link));
		memset(&info, 0, sizeof(info));
		rte_eth_link_get_nowait(app->ports[i].port_id, &link);
		rte_eth_dev_info_get(app->ports[i].port_id, &info);
		rte_ether_format_addr(mac, sizeof(mac), &app->ports[i].mac);
		if (rte_eth_dev_get_name_by_port(app->ports[i].port_id, name) != 0)
			name[0] = '\0';
		json_object_set_new(p, "port", json_integer(i));
		json_object_set_new(p, "name", json_string(name));
		json_object_set_new(p, "mac", json_string(mac));
		json_object_set_new(p, "driver",
				    json_string(info.driver_name ? info.driver_name : ""));
		json_object_set_new(p, "link_up",
				    json_boolean(link.link_status == RTE_ETH_LINK_UP));
		if (link.link_speed == RTE_ETH_SPEED_NUM_NONE ||
		    link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN)
			json_object_set_new(p, "link_speed_mbps", json_null());
		else
			json_object_set_new(p, "link_speed_mbps", json_integer(link.link_speed));
		json_object_set_new(p, "rx_descriptors",
				    json_integer(ring_size(&app->ports[i], true)));
		json_object_set_new(p, "tx_descriptors",
				    json_integer(ring_size(&app->ports[i], false)));
		json_array_append_new(arr, p);
	}
	return arr;
}

void
tg_print_ready(struct tg_app *app)
{
	json_t *obj = json_object();

	json_object_set_new(obj, "ok", json_true());
	json_object_set_new(obj, "event", json_string("ready"));
	json_object_set_new(obj, "tsc_hz", json_integer((json_int_t)app->tsc_hz));
	json_object_set_new(obj, "queues", json_integer(app->nb_queues));
	json_object_set_new(obj, "ports", ports_json(app));
	reply(obj, NULL);
}

static void
reply_ports(struct tg_app *app, json_t *id)
{
	json_t *obj = json_object();

	json_object_set_new(obj, "ok", json_true());
	json_object_set_new(obj, "ports", ports_json(app));
	reply(obj, id);
}

/* Per-queue counters (drivers that keep none report zeros). */
static json_t *
queue_counters(const uint64_t *counters, uint16_t nb_queues)
{
	json_t *arr = json_array();
	uint16_t q;

	for (q = 0; q < nb_queues && q < RTE_ETHDEV_QUEUE_STAT_CNTRS; q++)
		json_array_append_new(arr, json_integer((json_int_t)counters[q]));
	return arr;
}

static void
reply_stats(struct tg_app *app, json_t *id)
{
	json_t *obj = json_object(), *arr = json_array();
	unsigned int i;

	for (i = 0; i < app->nb_ports; i++) {
		struct rte_eth_stats st;
		json_t *p = json_object();

		memset(&st, 0, sizeof(st));
		rte_eth_stats_get(app->ports[i].port_id, &st);
		json_object_set_new(p, "port", json_integer(i));
		json_object_set_new(p, "ipackets", json_integer((json_int_t)st.ipackets));
		json_object_set_new(p, "opackets", json_integer((json_int_t)st.opackets));
		json_object_set_new(p, "imissed", json_integer((json_int_t)st.imissed));
		json_object_set_new(p, "ierrors", json_integer((json_int_t)st.ierrors));
		json_object_set_new(p, "oerrors", json_integer((json_int_t)st.oerrors));
		json_object_set_new(p, "rx_nombuf", json_integer((json_int_t)st.rx_nombuf));
		json_object_set_new(p, "q_ipackets", queue_counters(st.q_ipackets, app->nb_queues));
		json_object_set_new(p, "q_opackets", queue_counters(st.q_opackets, app->nb_queues));
		json_array_append_new(arr, p);
	}
	json_object_set_new(obj, "ok", json_true());
	json_object_set_new(obj, "ports", arr);
	reply(obj, id);
}

/* Return field 'key' of cmd, or NULL when it is absent; *ret = -EINVAL if it was required. */
static json_t *
get_field(json_t *cmd, const char *key, bool required, int *ret, char *err)
{
	json_t *v = json_object_get(cmd, key);

	*ret = 0;
	if (v == NULL && required) {
		snprintf(err, TG_ERR_MAX, "Field '%s' is required.", key);
		*ret = -EINVAL;
	}
	return v;
}

/* Read a number field into *out; absent -> def (or error when required). */
static int
get_number(json_t *cmd, const char *key, bool required, double def, double lo, double hi,
	   double *out, char *err)
{
	int ret;
	json_t *v = get_field(cmd, key, required, &ret, err);

	*out = def;
	if (v == NULL)
		return ret;
	if (!json_is_number(v)) {
		snprintf(err, TG_ERR_MAX, "Field '%s' must be a number.", key);
		return -EINVAL;
	}
	*out = json_number_value(v);
	if (!isfinite(*out) || *out < lo || *out > hi) {
		snprintf(err, TG_ERR_MAX, "Field '%s' must lie in [%g, %g], got %g.", key, lo, hi,
			 *out);
		return -ERANGE;
	}
	return 0;
}

/* Read an integer field into *out; absent -> def (or error when required). */
static int
get_integer(json_t *cmd, const char *key, bool required, uint32_t def, uint32_t lo, uint32_t hi,
	    uint32_t *out, char *err)
{
	int ret;
	json_t *v = get_field(cmd, key, required, &ret, err);

	*out = def;
	if (v == NULL)
		return ret;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
		snprintf(err, TG_ERR_MAX, "Field '%s' must be an integer in [%u, %u].", key, lo,
			 hi);
		return -EINVAL;
	}
	*out = (uint32_t)json_integer_value(v);
	return 0;
}

static int
get_bool(json_t *cmd, const char *key, bool def, bool *out, char *err)
{
	json_t *v = json_object_get(cmd, key);

	if (v == NULL) {
		*out = def;
		return 0;
	}
	if (!json_is_boolean(v)) {
		snprintf(err, TG_ERR_MAX, "Field '%s' must be true or false.", key);
		return -EINVAL;
	}
	*out = json_is_true(v);
	return 0;
}

/* Read a string field that must be one of two values; *out = index of the value. */
static int
get_choice(json_t *cmd, const char *key, const char *a, const char *b, int *out, char *err)
{
	json_t *v = json_object_get(cmd, key);

	*out = 0;
	if (v == NULL)
		return 0;
	if (json_is_string(v) && strcmp(json_string_value(v), a) == 0)
		return 0;
	if (json_is_string(v) && strcmp(json_string_value(v), b) == 0) {
		*out = 1;
		return 0;
	}
	snprintf(err, TG_ERR_MAX, "Field '%s' must be '%s' or '%s'.", key, a, b);
	return -EINVAL;
}

static int
check_fields(json_t *cmd, const char *const *allowed, char *err)
{
	const char *key;
	json_t *v;
	unsigned int i;

	json_object_foreach(cmd, key, v) {
		for (i = 0; allowed[i] != NULL; i++)
			if (strcmp(key, allowed[i]) == 0)
				break;
		if (allowed[i] == NULL) {
			snprintf(err, TG_ERR_MAX, "Unknown field '%s' in command '%s'.", key,
				 json_string_value(json_object_get(cmd, "cmd")));
			return -EINVAL;
		}
	}
	return 0;
}

/* The most flows a flow field can tell apart (docs/trafficgen.md). */
static uint32_t
max_flows(enum tg_flow_field field)
{
	switch (field) {
	case TG_FLOW_SRC_PORT:
		return TG_MAX_FLOWS_SRC_PORT;
	case TG_FLOW_SRC_IP:
		return TG_MAX_FLOWS_SRC_IP;
	case TG_FLOW_TUPLE:
	default:
		return TG_MAX_FLOWS;
	}
}

static int
get_flow_field(json_t *cmd, enum tg_flow_field *out, char *err)
{
	static const char *const names[] = { "src_port", "src_ip", "tuple" };
	json_t *v = json_object_get(cmd, "flow_field");
	unsigned int i;

	*out = TG_FLOW_SRC_PORT;
	if (v == NULL)
		return 0;
	for (i = 0; i < 3; i++) {
		if (json_is_string(v) && strcmp(json_string_value(v), names[i]) == 0) {
			*out = (enum tg_flow_field)i;
			return 0;
		}
	}
	snprintf(err, TG_ERR_MAX, "Field 'flow_field' must be 'src_port' (up to %u flows), "
		 "'src_ip' (up to %u) or 'tuple' (up to %u).", TG_MAX_FLOWS_SRC_PORT,
		 TG_MAX_FLOWS_SRC_IP, TG_MAX_FLOWS);
	return -EINVAL;
}

/* "frame_mix": [[size, weight], ...]: 1 to TG_MAX_MIX distinct sizes, weights >= 1 summing to at
 * most TG_MAX_MIX_PERIOD (divide them by their greatest common divisor first). */
static int
parse_mix(json_t *mix, uint32_t max_frame, bool jumbo, struct tg_trial_cfg *cfg, char *err)
{
	uint32_t total = 0, k, j;
	size_t i;
	json_t *pair;

	if (!json_is_array(mix) || json_array_size(mix) < 1 || json_array_size(mix) > TG_MAX_MIX) {
		snprintf(err, TG_ERR_MAX, "Field 'frame_mix' must be a list of 1 to %u "
			 "[frame_size_bytes, weight] pairs.", TG_MAX_MIX);
		return -EINVAL;
	}
	json_array_foreach(mix, i, pair) {
		json_t *size = json_array_get(pair, 0), *weight = json_array_get(pair, 1);

		if (!json_is_array(pair) || json_array_size(pair) != 2 || !json_is_integer(size) ||
		    !json_is_integer(weight)) {
			snprintf(err, TG_ERR_MAX, "Field 'frame_mix' entry %zu is not a "
				 "[frame_size_bytes, weight] pair of integers.", i);
			return -EINVAL;
		}
		if (json_integer_value(size) < RTE_ETHER_MIN_LEN ||
		    json_integer_value(size) > max_frame) {
			snprintf(err, TG_ERR_MAX, "Field 'frame_mix' entry %zu: frame size %" JSON_INTEGER_FORMAT
				 " B is outside [%u, %u]%s.", i, json_integer_value(size),
				 RTE_ETHER_MIN_LEN, max_frame,
				 jumbo ? "" : " (start with --jumbo for larger frames)");
			return -ERANGE;
		}
		if (json_integer_value(weight) < 1 ||
		    json_integer_value(weight) > TG_MAX_MIX_PERIOD) {
			snprintf(err, TG_ERR_MAX, "Field 'frame_mix' entry %zu: weight %" JSON_INTEGER_FORMAT
				 " is not in [1, %u].", i, json_integer_value(weight), TG_MAX_MIX_PERIOD);
			return -ERANGE;
		}
		k = (uint32_t)i;
		cfg->mix_size[k] = (uint32_t)json_integer_value(size);
		cfg->mix_weight[k] = (uint32_t)json_integer_value(weight);
		total += cfg->mix_weight[k];
		for (j = 0; j < k; j++) {
			if (cfg->mix_size[j] == cfg->mix_size[k]) {
				snprintf(err, TG_ERR_MAX, "Field 'frame_mix' names %u B twice.",
					 cfg->mix_size[k]);
				return -EINVAL;
			}
		}
	}
	if (total > TG_MAX_MIX_PERIOD) {
		snprintf(err, TG_ERR_MAX, "Field 'frame_mix': the weights sum to %u; at most %u "
			 "(divide them by their greatest common divisor).", total, TG_MAX_MIX_PERIOD);
		return -ERANGE;
	}
	cfg->nb_mix = (uint32_t)json_array_size(mix);
	return 0;
}

/* Read a MAC address field of the 'tunnel' object into *out. */
static int
get_mac(json_t *obj, const char *key, struct rte_ether_addr *out, char *err)
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_string(v) || rte_ether_unformat_addr(json_string_value(v), out) != 0) {
		snprintf(err, TG_ERR_MAX, "Field 'tunnel.%s' must be a MAC address such as "
			 "'02:00:00:00:00:01'.", key);
		return -EINVAL;
	}
	return 0;
}

/* Read an IPv4 address field of the 'tunnel' object into *out (network order). */
static int
get_ipv4(json_t *obj, const char *key, uint32_t *out, char *err)
{
	json_t *v = json_object_get(obj, key);
	struct in_addr a;

	if (!json_is_string(v) || inet_pton(AF_INET, json_string_value(v), &a) != 1) {
		snprintf(err, TG_ERR_MAX, "Field 'tunnel.%s' must be an IPv4 address such as "
			 "'198.19.0.2'.", key);
		return -EINVAL;
	}
	*out = a.s_addr;
	return 0;
}

/* "tunnel": {"type": "vxlan"|"geneve", "vni": N, "dst_mac": M, "src_mac": M, "src_ip": A,
 * "dst_ip": A}: send every frame encapsulated, as a remote VTEP would (src_mac optional). */
static int
parse_tunnel(json_t *tun, struct tg_tunnel_cfg *out, char *err)
{
	json_t *type = json_object_get(tun, "type");
	uint32_t vni;
	int ret;

	if (!json_is_object(tun)) {
		snprintf(err, TG_ERR_MAX, "Field 'tunnel' must be an object with 'type', 'vni', "
			 "'dst_mac', 'src_ip' and 'dst_ip'.");
		return -EINVAL;
	}
	ret = check_fields(tun, tunnel_fields, err);
	if (ret < 0)
		return ret;
	if (json_is_string(type) && strcmp(json_string_value(type), "vxlan") == 0) {
		out->type = TG_TUNNEL_VXLAN;
	} else if (json_is_string(type) && strcmp(json_string_value(type), "geneve") == 0) {
		out->type = TG_TUNNEL_GENEVE;
	} else {
		snprintf(err, TG_ERR_MAX, "Field 'tunnel.type' must be 'vxlan' or 'geneve'.");
		return -EINVAL;
	}
	ret = get_integer(tun, "vni", true, 0, 0, 0xffffff, &vni, err);
	if (ret < 0)
		return ret;
	out->vni = vni;
	ret = get_mac(tun, "dst_mac", &out->dst_mac, err);
	if (ret == 0 && json_object_get(tun, "src_mac") != NULL) {
		ret = get_mac(tun, "src_mac", &out->src_mac, err);
		out->src_mac_set = true;
	}
	if (ret == 0)
		ret = get_ipv4(tun, "src_ip", &out->src_ip, err);
	if (ret == 0)
		ret = get_ipv4(tun, "dst_ip", &out->dst_ip, err);
	return ret;
}

static int
parse_trial(struct tg_app *app, json_t *cmd, struct tg_trial_cfg *cfg, char *err)
{
	uint32_t max_frame = app->jumbo ? TG_JUMBO_FRAME_LEN : RTE_ETHER_MAX_LEN;
	int on_full = 0, ret;

	memset(cfg, 0, sizeof(*cfg));
	ret = check_fields(cmd, trial_fields, err);
	if (ret == 0 && json_object_get(cmd, "frame_mix") != NULL) {
		if (json_object_get(cmd, "frame_size_bytes") != NULL) {
			snprintf(err, TG_ERR_MAX, "Give 'frame_size_bytes' or 'frame_mix', not both.");
			ret = -EINVAL;
		} else {
			ret = parse_mix(json_object_get(cmd, "frame_mix"), max_frame, app->jumbo, cfg, err);
		}
	} else if (ret == 0) {
		ret = get_integer(cmd, "frame_size_bytes", true, 0, 0, UINT32_MAX,
				  &cfg->frame_size, err);
	}
	if (ret == 0 && cfg->nb_mix == 0 &&
	    (cfg->frame_size < RTE_ETHER_MIN_LEN || cfg->frame_size > max_frame)) {
		snprintf(err, TG_ERR_MAX,
			 "Field 'frame_size_bytes' must lie in [%u, %u]%s, got %u.",
			 RTE_ETHER_MIN_LEN, max_frame,
			 app->jumbo ? "" : " (start with --jumbo for larger frames)",
			 cfg->frame_size);
		ret = -ERANGE;
	}
	if (ret == 0 && json_object_get(cmd, "tunnel") != NULL)
		ret = parse_tunnel(json_object_get(cmd, "tunnel"), &cfg->tunnel, err);
	if (ret == 0 && cfg->tunnel.type != TG_TUNNEL_NONE) {
		/* The inner frame must hold our headers and trailer: 64 B (60 B without FCS). */
		uint32_t min = TG_TUNNEL_OVERHEAD + TG_MIN_PKT_LEN + RTE_ETHER_CRC_LEN, k;
		uint32_t smallest = cfg->nb_mix ? UINT32_MAX : cfg->frame_size;

		for (k = 0; k < cfg->nb_mix; k++)
			smallest = RTE_MIN(smallest, cfg->mix_size[k]);
		if (smallest < min) {
			snprintf(err, TG_ERR_MAX, "Field '%s': a tunnel frame of %u B cannot "
				 "carry a 64 B inner frame; the smallest is %u B (%u B of outer "
				 "headers).",
				 cfg->nb_mix ? "frame_mix" : "frame_size_bytes", smallest, min,
				 (unsigned int)TG_TUNNEL_OVERHEAD);
			ret = -ERANGE;
		}
	}
	if (ret == 0)
		ret = get_number(cmd, "rate_pps", true, 0, 0, 1e9, &cfg->rate_pps, err);
	if (ret == 0)
		ret = get_number(cmd, "duration_s", true, 0, 1e-3, 3600, &cfg->duration_s, err);
	if (ret == 0)
		ret = get_number(cmd, "warmup_s", false, 0, 0, 3600, &cfg->warmup_s, err);
	if (ret == 0)
		ret = get_number(cmd, "drain_s", false, 2, 0, 60, &cfg->drain_s, err);
	if (ret == 0)
		ret = get_number(cmd, "link_timeout_s", false, 5, 0, 3600, &cfg->link_timeout_s,
				 err);
	if (ret == 0)
		ret = get_number(cmd, "tx_tolerance_ratio", false, 0.005, 0, 1, &cfg->tx_tolerance,
				 err);
	if (ret == 0)
		ret = get_flow_field(cmd, &cfg->flow_field, err);
	if (ret == 0)
		ret = get_integer(cmd, "flows", false, 1, 1, max_flows(cfg->flow_field), &cfg->flows,
				  err);
	if (ret == 0)
		ret = get_integer(cmd, "burst_packets", false, 0, 0, TG_BURST, &cfg->burst, err);
	if (ret == 0)
		ret = get_bool(cmd, "bidirectional", true, &cfg->bidirectional, err);
	if (ret == 0)
		ret = get_bool(cmd, "loopback", false, &cfg->loopback, err);
	if (ret == 0)
		ret = get_bool(cmd, "drain_early_exit", false, &cfg->drain_early_exit, err);
	if (ret == 0)
		ret = get_bool(cmd, "latency_histogram", false, &cfg->latency_histogram, err);
	if (ret == 0)
		ret = get_choice(cmd, "on_tx_full", "loss", "retry", &on_full, err);
	if (ret == 0 && cfg->rate_pps == 0 && cfg->duration_s > 10) {
		snprintf(err, TG_ERR_MAX, "Unpaced trials ('rate_pps': 0) last at most 10 s.");
		ret = -ERANGE;
	}
	cfg->retry_on_full = on_full == 1;
	return ret;
}

/* TSC cycles in ns, exactly as the latency_*_ns fields report them. */
static double
cycles_ns(double cycles, uint64_t tsc_hz)
{
	return cycles * 1e9 / (double)tsc_hz;
}

/* The p-quantile of a direction's latency [ns], clamped to the reported latency_min_ns and
 * latency_max_ns (the same expression), so min <= p50 <= p99 <= p99.9 <= max holds in every
 * answer; null when nothing was received. */
static json_t *
stream_quantile(const struct tg_stream *s, uint64_t tsc_hz, double p)
{
	double ns;

	if (s->rx_distinct == 0)
		return json_null();
	ns = tg_hist_quantile(s->hist, s->rx_distinct, cycles_ns((double)s->lat_min, tsc_hz),
			      cycles_ns((double)s->lat_max, tsc_hz), p);
	return isnan(ns) ? json_null() : json_real(ns);
}

static json_t *
nullable_ns(double cycles, uint64_t tsc_hz)
{
	if (isnan(cycles))
		return json_null();
	return json_real(cycles_ns(cycles, tsc_hz));
}

/* The non-empty buckets of a direction's latency histogram: [[middle_ns, count], ...] in
 * ascending order; a middle is HdrHistogram's median equivalent value of the bucket, within
 * 0.05 % of every value in it (hist.h), so it falls in the same bucket of an
 * HdrHistogram(1, highest, 3). */
static json_t *
histogram_json(const struct tg_stream *s)
{
	json_t *buckets = json_array();
	unsigned int i;

	for (i = 0; i < TG_HIST_BUCKETS; i++) {
		json_t *pair;

		if (s->hist[i] == 0)
			continue;
		pair = json_array();
		json_array_append_new(pair, json_real(tg_hist_bucket_mid(i)));
		json_array_append_new(pair, json_integer((json_int_t)s->hist[i]));
		json_array_append_new(buckets, pair);
	}
	return buckets;
}

static json_t *
direction_json(struct tg_app *app, const struct tg_trial_cfg *cfg, const struct tg_stream *s,
	       const char **invalid, char *reason, size_t reason_len)
{
	json_t *d = json_object();
	uint64_t tx = s->tx_sent + s->tx_refused;
	double dur = s->tx_end_tsc > s->tx_start_tsc ?
		(double)(s->tx_end_tsc - s->tx_start_tsc) / (double)app->tsc_hz : 0;
	double tx_pps = dur > 0 ? (double)tx / dur : 0;
	bool got = s->rx_distinct > 0;

	json_object_set_new(d, "tx_port", json_integer(s->tx_port));
	json_object_set_new(d, "rx_port", json_integer(s->rx_port));
	json_object_set_new(d, "tx_packets", json_integer((json_int_t)tx));
	json_object_set_new(d, "tx_refused_packets", json_integer((json_int_t)s->tx_refused));
	json_object_set_new(d, "rx_packets", json_integer((json_int_t)s->rx_distinct));
	json_object_set_new(d, "lost_packets",
			    json_integer((json_int_t)tx - (json_int_t)s->rx_distinct));
	json_object_set_new(d, "loss_ratio", json_real(tx ? ((double)tx - (double)s->rx_distinct) /
						       (double)tx : 0.0));
	json_object_set_new(d, "tx_pps", json_real(tx_pps));
	json_object_set_new(d, "tx_duration_s", json_real(dur));
	json_object_set_new(d, "rx_pps", json_real(dur > 0 ? (double)s->rx_distinct / dur : 0));
	json_object_set_new(d, "reordered_packets", json_integer((json_int_t)s->rx_reordered));
	json_object_set_new(d, "duplicate_packets", json_integer((json_int_t)s->rx_duplicate));
	json_object_set_new(d, "tx_stalled", json_boolean(s->tx_stalled));
	json_object_set_new(d, "latency_min_ns", nullable_ns(got ? (double)s->lat_min : NAN,
							     app->tsc_hz));
	json_object_set_new(d, "latency_avg_ns", nullable_ns(got ? (double)s->lat_sum /
							     (double)s->rx_distinct : NAN,
							     app->tsc_hz));
	json_object_set_new(d, "latency_max_ns", nullable_ns(got ? (double)s->lat_max : NAN,
							     app->tsc_hz));
	json_object_set_new(d, "latency_p50_ns", stream_quantile(s, app->tsc_hz, 0.5));
	json_object_set_new(d, "latency_p99_ns", stream_quantile(s, app->tsc_hz, 0.99));
	json_object_set_new(d, "latency_p999_ns", stream_quantile(s, app->tsc_hz, 0.999));
	if (cfg->latency_histogram)
		json_object_set_new(d, "latency_histogram", histogram_json(s));
	if (s->nb_mix > 0) {
		json_t *sizes = json_array();
		uint32_t k;

		for (k = 0; k < s->nb_mix; k++) {
			json_t *e = json_object();

			json_object_set_new(e, "frame_size_bytes",
					    json_integer(s->mix_len[k] + RTE_ETHER_CRC_LEN));
			json_object_set_new(e, "tx_packets", json_integer((json_int_t)s->mix_tx[k]));
			json_object_set_new(e, "rx_packets", json_integer((json_int_t)s->mix_rx[k]));
			json_object_set_new(e, "lost_packets", json_integer((json_int_t)s->mix_tx[k] -
									(json_int_t)s->mix_rx[k]));
			json_array_append_new(sizes, e);
		}
		json_object_set_new(d, "per_size", sizes);
	}

	if (*invalid == NULL && s->tx_stalled) {
		snprintf(reason, reason_len, "port %u stopped taking frames: TX gave up after "
			 "1 s without progress, %" PRIu64 " frames offered", s->tx_port, tx);
		*invalid = reason;
	}
	if (*invalid == NULL && cfg->rate_pps > 0 &&
	    tx_pps < cfg->rate_pps * (1 - cfg->tx_tolerance)) {
		snprintf(reason, reason_len, "generator-limited: port %u achieved TX %.0f pps < "
			 "requested %.0f pps (tolerance %.3g)", s->tx_port, tx_pps, cfg->rate_pps,
			 cfg->tx_tolerance);
		*invalid = reason;
	}
	if (*invalid == NULL && s->rx_distinct > tx) {
		snprintf(reason, reason_len, "port %u received %" PRIu64 " frames but %" PRIu64
			 " were sent", s->rx_port, s->rx_distinct, tx);
		*invalid = reason;
	}
	return d;
}

static void
run_trial(struct tg_app *app, json_t *cmd, json_t *id)
{
	struct tg_stream streams[TG_MAX_STREAMS];
	struct tg_trial_cfg cfg;
	char err[TG_ERR_MAX], reason[TG_ERR_MAX];
	const char *invalid = NULL;
	unsigned int nb_streams = 0, i;
	uint64_t warmup_tx = 0;
	json_t *obj, *res, *dirs, *foreign;
	int ret;

	ret = parse_trial(app, cmd, &cfg, err);
	if (ret < 0) {
		reply_error(id, err);
		return;
	}
	TG_LOG(INFO, "Trial: %u B%s, %.0f pps per direction, %.3f s, %u flow(s), %s%s\n",
	       cfg.nb_mix ? cfg.mix_size[0] : cfg.frame_size, cfg.nb_mix ? " (first of a mix)" : "",
	       cfg.rate_pps, cfg.duration_s, cfg.flows,
	       cfg.bidirectional ? "bidirectional" : "unidirectional",
	       cfg.tunnel.type == TG_TUNNEL_NONE ? "" :
	       cfg.tunnel.type == TG_TUNNEL_VXLAN ? ", VXLAN-encapsulated" :
	       ", Geneve-encapsulated");
	ret = tg_trial_run(app, &cfg, err, sizeof(err), streams, &nb_streams, &warmup_tx);
	if (ret < 0) {
		tg_trial_free(streams, nb_streams);
		reply_error(id, err);
		return;
	}
	dirs = json_array();
	for (i = 0; i < nb_streams; i++)
		json_array_append_new(dirs, direction_json(app, &cfg, &streams[i], &invalid, reason,
							   sizeof(reason)));
	tg_trial_free(streams, nb_streams);
	foreign = json_array();
	for (i = 0; i < app->nb_ports; i++)
		json_array_append_new(foreign, json_integer((json_int_t)app->ports[i].rx_foreign));

	res = json_object();
	if (cfg.nb_mix > 0) {
		json_t *mix = json_array();

		for (i = 0; i < cfg.nb_mix; i++)
			json_array_append_new(mix, json_pack("[II]", (json_int_t)cfg.mix_size[i],
							     (json_int_t)cfg.mix_weight[i]));
		json_object_set_new(res, "frame_size_bytes", json_null());
		json_object_set_new(res, "frame_mix", mix);
	} else {
		json_object_set_new(res, "frame_size_bytes", json_integer(cfg.frame_size));
	}
	json_object_set_new(res, "rate_pps", json_real(cfg.rate_pps));
	json_object_set_new(res, "duration_s", json_real(cfg.duration_s));
	json_object_set_new(res, "flows", json_integer(cfg.flows));
	json_object_set_new(res, "valid", json_boolean(invalid == NULL));
	json_object_set_new(res, "invalid_reason", invalid ? json_string(invalid) : json_null());
	json_object_set_new(res, "warmup_tx_packets", json_integer((json_int_t)warmup_tx));
	json_object_set_new(res, "rx_foreign_packets", foreign);
	json_object_set_new(res, "directions", dirs);
	obj = json_object();
	json_object_set_new(obj, "ok", json_true());
	json_object_set_new(obj, "result", res);
	reply(obj, id);
}

/* Handle one command line; return 1 when the generator should quit. */
static int
handle_line(struct tg_app *app, const char *line)
{
	static const char *const simple_fields[] = { "cmd", "id", NULL };
	static const char *const wait_fields[] = { "cmd", "id", "timeout_s", NULL };
	char err[TG_ERR_MAX];
	json_error_t jerr;
	json_t *cmd, *id, *name;
	const char *c;
	int quit = 0;

	cmd = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
	if (cmd == NULL) {
		snprintf(err, sizeof(err), "Malformed JSON at column %d: %s.", jerr.column,
			 jerr.text);
		reply_error(NULL, err);
		return 0;
	}
	if (!json_is_object(cmd)) {
		reply_error(NULL, "A command must be a JSON object such as {\"cmd\": \"ports\"}.");
		json_decref(cmd);
		return 0;
	}
	id = json_object_get(cmd, "id");
	name = json_object_get(cmd, "cmd");
	if (!json_is_string(name)) {
		reply_error(id, "Field 'cmd' (a string) is required.");
		json_decref(cmd);
		return 0;
	}
	c = json_string_value(name);
	if (strcmp(c, "trial") == 0) {
		run_trial(app, cmd, id);
	} else if (strcmp(c, "wait_link") == 0) {
		double timeout_s;

		if (check_fields(cmd, wait_fields, err) < 0 ||
		    get_number(cmd, "timeout_s", false, 10, 0, 3600, &timeout_s, err) < 0 ||
		    tg_link_wait(app, timeout_s, err, sizeof(err)) < 0)
			reply_error(id, err);
		else
			reply_ports(app, id);
	} else if (strcmp(c, "ports") == 0 || strcmp(c, "stats") == 0 ||
		   strcmp(c, "quit") == 0) {
		if (check_fields(cmd, simple_fields, err) < 0) {
			reply_error(id, err);
		} else if (c[0] == 'p') {
			reply_ports(app, id);
		} else if (c[0] == 's') {
			reply_stats(app, id);
		} else {
			json_t *obj = json_object();

			json_object_set_new(obj, "ok", json_true());
			json_object_set_new(obj, "event", json_string("bye"));
			reply(obj, id);
			quit = 1;
		}
	} else {
		snprintf(err, sizeof(err), "Unknown command '%.64s'; expected one of 'ports', "
			 "'wait_link', 'stats', 'trial', 'quit'.", c);
		reply_error(id, err);
	}
	json_decref(cmd);
	return quit;
}

/* Serve commands until 'quit', end of input or a signal. Return 0, or -errno on a read error. */
int
tg_protocol_loop(struct tg_app *app)
{
	static char buf[TG_LINE_MAX + 1];
	size_t len = 0;
	bool overlong = false;

	for (;;) {
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		char *nl;
		ssize_t n;
		int ret;

		if (force_quit)
			return 0;
		ret = poll(&pfd, 1, TG_POLL_MS);
		if (ret < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (ret == 0)
			continue;
		n = read(STDIN_FILENO, buf + len, TG_LINE_MAX - len);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (n == 0) {
			TG_LOG(INFO, "End of input: quitting.\n");
			return 0;
		}
		len += (size_t)n;
		buf[len] = '\0';
		while ((nl = memchr(buf, '\n', len)) != NULL) {
			size_t used = (size_t)(nl - buf) + 1;

			*nl = '\0';
			if (overlong) {
				reply_error(NULL, "Command line longer than 65536 bytes.");
				overlong = false;
			} else if (strspn(buf, " \t\r") != used - 1 && handle_line(app, buf)) {
				return 0;
			}
			memmove(buf, buf + used, len - used);
			len -= used;
			buf[len] = '\0';
			if (force_quit)
				return 0;
		}
		if (len == TG_LINE_MAX) {
			overlong = true;
			len = 0;
		}
	}
}
