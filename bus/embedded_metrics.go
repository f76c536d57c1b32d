package bus

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const pendingHelp = "Messages of the embedded bus not yet acknowledged, by topic (those being handled included), counted at scrape time. The embedded default's backlog; a cluster's is relaybell_bus_consumer_lag."

var pendingDesc = prometheus.NewDesc("relaybell_bus_pending_messages", pendingHelp, []string{"topic"}, nil)

// pendingTimeout bounds the count of one scrape.
const pendingTimeout = 2 * time.Second

// PendingCollector returns a collector of the messages waiting in the bus,
// by topic: every bus topic is reported, at zero when none waits.
func (e *Embedded) PendingCollector() prometheus.Collector { return pendingCollector{e} }

type pendingCollector struct{ e *Embedded }

func (c pendingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- pendingDesc }

func (c pendingCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), pendingTimeout)
	defer cancel()
	counts := map[string]int64{Intents: 0, Shards: 0}
	rows, err := c.e.db.QueryContext(ctx, `SELECT topic, COUNT(*) FROM messages GROUP BY topic`)
	if err != nil {
		c.e.logger.Warn("embedded bus: counting pending messages", "err", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var topic string
		var n int64
		if err := rows.Scan(&topic, &n); err != nil {
			c.e.logger.Warn("embedded bus: counting pending messages", "err", err)
			return
		}
		counts[topic] = n
	}
	if err := rows.Err(); err != nil {
		c.e.logger.Warn("embedded bus: counting pending messages", "err", err)
		return
	}
	for topic, n := range counts {
		ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(n), topic)
	}
}
