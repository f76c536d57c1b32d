package server

import (
	"context"
	"os"
	"sync"
	"syscall"

	"github.com/relaybell/relaybell/api"
	"github.com/relaybell/relaybell/store"
)

// FailpointEnv names the environment variable that arms a failpoint: a
// fault the fault tests need at an exact moment that no outside signal can
// hit. Unset in production. They are:
//
//	kill-before-publish  an api node kills itself with SIGKILL after it
//	                     committed a send and before its intent is produced
//	kill-in-feed-poll    a node polling a feed kills itself with SIGKILL
//	                     before the send transaction of the third item it
//	                     sends of one feed (two sent, the rest pending)
const FailpointEnv = "RELAYBELL_FAILPOINT"

// dispatcher is the API's dispatcher: the outbox, or the armed failpoint.
func (s *Server) dispatcher() api.Dispatcher {
	if os.Getenv(FailpointEnv) == "kill-before-publish" {
		s.logger.Warn("failpoint armed: this node dies after committing its first send", "failpoint", "kill-before-publish")
		return killBeforePublish{}
	}
	return s.outbox
}

type killBeforePublish struct{}

func (killBeforePublish) Dispatch(context.Context, store.Notification) error {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}

// feedFailpoint is the feeds' poller's BeforeSend: nil, or the armed
// kill-in-feed-poll failpoint.
func (s *Server) feedFailpoint() func(feedID, key string) {
	if os.Getenv(FailpointEnv) != "kill-in-feed-poll" {
		return nil
	}
	s.logger.Warn("failpoint armed: this node dies before sending the third item of a feed poll", "failpoint", "kill-in-feed-poll")
	var mu sync.Mutex
	seen := map[string]int{}
	return func(feedID, key string) {
		mu.Lock()
		seen[feedID]++
		n := seen[feedID]
		mu.Unlock()
		if n == 3 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
}
