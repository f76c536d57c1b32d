package memberlist

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	ml "github.com/hashicorp/memberlist"
)

// Config configures a node of the ring. The zero value plus a NodeName runs a
// node on 127.0.0.1 with a free port and memberlist's LAN timings.
type Config struct {
	// NodeName is this node's name on the ring; it must be unique in the
	// cluster and stable across restarts (a pod name, say). Required.
	NodeName string
	// BindAddr is the address gossip listens on (default "127.0.0.1"; use
	// "0.0.0.0" in a cluster).
	BindAddr string
	// BindPort is the TCP and UDP gossip port; 0 picks a free one.
	BindPort int
	// AdvertiseAddr is the address other nodes use to reach this one;
	// empty lets memberlist choose from BindAddr.
	AdvertiseAddr string
	// Seeds are host:port addresses of nodes to join. Empty starts a new
	// cluster.
	Seeds []string
	// ProbeInterval is how often a random member is probed for failure
	// detection (default memberlist's LAN value, 1s). A crashed node is
	// noticed after a few intervals; tests use 200ms.
	ProbeInterval time.Duration
	// VirtualNodes is the number of points per node on the hash ring
	// (default ring.DefaultVirtualNodes, 128).
	VirtualNodes int
	// Meta is carried to the other members, for example {"http":
	// "10.0.0.5:8080"}; JSON-encoded it must fit memberlist's 512 bytes.
	Meta map[string]string
	// LeaveTimeout bounds how long Close waits for the leave message to go
	// out (default 2s).
	LeaveTimeout time.Duration
	// Owns says which members own keys on the hash ring; nil means every
	// member does. The cluster puts only pusher nodes on the ring, while
	// fan-out nodes join to see it.
	Owns func(Member) bool
}

// Errors returned by Validate.
var (
	ErrNoNodeName  = errors.New("memberlist: node name is required")
	ErrMetaTooLong = fmt.Errorf("memberlist: meta longer than %d bytes", ml.MetaMaxSize)
)

const defaultLeaveTimeout = 2 * time.Second

// Validate reports the first invalid field.
func (c Config) Validate() error {
	if c.NodeName == "" {
		return ErrNoNodeName
	}
	if c.BindPort < 0 || c.BindPort > 65535 {
		return fmt.Errorf("memberlist: bind port %d out of range", c.BindPort)
	}
	if c.ProbeInterval < 0 {
		return fmt.Errorf("memberlist: negative probe interval %s", c.ProbeInterval)
	}
	if c.VirtualNodes < 0 {
		return fmt.Errorf("memberlist: negative virtual nodes %d", c.VirtualNodes)
	}
	if c.LeaveTimeout < 0 {
		return fmt.Errorf("memberlist: negative leave timeout %s", c.LeaveTimeout)
	}
	for _, s := range c.Seeds {
		if s == "" {
			return errors.New("memberlist: empty seed address")
		}
	}
	meta, err := encodeMeta(c.Meta)
	if err != nil {
		return err
	}
	if len(meta) > ml.MetaMaxSize {
		return fmt.Errorf("%w: %d", ErrMetaTooLong, len(meta))
	}
	return nil
}

// memberlistConfig maps c onto memberlist's LAN defaults. A shorter probe
// interval scales the probe timeout and gossip interval with it, so a crashed
// node is declared dead after a few intervals.
func (c Config) memberlistConfig() *ml.Config {
	mc := ml.DefaultLANConfig()
	mc.Name = c.NodeName
	mc.BindAddr = c.BindAddr
	if mc.BindAddr == "" {
		mc.BindAddr = "127.0.0.1"
	}
	mc.BindPort = c.BindPort
	mc.AdvertisePort = c.BindPort
	mc.AdvertiseAddr = c.AdvertiseAddr
	if c.ProbeInterval > 0 && c.ProbeInterval != mc.ProbeInterval {
		mc.ProbeInterval = c.ProbeInterval
		mc.ProbeTimeout = min(mc.ProbeTimeout, c.ProbeInterval/2)
		mc.GossipInterval = min(mc.GossipInterval, c.ProbeInterval/2)
		mc.TCPTimeout = min(mc.TCPTimeout, 10*c.ProbeInterval)
	}
	// A restarted node may come back under its name on a new address; let
	// it reclaim the name once the old one has been dead a while (memberlist
	// never allows it by default).
	mc.DeadNodeReclaimTime = 10 * mc.ProbeInterval
	return mc
}

func encodeMeta(m map[string]string) ([]byte, error) {
	if len(m) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encoding meta: %w", err)
	}
	return b, nil
}

func decodeMeta(b []byte) map[string]string {
	if len(b) == 0 {
		return nil
	}
	var m map[string]string
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}
