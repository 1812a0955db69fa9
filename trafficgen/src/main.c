/* SPDX-License-Identifier: Apache-2.0
 * ovsperf-trafficgen: a paced, counting DPDK traffic generator driven over stdin/stdout.
 *
 * Usage: ovsperf-trafficgen [EAL options] -- [--jumbo] [--mbufs N] [--rxd N] [--txd N]
 * Protocol and result format: docs/trafficgen.md.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "trafficgen.h"

#define EXIT_USAGE 2
#define DEFAULT_MBUFS 8191
#define DEFAULT_RING_SIZE 1024
#define MBUF_CACHE_SIZE 256
#define JUMBO_DATA_ROOM (RTE_PKTMBUF_HEADROOM + 9216)

volatile sig_atomic_t force_quit;

static struct tg_app app;
static unsigned int nb_mbufs = DEFAULT_MBUFS;
static uint16_t nb_rxd = DEFAULT_RING_SIZE;
static uint16_t nb_txd = DEFAULT_RING_SIZE;

static void
signal_handler(int signum)
{
	(void)signum;
	force_quit = 1;
}

static void
usage(const char *prog)
{
	fprintf(stderr,
		"Usage: %s [EAL options] --\n"
		"         [--jumbo] [--queues N] [--mbufs N] [--rxd N] [--txd N]\n"
		"  --jumbo    allow frames up to %d B (port MTU raised)\n"
		"  --queues N RX and TX queues per port, 1 to %d (default 1); flow f is sent\n"
		"             on TX queue f %% N, all RX queues are polled\n"
		"  --mbufs N  mbufs per socket pool (default %d, more when the rings need it)\n"
		"  --rxd N    RX ring size (default %d)\n"
		"  --txd N    TX ring size (default %d)\n"
		"Reads one JSON command per line on stdin, see docs/trafficgen.md.\n"
		"Exit codes: 0 ok, 1 runtime failure, 2 usage error.\n",
		prog, TG_JUMBO_FRAME_LEN, TG_MAX_QUEUES, DEFAULT_MBUFS, DEFAULT_RING_SIZE,
		DEFAULT_RING_SIZE);
}

static int
parse_uint(const char *arg, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end = NULL;

	errno = 0;
	*out = strtoul(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || *out < lo || *out > hi)
		return -EINVAL;
	return 0;
}

static int
parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "jumbo", no_argument, NULL, 'j' },
		{ "mbufs", required_argument, NULL, 'm' },
		{ "rxd", required_argument, NULL, 'r' },
		{ "txd", required_argument, NULL, 't' },
		{ "queues", required_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			app.jumbo = true;
			break;
		case 'm':
			if (parse_uint(optarg, 1023, 1u << 24, &v) < 0)
				return -EINVAL;
			nb_mbufs = (unsigned int)v;
			break;
		case 'q':
			if (parse_uint(optarg, 1, TG_MAX_QUEUES, &v) < 0)
				return -EINVAL;
			app.nb_queues = (uint16_t)v;
			break;
		case 'r':
		case 't':
			if (parse_uint(optarg, 64, 32768, &v) < 0)
				return -EINVAL;
			if (opt == 'r')
				nb_rxd = (uint16_t)v;
			else
				nb_txd = (uint16_t)v;
			break;
		default:
			return -EINVAL;
		}
	}
	if (optind != argc)
		return -EINVAL;
	return 0;
}

/* Configure one RX and one TX queue on a port and start it; return 0 or a negative errno. */
static int
port_init(struct tg_port *p)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	struct rte_eth_txconf txconf;
	uint16_t rxd = nb_rxd, txd = nb_txd, q;
	int socket = rte_eth_dev_socket_id(p->port_id);
	int ret;

	memset(&conf, 0, sizeof(conf));
	ret = rte_eth_dev_info_get(p->port_id, &info);
	if (ret != 0)
		return ret;
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
	if (app.nb_queues > info.max_rx_queues || app.nb_queues > info.max_tx_queues) {
		TG_LOG(ERR, "Port %u has at most %u RX and %u TX queues, %u asked for\n",
		       p->port_id, info.max_rx_queues, info.max_tx_queues, app.nb_queues);
		return -EINVAL;
	}
	if (app.nb_queues > 1) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf = RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP;
		conf.rx_adv_conf.rss_conf.rss_hf &= info.flow_type_rss_offloads;
		if (conf.rx_adv_conf.rss_conf.rss_hf == 0)
			conf.rxmode.mq_mode = RTE_ETH_MQ_RX_NONE;
	}
	ret = rte_eth_dev_configure(p->port_id, app.nb_queues, app.nb_queues, &conf);
	if (ret != 0)
		return ret;
	ret = rte_eth_dev_adjust_nb_rx_tx_desc(p->port_id, &rxd, &txd);
	if (ret != 0)
		return ret;
	if (app.jumbo) {
		ret = rte_eth_dev_set_mtu(p->port_id, TG_JUMBO_FRAME_LEN - RTE_ETHER_HDR_LEN -
					  RTE_ETHER_CRC_LEN);
		/* Drivers without an MTU (net_ring) carry any frame the mbuf holds. */
		if (ret == -ENOTSUP)
			TG_LOG(WARNING, "Port %u cannot set an MTU; sending jumbo frames anyway\n",
			       p->port_id);
		else if (ret != 0)
			return ret;
	}
	txconf = info.default_txconf;
	txconf.offloads = conf.txmode.offloads;
	for (q = 0; q < app.nb_queues; q++) {
		ret = rte_eth_rx_queue_setup(p->port_id, q, rxd,
					     socket < 0 ? 0 : (unsigned int)socket, NULL, p->pool);
		if (ret < 0)
			return ret;
		ret = rte_eth_tx_queue_setup(p->port_id, q, txd,
					     socket < 0 ? 0 : (unsigned int)socket, &txconf);
		if (ret < 0)
			return ret;
	}
	ret = rte_eth_dev_start(p->port_id);
	if (ret < 0)
		return ret;
	ret = rte_eth_promiscuous_enable(p->port_id);
	if (ret != 0 && ret != -ENOTSUP)
		TG_LOG(WARNING, "Port %u: cannot enable promiscuous mode: %s\n", p->port_id,
		       rte_strerror(-ret));
	return rte_eth_macaddr_get(p->port_id, &p->mac);
}

static struct rte_mempool *
pool_for_socket(int socket)
{
	static struct rte_mempool *pools[RTE_MAX_NUMA_NODES];
	char name[RTE_MEMPOOL_NAMESIZE];
	unsigned int s = socket < 0 ? 0 : (unsigned int)socket;
	unsigned int need;

	if (s >= RTE_MAX_NUMA_NODES)
		s = 0;
	if (pools[s] == NULL) {
		snprintf(name, sizeof(name), "tg_pool_%u", s);
		/* Every ring of every port full, and some frames in flight. */
		need = app.nb_ports * app.nb_queues * (nb_rxd + nb_txd) + 4096u;
		pools[s] = rte_pktmbuf_pool_create(name, RTE_MAX(nb_mbufs, need), MBUF_CACHE_SIZE,
						   0, app.jumbo ? JUMBO_DATA_ROOM :
						   RTE_MBUF_DEFAULT_BUF_SIZE, (int)s);
	}
	return pools[s];
}

int
main(int argc, char **argv)
{
	uint16_t port_id;
	unsigned int i, nb_started = 0;
	int ret, exit_code = EXIT_SUCCESS;

	/* 1. EAL (a virtio_user server port blocks here until its peer connects). */
	ret = rte_eal_init(argc, argv);
	if (ret < 0)
		rte_exit(EXIT_FAILURE, "Cannot initialise EAL: %s\n", rte_strerror(rte_errno));
	argc -= ret;
	argv += ret;
	signal(SIGINT, signal_handler);
	signal(SIGTERM, signal_handler);
	signal(SIGPIPE, SIG_IGN);

	/* 2. Application options. */
	app.nb_queues = 1;
	if (parse_args(argc, argv) < 0) {
		usage("ovsperf-trafficgen");
		rte_eal_cleanup();
		return EXIT_USAGE;
	}

	/* 3. Ports. */
	app.nb_ports = 0;
	RTE_ETH_FOREACH_DEV(port_id) {
		if (app.nb_ports == TG_MAX_PORTS) {
			rte_eal_cleanup();
			fprintf(stderr, "ovsperf-trafficgen: more than %d ports; "
				"give one or two.\n", TG_MAX_PORTS);
			return EXIT_USAGE;
		}
		app.ports[app.nb_ports++].port_id = port_id;
	}
	if (app.nb_ports == 0) {
		rte_eal_cleanup();
		fprintf(stderr, "ovsperf-trafficgen: no DPDK port; give --vdev or -a options.\n");
		return EXIT_USAGE;
	}
	app.tsc_hz = rte_get_tsc_hz();

	/* 4. One mbuf pool per socket. */
	for (i = 0; i < app.nb_ports; i++) {
		app.ports[i].pool = pool_for_socket(rte_eth_dev_socket_id(app.ports[i].port_id));
		if (app.ports[i].pool == NULL)
			rte_exit(EXIT_FAILURE, "Cannot create the mbuf pool for port %u: %s\n",
				 app.ports[i].port_id, rte_strerror(rte_errno));
	}

	/* 5. Start the ports. */
	for (i = 0; i < app.nb_ports; i++) {
		ret = port_init(&app.ports[i]);
		if (ret < 0) {
			TG_LOG(ERR, "Cannot start port %u: %s\n", app.ports[i].port_id,
			       rte_strerror(-ret));
			exit_code = EXIT_FAILURE;
			break;
		}
		nb_started++;
	}

	/* 6-7. Links are awaited per trial ('wait_link', 'link_timeout_s'): with vhost-user the
	 * peer often connects after we start. Trials run on the lcores from the protocol loop. */
	if (exit_code == EXIT_SUCCESS) {
		TG_LOG(INFO, "%u port(s) started, %u lcore(s), TSC %" PRIu64 " Hz\n", app.nb_ports,
		       rte_lcore_count(), app.tsc_hz);
		tg_print_ready(&app);
		ret = tg_protocol_loop(&app);
		if (ret < 0) {
			TG_LOG(ERR, "Cannot read commands: %s\n", strerror(-ret));
			exit_code = EXIT_FAILURE;
		}
		if (force_quit)
			TG_LOG(INFO, "Signal received: quitting.\n");
	}

	/* 8. Stop and close the ports; keep the first failure. */
	for (i = 0; i < app.nb_ports; i++) {
		if (i < nb_started) {
			ret = rte_eth_dev_stop(app.ports[i].port_id);
			if (ret != 0) {
				TG_LOG(ERR, "Cannot stop port %u: %s\n", app.ports[i].port_id,
				       rte_strerror(-ret));
				if (exit_code == EXIT_SUCCESS)
					exit_code = EXIT_FAILURE;
			}
		}
		rte_eth_dev_close(app.ports[i].port_id);
	}

	/* 9. Results were printed per trial. 10. Release hugepages. */
	ret = rte_eal_cleanup();
	if (ret != 0 && exit_code == EXIT_SUCCESS)
		exit_code = EXIT_FAILURE;
	return exit_code;
}
