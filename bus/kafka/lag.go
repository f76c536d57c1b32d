package kafka

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// lagTimeout bounds the reads of one scrape of the lag collector: a broker
// that does not answer leaves the series out rather than holding the scrape.
const lagTimeout = 3 * time.Second

var lagDesc = prometheus.NewDesc("relaybell_bus_consumer_lag",
	"Records of a bus topic not yet committed by a consumer group (end offsets minus committed offsets, summed over partitions), read from the brokers at scrape time for the groups this node consumes in. Every member reports its group's whole lag: aggregate with max, not sum.",
	[]string{"topic", "group"}, nil)

// LagCollector returns a collector of the consumer lag of the groups this
// bus has joined (Consume, ConsumeBatches), read from the brokers when
// scraped. A node that consumes nothing exports no series.
func (b *Bus) LagCollector() prometheus.Collector { return lagCollector{b} }

type lagCollector struct{ b *Bus }

func (c lagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- lagDesc }

func (c lagCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.b
	b.mu.Lock()
	groups := make([]string, 0, len(b.groups))
	for g := range b.groups {
		groups = append(groups, g)
	}
	b.mu.Unlock()
	if len(groups) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lagTimeout)
	defer cancel()
	lags, err := kadm.NewClient(b.prod).Lag(ctx, groups...)
	if err != nil {
		b.logger.Warn("kafka bus: reading consumer lag", "err", err)
		return
	}
	lags.Each(func(l kadm.DescribedGroupLag) {
		if errors.Is(l.Error(), kerr.GroupIDNotFound) {
			return // joined, not yet known to the coordinator
		}
		if l.Error() != nil {
			b.logger.Warn("kafka bus: reading consumer lag", "group", l.Group, "err", l.Error())
			return
		}
		group := strings.TrimPrefix(l.Group, b.cfg.TopicPrefix)
		for _, t := range l.Lag.TotalByTopic() {
			if !strings.HasPrefix(t.Topic, b.cfg.TopicPrefix) {
				continue
			}
			ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(t.Lag), strings.TrimPrefix(t.Topic, b.cfg.TopicPrefix), group)
		}
	})
}
